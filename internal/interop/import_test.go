package interop

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rigorbench/rigor/internal/results"
	"github.com/rigorbench/rigor/internal/spec"
)

var (
	repoOnce sync.Once
	repoSet  *spec.Set
	repoIDs  []string
	repoErr  error
)

// repoOptions loads this repository's experiments, the ones the seeds
// belong to.
func repoOptions(t testing.TB) ImportOptions {
	t.Helper()
	repoOnce.Do(func() {
		_, file, _, _ := runtime.Caller(0)
		root := filepath.Join(filepath.Dir(file), "..", "..")
		repoSet, repoErr = spec.Load(spec.Options{Root: root})
		if repoErr == nil {
			repoIDs, repoErr = spec.AllIDs(root)
		}
	})
	if repoErr != nil {
		t.Fatal(repoErr)
	}
	var xs []*spec.Experiment
	for _, x := range repoSet.Experiments {
		if !x.Broken {
			xs = append(xs, x)
		}
	}
	return ImportOptions{Experiments: xs, IDs: repoIDs, Now: time.Date(2026, 9, 1, 12, 0, 0, 0, time.UTC)}
}

func readSeed(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func importSeed(t *testing.T, name string) []Imported {
	t.Helper()
	out, err := Import("seeds/"+name, readSeed(t, name), repoOptions(t))
	if err != nil {
		t.Fatalf("importing %s: %v", name, err)
	}
	return out
}

func TestImport_seed000(t *testing.T) {
	out := importSeed(t, "000_6ca3690f63b2438f.json")
	if len(out) != 11 {
		t.Fatalf("seed 000: got %d runs, want 11 (baseline, 9 runs, the timing probe)", len(out))
	}
	byPoint := map[string]*results.Run{}
	for _, im := range out {
		byPoint[im.Run.Point] = im.Run
		if im.Raw[SourceFile] == nil || im.Run.Provenance.SHA256 == "" || im.Run.Provenance.Format != FormatSeedSummary {
			t.Errorf("%s: provenance %+v, raw files %v: want the source kept with its sha256", im.Run.Point, im.Run.Provenance, len(im.Raw))
		}
	}
	for _, tc := range []struct {
		point   string
		status  string
		value   float64
		samples int
	}{
		{"minimax-m27-b70/baseline", results.StatusOK, 14.292387, 3},
		{"minimax-m27-b70/kvoffload", results.StatusOK, 16.383602, 3},
		{"minimax-m27-b70/kvoffloadSmoke", results.StatusOK, 15.642624, 1},
		{"minimax-m27-b70/ubSweep[ub=16]", results.StatusOK, 16.278826, 1},
		{"minimax-m27-b70/ubSweep[ub=64]", results.StatusOK, 16.303453, 1},
		{"minimax-m27-b70/q8kv", results.StatusFailed, 0, 0},
		{"minimax-m27-b70/q8kF16v", results.StatusOK, 2.798544, 1},
		{"minimax-m27-b70/timingProbe", results.StatusOK, 3.802188, 1},
	} {
		r := byPoint[tc.point]
		if r == nil {
			t.Errorf("no run for %s", tc.point)
			continue
		}
		if r.Status != tc.status {
			t.Errorf("%s: got status %s, want %s", tc.point, r.Status, tc.status)
		}
		if tc.status == results.StatusFailed {
			if r.Error != "Context creation failed before decode." || len(r.Metrics) != 0 {
				t.Errorf("%s: got error %q and %d metrics, want the seed's failure text and none", tc.point, r.Error, len(r.Metrics))
			}
			continue
		}
		m := r.Metrics[0]
		if m.Name != "tokSOut" || m.Value != tc.value || len(m.Samples) != tc.samples {
			t.Errorf("%s: got %s %v with %d samples, want tokSOut %v with %d", tc.point, m.Name, m.Value, len(m.Samples), tc.value, tc.samples)
		}
	}
	b := byPoint["minimax-m27-b70/baseline"]
	want := []string{"engine.commit: short sha 9a26522", "model.revision: main is a branch name, not a commit"}
	for _, w := range want {
		if !slices.Contains(b.Unverified, w) {
			t.Errorf("baseline: unverified %q missing from %q", w, b.Unverified)
		}
	}
	if b.Engine.Commit != "" || b.Provenance.ExternalID != "cmowf7tgs000do301f1zd6jbr" || b.Start.Format(time.RFC3339) != "2026-05-08T03:27:53Z" {
		t.Errorf("baseline: commit %q, external id %q, start %v", b.Engine.Commit, b.Provenance.ExternalID, b.Start)
	}
	// the same file gives the same ids
	again := importSeed(t, "000_6ca3690f63b2438f.json")
	for i := range out {
		if out[i].Run.ID != again[i].Run.ID {
			t.Errorf("run %d: ids %s and %s differ between two imports of one file", i, out[i].Run.ID, again[i].Run.ID)
		}
	}
}

func TestImport_links(t *testing.T) {
	for _, tc := range []struct{ file, point string }{
		{"003_876d20171dbd1767.json", "minimax-m27-b70/sasLeaderboard"},
		{"004_5d337bcd44405d36.json", "minimax-m27-int4-b70/vllmThroughput"},
	} {
		out := importSeed(t, tc.file)
		if len(out) != 1 || out[0].Run.Point != tc.point {
			t.Errorf("%s: got %d runs, first at %v, want one at %s", tc.file, len(out), out[0].Run.Point, tc.point)
		}
	}
}

// TestExport_localMaxxingRoundTrip: exporting the imported seed 004 gives
// back every field the seed had, with the same values.
func TestExport_localMaxxingRoundTrip(t *testing.T) {
	src := readSeed(t, "004_5d337bcd44405d36.json")
	im := importSeed(t, "004_5d337bcd44405d36.json")[0]
	out, err := Export(ExportLocalMaxxing, []Record{{Run: im.Run, Raw: im.Raw}}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var got, want any
	json.Unmarshal(out, &got)
	json.Unmarshal(src, &want)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("export of imported seed 004 differs from the seed:\ngot  %s\nwant %s", out, src)
	}
	// Without the kept source, the export holds only what the record
	// knows: still every required field, no engineFlags other than the
	// command.
	out2, err := Export(ExportLocalMaxxing, []Record{{Run: im.Run}}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var d LocalMaxxing
	json.Unmarshal(out2, &d)
	if d.TokSOut == nil || *d.TokSOut != 34.578045 || d.EngineFlags["gpuLayers"] != nil || d.EngineFlags["commandSnippet"] == nil || d.ContextLength != nil {
		t.Errorf("export without source = %s, want tokSOut and commandSnippet only from the record", out2)
	}
}

func TestExport_refused(t *testing.T) {
	out := importSeed(t, "000_6ca3690f63b2438f.json")
	for _, im := range out {
		r := im.Run
		_, err := Export(ExportLocalMaxxing, []Record{{Run: r}}, time.Now())
		var re *RefusedError
		if !errors.As(err, &re) {
			t.Errorf("%s: got %v, want a refusal (the seed has no cpu and ram)", r.Point, err)
			continue
		}
		if r.Status == results.StatusFailed && !strings.Contains(re.Reason, "failed (Context creation failed before decode.)") {
			t.Errorf("%s: refusal %q does not give the failure", r.Point, re.Reason)
		}
		if r.Status == results.StatusOK && !strings.Contains(re.Reason, "hardware.cpu, hardware.ramGb") {
			t.Errorf("%s: refusal %q does not name the missing fields", r.Point, re.Reason)
		}
		if _, err := Export(ExportRegistry, []Record{{Run: r}}, time.Now()); (err != nil) != (r.Status != results.StatusOK) {
			t.Errorf("%s (%s): registry export error %v", r.Point, r.Status, err)
		}
	}
}

func TestImport_badFiles(t *testing.T) {
	s3 := string(readSeed(t, "003_876d20171dbd1767.json"))
	s4 := string(readSeed(t, "004_5d337bcd44405d36.json"))
	s0 := string(readSeed(t, "000_6ca3690f63b2438f.json"))
	for _, tc := range []struct{ name, in, opt, want string }{
		{"empty", "", "", "the file is empty"},
		{"truncated localmaxxing", s4[:300], "", "truncated JSON"},
		{"truncated seed", s0[:len(s0)-40], "", "truncated JSON"},
		{"registry v2", strings.Replace(s3, "local-ai-registry/v1", "local-ai-registry/v2", 1), "", `schema_version "local-ai-registry/v2": rigor reads local-ai-registry/v1 only`},
		{"unknown shape", `{"a": 1}`, "", "unknown format: a JSON object with keys a"},
		{"not JSON", "hello", "", "unknown format: not JSON"},
		{"wrong type", strings.Replace(s4, `"tokSOut": 34.578045`, `"tokSOut": "fast"`, 1), "", "field tokSOut: got JSON string"},
		{"unknown lm field", strings.Replace(s4, `"notes"`, `"nots"`, 1), "", "unknown fields nots"},
		{"seed run contradicts experiment", strings.Replace(s0, `"nUbatch": 16`, `"nUbatch": 17`, 1), "", "the seed says flags.ub 17, minimax-m27-b70/ubSweep[ub=16] has 16"},
		{"unlinked label", strings.Replace(s0, `"K/Q/V offload with rope cache"`, `"something new"`, 1), "", `run "something new" is linked to no experiment`},
		{"unknown experiment", s4, "minimax-m27-int4-b70/vllmThroughputt", `no experiment matches "minimax-m27-int4-b70/vllmThroughputt"`},
		{"llama-bench without experiment", `[{"build_commit": "abc1234", "n_gen": 8, "avg_ts": 1}]`, "", "give --experiment ID"},
		{"llama-bench truncated", `[{"build_commit": "abc1234", "n_gen": 8, "avg_ts": 1}, {"build`, "minimax-m27-b70/kvoffload", "stops after 1 complete rows"},
	} {
		opts := repoOptions(t)
		opts.Experiment = tc.opt
		out, err := Import("f.json", []byte(tc.in), opts)
		if err == nil || !strings.Contains(err.Error(), tc.want) || out != nil {
			t.Errorf("%s: got %d runs and error %v, want no runs and an error saying %q", tc.name, len(out), err, tc.want)
		}
	}
	opts := repoOptions(t)
	opts.Experiment = "minimax-m27-int4-b70/vllmThroughputt"
	_, err := Import("f.json", []byte(s4), opts)
	var nm *spec.NoMatchError
	if !errors.As(err, &nm) || len(nm.Suggestions) == 0 || nm.Suggestions[0] != "minimax-m27-int4-b70/vllmThroughput" {
		t.Errorf("unknown experiment: got %v, want a NoMatchError suggesting minimax-m27-int4-b70/vllmThroughput", err)
	}
}

func TestImport_llamaBenchSweep(t *testing.T) {
	row := func(ub int, ts float64) string {
		return fmt.Sprintf(`{"build_commit": "8337e4cd", "n_ubatch": %d, "n_prompt": 0, "n_gen": 64, "no_kv_offload": false, "type_k": "f16", "type_v": "f16", "test": "tg64", "test_time": "2026-05-08T04:52:53Z", "avg_ts": %g, "samples_ts": [%g], "samples_ns": [1000]}`, ub, ts, ts)
	}
	in := "[" + row(16, 16.1) + ",\n" + row(32, 16.2) + ",\n" + row(64, 16.3) + "]"
	opts := repoOptions(t)
	opts.Experiment = "minimax-m27-b70/ubSweep"
	out, err := Import("bench.json", []byte(in), opts)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, im := range out {
		got[im.Run.Point] = im.Run.Metrics[0].Value
	}
	want := map[string]float64{"minimax-m27-b70/ubSweep[ub=16]": 16.1, "minimax-m27-b70/ubSweep[ub=32]": 16.2, "minimax-m27-b70/ubSweep[ub=64]": 16.3}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("sweep import: got %v, want %v", got, want)
	}
}

func TestExport_tables(t *testing.T) {
	var recs []Record
	for _, im := range importSeed(t, "000_6ca3690f63b2438f.json") {
		recs = append(recs, Record{Run: im.Run})
	}
	for _, f := range []string{ExportMarkdown, ExportCSV, ExportJSON} {
		b, err := Export(f, recs, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		wants := []string{"14.292387", "16.383602", "Context creation failed before decode.", "rpc-b70-3"}
		if f == ExportMarkdown {
			// for people: 4 digits, the 95% CI of the mean and the spread
			wants = []string{"| 14.29 | ± 6.3% | 13.87–14.53 | 3 |", "| 16.38 | ± 1.6% | 16.26–16.45 | 3 |", "Context creation failed before decode.", "rpc-b70-3"}
		}
		for _, want := range wants {
			if !strings.Contains(string(b), want) {
				t.Errorf("%s table lacks %q:\n%s", f, want, b)
			}
		}
	}
}
