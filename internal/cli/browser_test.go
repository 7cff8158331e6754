package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/rigorbench/rigor/internal/results"
	"github.com/rigorbench/rigor/internal/rig"
)

// chromium finds the browser as internal/report's browser test does:
// $RIGOR_CHROMIUM, else Debian's chromium; a missing browser fails in CI
// (.ci/run installs it) and skips elsewhere.
func chromium(t *testing.T) string {
	t.Helper()
	for _, p := range []string{os.Getenv("RIGOR_CHROMIUM"), "/usr/bin/chromium", "chromium", "chromium-browser"} {
		if p == "" {
			continue
		}
		if path, err := exec.LookPath(p); err == nil {
			return path
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium is not installed: CI must open the report in a real browser (.ci/run installs Debian's chromium)")
	}
	t.Skip("chromium is not installed (apt-get install chromium, or set RIGOR_CHROMIUM); skipping the browser test outside CI")
	return ""
}

// pageTable is a table as the browser shows it.
type pageTable struct {
	Metric string     `json:"metric"`
	Head   []string   `json:"head"`
	Rows   [][]string `json:"rows"`
}

// pageJS reads every table of a page with its caption's metric key, the
// untested line and the notes, as the browser renders them (innerText).
const pageJS = `(() => ({
  tables: [...document.querySelectorAll('table')].map(t => ({
    metric: ((t.querySelector('caption .mono') || {}).textContent || ''),
    head: [...t.querySelectorAll('thead th')].map(th => th.innerText.trim()),
    rows: [...t.querySelectorAll('tbody tr')].map(tr => [...tr.querySelectorAll('td')].map(td => td.innerText.trim())),
  })),
  untested: ((document.querySelector('p.untested') || {}).innerText || ''),
  notes: [...document.querySelectorAll('ul.notes li')].map(li => li.innerText.trim()),
}))()`

type pageData struct {
	Tables   []pageTable `json:"tables"`
	Untested string      `json:"untested"`
	Notes    []string    `json:"notes"`
}

// shownNumber reads the first number a cell shows ("1,234.5 ± 2.0%",
// "+8.12%", "<0.001", "0.045") and half a unit of its last digit, the
// most its rounding can be off.
var numberRE = regexp.MustCompile(`[-+]?[0-9][0-9,]*(\.[0-9]+)?`)

func shownNumber(s string) (v, tol float64, ok bool) {
	m := numberRE.FindString(s)
	if m == "" {
		return 0, 0, false
	}
	m = strings.ReplaceAll(m, ",", "")
	v, err := strconv.ParseFloat(m, 64)
	if err != nil {
		return 0, 0, false
	}
	tol = 0.5
	if i := strings.IndexByte(m, '.'); i >= 0 {
		tol = 0.5 * math.Pow(10, -float64(len(m)-i-1))
	}
	return v, tol, true
}

// near says whether the page's cell shows x, to its rounding. A p-value
// shown "<0.001" holds any x below 0.001.
func near(cell string, x float64) bool {
	if strings.HasPrefix(cell, "<") {
		v, _, ok := shownNumber(cell)
		return ok && x < v
	}
	v, tol, ok := shownNumber(cell)
	return ok && math.Abs(v-x) <= tol*1.0001
}

// TestBrowser_reportMatchesCLI: the report's pages, opened in headless
// Chromium, show the numbers, verdicts and caveats `rigor diff --format
// json` and `rigor log --json` give for the same records (issue 25: one
// comparison everywhere). The records: five invocations of one run each of
// lab/a, the last 8% faster, so the report's "latest against previous"
// is the diff of the last two runs, tested against the history of the
// earlier invocations; the CLI diff of the same two run ids must agree.
func TestBrowser_reportMatchesCLI(t *testing.T) {
	bin := chromium(t)
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "cue.mod"), 0o755)
	os.WriteFile(filepath.Join(dir, "cue.mod", "module.cue"), []byte("module: \"example.com/b@v0\"\nlanguage: version: \"v0.17.0\"\n"), 0o644)
	store := results.Open(dir)
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	var ids []string
	for i, f := range []float64{1.000, 1.006, 0.995, 1.003, 1.08} {
		start := t0.Add(time.Duration(i) * time.Hour)
		id := start.Format("20060102T150405Z") + fmt.Sprintf("-%04x", i)
		spec, _ := json.Marshal(map[string]any{"flags": map[string]any{"ngl": 99}, "bench": map[string]any{"r": 5}})
		r := &results.Run{Schema: 1, ID: id, Experiment: "lab/a", Point: "lab/a", Spec: spec, Invocation: id, Round: 1, Rounds: 1,
			Engine: results.Engine{Family: "llama.cpp", Commit: fmt.Sprintf("%040x", 1)},
			Model:  results.Model{Quant: "Q4_K_M", Files: []results.File{{Path: "m.gguf", SHA256: fmt.Sprintf("%064x", 7)}}},
			Rig:    &rig.Rig{Hostname: "box", HostProcessorModelName: "Test CPU", HostProcessorCoreCount: 8},
			Start:  start, End: start.Add(2 * time.Minute), Status: results.StatusOK,
			Metrics: []results.Metric{
				{Name: "tokSOut", Test: "tg128", Unit: "tok/s", Direction: "higher", Samples: []float64{41.2 * f, 41.5 * f, 40.9 * f, 41.3 * f, 41.1 * f}},
				{Name: "tokSPrompt", Test: "pp512", Unit: "tok/s", Direction: "higher", Samples: []float64{1210 * f, 1195 * f, 1204 * f, 1199 * f, 1207 * f}},
			}}
		data, err := results.Encode(r)
		if err != nil {
			t.Fatal(err)
		}
		path := store.RecordPath(r.Experiment, r.ID)
		os.MkdirAll(filepath.Dir(path), 0o755)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	cli := func(args ...string) string {
		t.Helper()
		stdout, stderr, code := runCLI(t, append([]string{"-C", dir}, args...)...)
		if code != 0 {
			t.Fatalf("rigor %s: exit %d\n%s%s", strings.Join(args, " "), code, stdout, stderr)
		}
		return stdout
	}
	var diff struct {
		Tables []struct {
			Metric string `json:"metric"`
			Rows   []struct {
				A, B struct {
					N      int     `json:"n"`
					Center float64 `json:"center"`
				}
				Delta     float64  `json:"deltaPercent"`
				P         *float64 `json:"p"`
				PAdjusted *float64 `json:"pAdjusted"`
				WelchP    *float64 `json:"welchP"`
				Verdict   string   `json:"verdict"`
				DecidedBy string   `json:"decidedBy"`
			} `json:"rows"`
		} `json:"tables"`
		Notes    []string `json:"notes"`
		Untested string   `json:"untested"`
	}
	if err := json.Unmarshal([]byte(cli("diff", ids[3], ids[4], "--format", "json")), &diff); err != nil {
		t.Fatal(err)
	}
	var log struct {
		Runs []struct {
			ID      string `json:"id"`
			Metrics []struct {
				Key  string   `json:"key"`
				Mean *float64 `json:"mean"`
				N    int      `json:"n"`
			} `json:"metrics"`
		} `json:"runs"`
	}
	if err := json.Unmarshal([]byte(cli("log", "lab/a", "--json")), &log); err != nil {
		t.Fatal(err)
	}
	site := filepath.Join(dir, "site")
	cli("report", "-o", site)

	opts := append(chromedp.DefaultExecAllocatorOptions[:0:0],
		chromedp.ExecPath(bin), chromedp.Flag("headless", true), chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true), chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 900))
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelA()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting %s: %v", bin, err)
	}
	open := func(page string) pageData {
		t.Helper()
		tctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		url := "file://" + filepath.ToSlash(filepath.Join(site, filepath.FromSlash(page)))
		if err := chromedp.Do(tctx, chromedp.Navigate(url), chromedp.WaitReady(chromedp.CSS("footer"))); err != nil {
			t.Fatalf("opening %s: %v", page, err)
		}
		d, err := chromedp.Run(tctx, chromedp.Evaluate[pageData](pageJS))
		if err != nil {
			t.Fatal(err)
		}
		return d
	}

	// The diff page against `rigor diff --format json` of the same runs.
	page := open("diffs/lab/a.html")
	verdicts := 0
	for _, tb := range diff.Tables {
		var pt *pageTable
		for i := range page.Tables {
			if page.Tables[i].Metric == tb.Metric {
				pt = &page.Tables[i]
			}
		}
		if pt == nil {
			t.Errorf("%s: no table on the page", tb.Metric)
			continue
		}
		col := map[string]int{}
		for i, h := range pt.Head {
			col[h] = i
		}
		if len(pt.Rows) != len(tb.Rows) {
			t.Errorf("%s: %d rows on the page, %d in the CLI's", tb.Metric, len(pt.Rows), len(tb.Rows))
			continue
		}
		for i, r := range tb.Rows {
			cells := pt.Rows[i]
			cell := func(h string) string {
				j, ok := col[h]
				if !ok || j >= len(cells) {
					t.Errorf("%s: the page has no column %q (%q)", tb.Metric, h, pt.Head)
					return ""
				}
				return cells[j]
			}
			verdict := cell("verdict")
			if verdict == "~" {
				verdict = "inconclusive"
			}
			if verdict != r.Verdict {
				t.Errorf("%s: the page says %q, the CLI %q", tb.Metric, cell("verdict"), r.Verdict)
			}
			if r.DecidedBy != "" {
				verdicts++
			}
			t.Logf("%s: %s (%s), delta %q, p %q; the page: A %q, B %q", tb.Metric, r.Verdict, r.DecidedBy, cell("delta"), cell("p"), cell("A"), cell("B"))
			checks := []struct {
				head string
				x    *float64
			}{{"delta", &r.Delta}, {"p", r.P}, {"welch p", r.WelchP}}
			if _, ok := col["p (Holm)"]; ok {
				checks = append(checks, struct {
					head string
					x    *float64
				}{"p (Holm)", r.PAdjusted})
			}
			a, b := cell("A"), cell("B")
			if !near(a, r.A.Center) || !near(b, r.B.Center) {
				t.Errorf("%s: the page shows A %q B %q, the CLI %g and %g", tb.Metric, a, b, r.A.Center, r.B.Center)
			}
			for _, c := range checks {
				got := cell(c.head)
				if c.x == nil {
					if got != "" && got != "–" && got != "-" {
						t.Errorf("%s %s: the page shows %q where the CLI has none", tb.Metric, c.head, got)
					}
					continue
				}
				if !near(got, *c.x) {
					t.Errorf("%s %s: the page shows %q, the CLI %g", tb.Metric, c.head, got, *c.x)
				}
			}
		}
	}
	if len(diff.Tables) < 2 || verdicts == 0 {
		t.Errorf("the CLI's diff has %d tables and %d tested rows: the records must give the pair a tested verdict", len(diff.Tables), verdicts)
	}
	if page.Untested != diff.Untested {
		t.Errorf("untested line: the page %q, the CLI %q", page.Untested, diff.Untested)
	}
	if strings.Join(page.Notes, "\n") != strings.Join(diff.Notes, "\n") {
		t.Errorf("notes: the page\n%s\nthe CLI\n%s", strings.Join(page.Notes, "\n"), strings.Join(diff.Notes, "\n"))
	}

	// The experiment page's runs against `rigor log --json`.
	exp := open("experiments/lab/a.html")
	var runs *pageTable
	for i := range exp.Tables {
		if len(exp.Tables[i].Head) > 1 && exp.Tables[i].Head[1] == "run" {
			runs = &exp.Tables[i]
		}
	}
	if runs == nil {
		t.Fatalf("the experiment page has no table of runs: %+v", exp.Tables)
	}
	byID := map[string][]string{}
	for _, r := range runs.Rows {
		if len(r) > 1 {
			byID[r[1]] = r
		}
	}
	if len(byID) != len(log.Runs) {
		t.Errorf("%d runs on the page, %d in rigor log --json", len(byID), len(log.Runs))
	}
	for _, lr := range log.Runs {
		row, ok := byID[lr.ID]
		if !ok {
			t.Errorf("run %s: not on the page", lr.ID)
			continue
		}
		for _, m := range lr.Metrics {
			j := -1
			for i, h := range runs.Head {
				if h == m.Key || strings.HasPrefix(h, m.Key+" (") {
					j = i
				}
			}
			if j < 0 || j+1 >= len(row) || m.Mean == nil {
				t.Errorf("run %s: no column for %s on the page (%q)", lr.ID, m.Key, runs.Head)
				continue
			}
			if !near(row[j], *m.Mean) || row[j+1] != strconv.Itoa(m.N) {
				t.Errorf("run %s %s: the page shows %q n=%q, rigor log --json %g n=%d", lr.ID, m.Key, row[j], row[j+1], *m.Mean, m.N)
			}
		}
	}
}
