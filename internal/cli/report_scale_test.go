//go:build unix

package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
	"weak"

	"github.com/rigorbench/rigor/internal/results"
	"github.com/rigorbench/rigor/internal/rig"
)

// TestReportGroups_keepNoSummaries: the full report's experiments keep
// nothing of the index's listing of every run once it is dropped (issue
// 30: at 100,000 records the listing's summaries stayed alive for the
// speed-vs-quality peers while the pages were drawn). Counted with weak
// pointers after a collection, not by memory. The peers an experiment's
// view reads are still the latest run of each point of the other
// experiments of its package.
func TestReportGroups_keepNoSummaries(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "cue.mod"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "cue.mod", "module.cue"), []byte("module: \"example.com/s@v0\"\nlanguage: version: \"v0.17.0\"\n"), 0o644)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	latest := map[string][]string{} // experiment → the ids of its points' latest runs
	for i := range 3 {
		exp := fmt.Sprintf("lab/e%d", i)
		ids := writeRuns(t, dir, exp, 20, t0.Add(time.Duration(i)*time.Second), 100*i)
		latest[exp] = ids[len(ids)-5:] // 5 points, a run a minute
	}
	store := results.Open(dir)
	sums, _, err := store.Summaries(results.Filter{})
	if err != nil || len(sums) != 60 {
		t.Fatalf("listed %d runs (%v), want 60", len(sums), err)
	}
	weaks := make([]weak.Pointer[results.Summary], len(sums))
	for i, x := range sums {
		weaks[i] = weak.Make(x)
	}
	var lw loadWarnings
	groups, err := reportGroups(store, sums, &lw)
	if err != nil {
		t.Fatal(err)
	}
	sums = nil
	runtime.GC()
	runtime.GC()
	alive := 0
	for _, w := range weaks {
		if w.Value() != nil {
			alive++
		}
	}
	if alive != 0 {
		t.Errorf("with the listing dropped, the report's experiments keep %d of its 60 summaries, want none", alive)
	}
	for _, g := range groups {
		runs, err := g.Peers()
		if err != nil {
			t.Fatal(err)
		}
		var got, want []string
		for _, r := range runs {
			got = append(got, r.ID)
		}
		for exp, ids := range latest {
			if exp != g.ID {
				want = append(want, ids...)
			}
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s: peers %v, want the latest run of each point of the others %v", g.ID, got, want)
		}
	}
	runtime.KeepAlive(groups)
}

// writeRounds writes the runs of one invocation of n rounds of the single
// point experiment exp (a one-off run without an invocation when inv is
// ""), a minute apart from t0, their tokSOut around c, and returns their
// ids.
func writeRounds(t testing.TB, dir, exp, inv string, n int, t0 time.Time, seq int, c float64) []string {
	t.Helper()
	store := results.Open(dir)
	spec, _ := json.Marshal(map[string]any{"flags": map[string]any{"ngl": 99}, "bench": map[string]any{"r": 3},
		"model": map[string]any{"hf": "example/Demo-GGUF", "quant": "Q4_K_M"}})
	var ids []string
	for i := range n {
		start := t0.Add(time.Duration(i) * time.Minute)
		x := c * (1 + 0.002*float64(i%7-3))
		r := &results.Run{Schema: 1, ID: fmt.Sprintf("%s-%06d", start.Format("20060102T150405Z"), seq+i), Experiment: exp,
			Point: exp, Spec: spec, Invocation: inv,
			Engine: results.Engine{Family: "llama.cpp", Commit: fmt.Sprintf("%040x", 1)},
			Model:  results.Model{Quant: "Q4_K_M", Files: []results.File{{Path: "m.gguf", SHA256: fmt.Sprintf("%064x", 7)}}},
			Rig:    &rig.Rig{Hostname: "box", AcceleratorModelName: "NVIDIA GeForce RTX 4090", AcceleratorsPerNode: 2},
			Start:  start, End: start.Add(30 * time.Second), Status: results.StatusOK,
			Metrics: []results.Metric{
				{Name: "tokSOut", Test: "tg128", Unit: "tok/s", Direction: "higher", Samples: []float64{x, x * 1.004, x * 0.997}},
			}}
		if inv != "" {
			r.Round, r.Rounds = i+1, n
		}
		data, err := results.Encode(r)
		if err != nil {
			t.Fatal(err)
		}
		path := store.RecordPath(exp, r.ID)
		os.MkdirAll(filepath.Dir(path), 0o755)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.ID)
	}
	return ids
}

// TestReport_diffPageBoundedRounds: the report's diff page of an
// experiment whose latest invocation has more rounds than
// results.MaxRounds compares the rounds `rigor diff` compares (an evenly
// spaced sample, the latest included), reads only those records, and
// says so with the warning `rigor diff` prints (issue 30: the page read
// and compared every round). Its tables, notes and untested line are
// those of `rigor diff --format html` of the same sides: the one-off run
// before the invocation against the experiment's latest invocation.
func TestReport_diffPageBoundedRounds(t *testing.T) {
	dir, prev := sampledStore(t)        // results.MaxRounds 20; 1 run, then 45 rounds
	time.Sleep(2100 * time.Millisecond) // past the index's racy window
	cli := func(args ...string) (string, string) {
		t.Helper()
		stdout, stderr, code := runCLI(t, append([]string{"-C", dir}, args...)...)
		if code != 0 {
			t.Fatalf("rigor %v: exit %d\n%s%s", args, code, stdout, stderr)
		}
		return stdout, stderr
	}
	cli("results")
	r0 := results.Reads()
	cli("report", "-o", filepath.Join(dir, "site"))
	// The one-off run and 20 of the 45 rounds, the latest among them.
	if n := results.Reads().Records - r0.Records; n != 21 {
		t.Errorf("the report read %d records, want 21: the previous run and the 20 rounds compared of the latest invocation's 45", n)
	}
	page, err := os.ReadFile(filepath.Join(dir, "site", "diffs", "lab", "r.html"))
	if err != nil {
		t.Fatal(err)
	}
	cliPage, stderr := cli("diff", prev, "lab/r", "--format", "html")
	// The warning is the comparison's: on the page, not on stderr; its
	// side is "latest" on the report's page, "lab/r" on diff's.
	const warning = "point lab/r: its latest invocation 20260101T010000Z-inv has 45 rounds; 20 of them, evenly spaced in time and the latest included, are compared"
	if !strings.Contains(cliPage, "<li>lab/r: "+warning+"</li>") || strings.Contains(stderr, warning) {
		t.Fatalf("rigor diff --format html does not warn on its page that it compares 20 of the 45 rounds (stderr %q)", stderr)
	}
	if !strings.Contains(string(page), "<li>latest: "+warning+"</li>") {
		t.Errorf("the diff page does not warn %q", warning)
	}
	parts := regexp.MustCompile(`(?s)<tbody>.*?</tbody>|<ul class="notes">.*?</ul>|<p class="untested">.*?</p>`)
	got, want := parts.FindAllString(string(page), -1), parts.FindAllString(cliPage, -1)
	if len(want) < 2 || !slices.Equal(got, want) {
		t.Errorf("the diff page's tables and notes differ from rigor diff's:\n%s", firstDiff(strings.Join(got, "\n"), strings.Join(want, "\n")))
	}
}
