package report

import (
	"bytes"
	"errors"
	"html/template"
	"image/png"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rigorbench/rigor/internal/compare"
	"github.com/rigorbench/rigor/internal/report/text"
	"github.com/rigorbench/rigor/internal/results"
)

func pageMap(s *Site) map[string]string {
	m := map[string]string{}
	for _, p := range s.Pages {
		m[p.Path] = string(p.HTML)
	}
	return m
}

func TestBuild_pages(t *testing.T) {
	runs := genRuns(realisticRepo(), 0.02)
	site, err := Build(runs, Options{Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if site.Experiments != 15 || site.Sweeps != 2 || site.Runs != len(runs) {
		t.Errorf("got %d experiments, %d sweeps, %d runs; want 15, 2, %d", site.Experiments, site.Sweeps, site.Runs, len(runs))
	}
	pages := pageMap(site)
	if site.Pages[0].Path != "index.html" {
		t.Errorf("first page %s, want index.html", site.Pages[0].Path)
	}
	for _, p := range []string{"experiments/qwen25-7b-4090/base.html", "sweeps/minimax-m27-b70/ubSweep.html",
		"sweeps/llama31-8b-cpu/threads.html", "diffs/qwen25-7b-4090/base.html", "diffs/smoke/variant03.html"} {
		if pages[p] == "" {
			t.Errorf("no page %s", p)
		}
	}
	if _, ok := pages["sweeps/qwen25-7b-4090/base.html"]; ok {
		t.Errorf("a sweep page for an experiment without a sweep")
	}

	// Every plot has a title and a description, and is labelled by them.
	svgRE := regexp.MustCompile(`<svg role="img" aria-labelledby="(plot-\d+)-t plot-\d+-d" id="plot-\d+"`)
	for path, html := range pages {
		for _, m := range svgRE.FindAllStringSubmatch(html, -1) {
			if !strings.Contains(html, `<title id="`+m[1]+`-t">`) || !strings.Contains(html, `<desc id="`+m[1]+`-d">`) {
				t.Errorf("%s: plot %s has no title or description", path, m[1])
			}
		}
		if strings.Contains(html, "<svg") && !svgRE.MatchString(html) {
			t.Errorf("%s: an <svg> without role and labels", path)
		}
	}

	// The sweep over ub and nkvo: one plot per field, one line per value of
	// the other; the legend names them.
	sw := pages["sweeps/minimax-m27-b70/ubSweep.html"]
	for _, want := range []string{"tokSOut tg64 against ub (minimax-m27-b70/ubSweep)", "tokSOut tg64 against nkvo (minimax-m27-b70/ubSweep)",
		">nkvo=0</text>", ">nkvo=1</text>", ">ub=512</text>", "one line per value of the other swept fields (2)", "12 points over nkvo × ub"} {
		if !strings.Contains(sw, want) {
			t.Errorf("sweep page lacks %q", want)
		}
	}
	// The history: drift lines, failed runs crossed, the unit and direction.
	base := pages["experiments/qwen25-7b-4090/base.html"]
	for _, want := range []string{"tokSOut tg128 over time (qwen25-7b-4090/base)", "dashed lines mark", "crosses mark",
		"tok/s, higher is better ↑", "lock.engine.commit", "rig.driver: &#34;580.82.07&#34; → &#34;590.44.01&#34;",
		"cudaMalloc failed: out of memory", "<h2 id=\"commits\">By engine commit</h2>",
		"tokSOut tg128 by engine commit (qwen25-7b-4090/base)"} {
		if !strings.Contains(base, want) {
			t.Errorf("experiment page lacks %q", want)
		}
	}
	vllm := pages["experiments/minimax-m27-int4-b70/vllmThroughput.html"]
	if !strings.Contains(vllm, "ms, lower is better ↓") {
		t.Errorf("vLLM page lacks the latency axis with its direction")
	}

	// The same records make the same bytes.
	again, err := Build(slices.Clone(runs), Options{Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range again.Pages {
		if !bytes.Equal(p.HTML, site.Pages[i].HTML) {
			t.Errorf("%s differs between two builds of the same runs", p.Path)
		}
	}
}

func TestBuild_noRuns(t *testing.T) {
	if _, err := Build(nil, Options{}); !errors.Is(err, ErrNoRuns) {
		t.Errorf("got %v, want ErrNoRuns", err)
	}
}

// TestBuild_pageSize builds the report of 10,000 records and checks every
// page stays under 1 MB.
func TestBuild_pageSize(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: 10,000 records")
	}
	runs := genRuns(realisticRepo(), 1)
	if len(runs) != 10000 {
		t.Fatalf("generated %d runs, want 10000", len(runs))
	}
	site, err := Build(runs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	largest, name := 0, ""
	for _, p := range site.Pages {
		if len(p.HTML) > largest {
			largest, name = len(p.HTML), p.Path
		}
		if len(p.HTML) >= 1e6 {
			t.Errorf("%s: %d bytes, want under 1 MB", p.Path, len(p.HTML))
		}
	}
	t.Logf("%d pages; the largest, %s, has %d bytes", len(site.Pages), name, largest)
}

func TestSite_Write(t *testing.T) {
	site, err := Build(genRuns(realisticRepo()[:1], 0.005), Options{})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "site")
	if err := site.Write(dir); err != nil {
		t.Fatal(err)
	}
	for _, p := range site.Pages {
		if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(p.Path))); err != nil {
			t.Errorf("page %s not written: %v", p.Path, err)
		}
	}
	// An earlier report's pages that this one lacks are removed; a file a
	// user added beside them is kept.
	earlier := &Site{Pages: append(slices.Clone(site.Pages), Page{Path: "experiments/stale.html", HTML: []byte("old")})}
	if err := earlier.Write(dir); err != nil {
		t.Fatalf("writing over a report: %v", err)
	}
	os.WriteFile(filepath.Join(dir, "experiments", "notes.txt"), []byte("mine"), 0o644)
	if err := site.Write(dir); err != nil {
		t.Fatalf("writing over an earlier report: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "experiments", "stale.html")); err == nil {
		t.Errorf("a page of the earlier report survived")
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "experiments", "notes.txt")); string(b) != "mine" {
		t.Errorf("a file the user added beside the report was removed")
	}
	// A file the earlier report did not write is not overwritten.
	os.WriteFile(filepath.Join(dir, "experiments", "stale.html"), []byte("mine"), 0o644)
	var fe *FileError
	if err := earlier.Write(dir); !errors.As(err, &fe) {
		t.Errorf("overwriting a user's file: got %v, want a *FileError", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "experiments", "stale.html")); string(b) != "mine" {
		t.Errorf("the user's file was overwritten")
	}
	leftovers, _ := filepath.Glob(filepath.Join(dir, "*", ".*.tmp"))
	if len(leftovers) > 0 {
		t.Errorf("temporary files left behind: %v", leftovers)
	}
	// Anything else is left alone.
	other := t.TempDir()
	os.WriteFile(filepath.Join(other, "notes.txt"), []byte("mine"), 0o644)
	var de *DirError
	if err := site.Write(other); !errors.As(err, &de) {
		t.Errorf("writing into a directory of other files: got %v, want a *DirError", err)
	}
	if b, _ := os.ReadFile(filepath.Join(other, "notes.txt")); string(b) != "mine" {
		t.Errorf("the user's file was touched")
	}
	if err := site.Write(filepath.Join(other, "notes.txt")); !errors.As(err, &de) {
		t.Errorf("writing onto a file: got %v, want a *DirError", err)
	}
	leftovers, _ = filepath.Glob(filepath.Join(filepath.Dir(dir), ".site.*"))
	if len(leftovers) > 0 {
		t.Errorf("temporary directories left behind: %v", leftovers)
	}
}

func TestMatch(t *testing.T) {
	runs := []*results.Run{{Experiment: "qwen/base"}, {Experiment: "qwen/ubsweep"}, {Experiment: "qwenish/x"}, {Experiment: "minimax/a"}}
	check := func(patterns []string, want []string, wantMissing []string) {
		t.Helper()
		got, missing, err := Match(runs, patterns)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, r := range got {
			ids = append(ids, r.Experiment)
		}
		if !slices.Equal(ids, want) || !slices.Equal(missing, wantMissing) {
			t.Errorf("Match(%q) = %v, missing %v; want %v, missing %v", patterns, ids, missing, want, wantMissing)
		}
	}
	check(nil, []string{"qwen/base", "qwen/ubsweep", "qwenish/x", "minimax/a"}, nil)
	check([]string{"qwen"}, []string{"qwen/base", "qwen/ubsweep"}, nil)
	check([]string{"qwen/"}, []string{"qwen/base", "qwen/ubsweep"}, nil)
	check([]string{"qwen/ub*", "minimax/a"}, []string{"qwen/ubsweep", "minimax/a"}, nil)
	check([]string{"qwen/base", "nope"}, []string{"qwen/base"}, []string{"nope"})
	if _, _, err := Match(runs, []string{"qwen/["}); err == nil {
		t.Errorf("a malformed glob: no error")
	}
}

func TestFigures(t *testing.T) {
	runs := genRuns(realisticRepo()[2:3], 0.02) // the ub × nkvo sweep
	vals := make([]results.Run, len(runs))
	for i, r := range runs {
		vals[i] = *r
	}
	h := compare.Log(vals)
	f := HistoryFigure(h, vals)
	if len(f.Plots) != 1 {
		t.Errorf("history figure of one metric: %d plots", len(f.Plots))
	}
	var buf bytes.Buffer
	if err := f.WritePNG(&buf); err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(&buf)
	if err != nil {
		t.Fatalf("decoding the PNG: %v", err)
	}
	if b := img.Bounds(); b.Dx() != 1080 || b.Dy() != 518 {
		t.Errorf("PNG is %d×%d, want 1080×518 (7.5×3.6 in at 144 dpi)", b.Dx(), b.Dy())
	}

	a, b := previousAndLatest(runs)
	rep, err := compare.Compare(compare.Side{Label: "previous", Runs: a}, compare.Side{Label: "latest", Runs: b}, compare.Options{})
	if err != nil {
		t.Fatal(err)
	}
	df := DiffFigure(rep)
	if df == nil {
		t.Fatal("no diff figure")
	}
	buf.Reset()
	if err := df.WriteSVG(&buf); err != nil {
		t.Fatal(err)
	}
	svg := buf.String()
	for _, want := range []string{"<svg", "A: previous", "B: latest", "ub=512 nkvo=1"} {
		if !strings.Contains(svg, want) && !strings.Contains(svg, strings.ReplaceAll(want, "ub=512 nkvo=1", "nkvo=1 ub=512")) {
			t.Errorf("diff SVG lacks %q", want)
		}
	}
	var page bytes.Buffer
	if err := DiffPage(&page, rep, DiffOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<title>previous against latest</title>", "<h2>Configuration</h2>", "untested", `<svg role="img"`} {
		if !strings.Contains(page.String(), want) {
			t.Errorf("diff page lacks %q", want)
		}
	}
}

// TestBuild_diffInvocations: a report's "latest against previous" compares
// the latest invocation with the one before, never two rounds of one
// invocation, and its diff page shows the same verdicts and caveats as
// the CLI's text for the same pair (issue 25).
func TestBuild_diffInvocations(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	run := func(id, inv string, round int, at time.Duration, v float64) *results.Run {
		return &results.Run{ID: id, Experiment: "x/a", Point: "x/a", Status: "ok", Invocation: inv, Round: round, Rounds: 3,
			Start: t0.Add(at), Metrics: []results.Metric{{Name: "tokSOut", Test: "tg64", Unit: "tok/s", Direction: "higher", Samples: []float64{v, v * 1.01, v * 0.99}}}}
	}
	runs := []*results.Run{
		run("r1", "inv1", 1, 0, 100), run("r2", "inv1", 2, time.Minute, 150), run("r3", "inv1", 3, 2*time.Minute, 200),
		run("r4", "inv2", 1, time.Hour, 101), run("r5", "inv2", 2, time.Hour+time.Minute, 99), run("r6", "inv2", 3, time.Hour+2*time.Minute, 100),
	}
	a, b := previousAndLatest(runs)
	ids := func(rs []results.Run) (out []string) {
		for _, r := range rs {
			out = append(out, r.ID)
		}
		return out
	}
	if !slices.Equal(ids(a), []string{"r1", "r2", "r3"}) || !slices.Equal(ids(b), []string{"r4", "r5", "r6"}) {
		t.Fatalf("previous %v latest %v; want the invocations inv1 and inv2", ids(a), ids(b))
	}
	// Only the rounds of one invocation: nothing to compare.
	if a, b := previousAndLatest(runs[:3]); len(a) != 0 || len(b) != 0 {
		t.Errorf("rounds of one invocation compared: %v against %v", ids(a), ids(b))
	}
	rep, err := compare.Compare(compare.Side{Label: "previous", Runs: a}, compare.Side{Label: "latest", Runs: b}, compare.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var txt, html bytes.Buffer
	if err := text.WriteText(&txt, rep, 0); err != nil {
		t.Fatal(err)
	}
	if err := DiffPage(&html, rep, DiffOptions{Version: "test"}); err != nil {
		t.Fatal(err)
	}
	if rep.Untested == "" || !strings.Contains(txt.String(), rep.Untested) || !strings.Contains(html.String(), template.HTMLEscapeString(rep.Untested)) {
		t.Errorf("the untested line is not on both: %q", rep.Untested)
	}
	for _, tb := range rep.Tables {
		for _, r := range tb.Rows {
			if !strings.Contains(html.String(), ">"+string(r.Verdict)+"</td>") || !strings.Contains(txt.String(), string(r.Verdict)) {
				t.Errorf("%s: verdict %q not on both", tb.Metric, r.Verdict)
			}
		}
	}
	for _, n := range rep.Notes {
		if !strings.Contains(html.String(), template.HTMLEscapeString(n)) {
			t.Errorf("note %q missing from the page", n)
		}
	}
}

// TestBuild_oneExperiment: the index counts in the singular too ("1
// experiments" in issue 31).
func TestBuild_oneExperiment(t *testing.T) {
	runs := genRuns(realisticRepo(), 0.02)
	one := runs[:1]
	site, err := Build(one, Options{Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	index := pageMap(site)["index.html"]
	if !strings.Contains(index, ">1 experiment, 1 recorded run.") {
		t.Errorf("index summary: %q", regexp.MustCompile(`<p class="summary">[^<]*`).FindString(index))
	}
}

// TestBuild_commitOrder: given the history order of an experiment's
// engine commits (a bisect's first-parent walk), the view over commits
// draws them in that order, not in the order they were first run
// (issue 29).
func TestBuild_commitOrder(t *testing.T) {
	const id = "qwen25-7b-4090/base"
	runs := genRuns(realisticRepo(), 0.02)
	var first []string
	for _, r := range runs {
		if r.Experiment == id && r.Engine.Commit != "" && !slices.Contains(first, r.Engine.Commit) {
			first = append(first, r.Engine.Commit)
		}
	}
	if len(first) < 2 {
		t.Fatalf("%s has %d commits, want several", id, len(first))
	}
	history := slices.Clone(first)
	slices.Reverse(history)
	section := func(o Options) string {
		site, err := Build(runs, o)
		if err != nil {
			t.Fatal(err)
		}
		html := pageMap(site)["experiments/"+id+".html"]
		_, after, ok := strings.Cut(html, `id="commits"`)
		if !ok {
			t.Fatalf("no view over commits")
		}
		return after
	}
	positions := func(html string, commits []string) []int {
		var pos []int
		for _, c := range commits {
			pos = append(pos, strings.Index(html, ">"+c[:7]))
		}
		return pos
	}
	plain := section(Options{})
	if p := positions(plain, first); !slices.IsSorted(p) || p[0] < 0 {
		t.Errorf("without an order: commits at %v, want the order first run", p)
	}
	ordered := section(Options{CommitOrder: map[string][]string{id: history}})
	if p := positions(ordered, history); !slices.IsSorted(p) || p[0] < 0 {
		t.Errorf("with the history order: commits at %v, want %v's order", p, history)
	}
	if !strings.Contains(ordered, "in history order") || strings.Contains(plain, "in history order") {
		t.Errorf("the figure's axis does not say which order it follows")
	}
}
