package text

import (
	"encoding/json"
	"math"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/rigorbench/rigor/internal/compare"
	"github.com/rigorbench/rigor/internal/compare/comparetest"
	"github.com/rigorbench/rigor/internal/results"
)

// TestSummariseFiles: the hashes and sizes of several model files are one
// line in text unless --verbose; one file's change stays as it is.
func TestSummariseFiles(t *testing.T) {
	ch := func(path string) compare.Change {
		return compare.Change{Section: compare.SectionLock, Path: path, Old: json.RawMessage(`"a"`), New: json.RawMessage(`"b"`)}
	}
	many := []compare.Change{ch("flags.ub"), ch(`lock.model.files."x-1.gguf".sha256`), ch(`lock.model.files."x-1.gguf".size`),
		ch(`lock.model.files."x-2.gguf".sha256`), ch("lock.model.files.y.sha256"), ch("lock.model.revision")}
	var got []string
	for _, c := range summariseFiles(many) {
		got = append(got, c.Path)
	}
	want := []string{"flags.ub", "lock.model.files: 3 files differ (sha256 or size; --verbose lists each)", "lock.model.revision"}
	if !slices.Equal(got, want) {
		t.Errorf("summarised:\n got %q\nwant %q", got, want)
	}
	one := []compare.Change{ch(`lock.model.files."x.gguf".sha256`), ch(`lock.model.files."x.gguf".size`)}
	if got := summariseFiles(one); len(got) != 2 {
		t.Errorf("one file: %v, want its changes as they are", got)
	}
	var b strings.Builder
	WriteTextOptions(&b, &compare.Report{Config: many}, TextOptions{})
	if !strings.Contains(b.String(), "\n  lock.model.files: 3 files differ (sha256 or size; --verbose lists each)\n") {
		t.Errorf("text:\n%s", b.String())
	}
	b.Reset()
	WriteTextOptions(&b, &compare.Report{Config: many}, TextOptions{Verbose: true})
	if !strings.Contains(b.String(), `lock.model.files."x-2.gguf".sha256: "a" → "b"`) {
		t.Errorf("verbose text:\n%s", b.String())
	}
}

func TestCompare_samplesFromValue(t *testing.T) {
	// A record without raw samples (an import of a summary) counts its
	// value as one sample, and an honest warning follows.
	a := results.Run{ID: "a", Status: "ok", Metrics: []results.Metric{{Name: "tokSOut", Unit: "tok/s", Direction: "higher", Value: 16.28}}}
	b := results.Run{ID: "b", Status: "ok", Metrics: []results.Metric{{Name: "tokSOut", Unit: "tok/s", Direction: "higher", Value: 16.30}}}
	rep, err := compare.Compare(compare.Side{Label: "ub16", Runs: []results.Run{a}}, compare.Side{Label: "ub64", Runs: []results.Run{b}}, compare.Options{})
	if err != nil {
		t.Fatal(err)
	}
	row := rep.Tables[0].Rows[0]
	if row.A.N != 1 || !math.IsNaN(row.P) || row.Verdict != compare.Untested {
		t.Errorf("row n %d p %g verdict %q, want 1, no test, untested", row.A.N, row.P, row.Verdict)
	}
	// A single value has no interval: "n = 1", never "± ∞".
	var text strings.Builder
	if err := WriteText(&text, rep, 0); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "n = 1") || strings.Contains(text.String(), "∞") {
		t.Errorf("text shows no \"n = 1\" or an infinite interval:\n%s", text.String())
	}
}

func Example() {
	// Seed 000: the baseline against K/Q/V offload, three repetitions each.
	load := func(name string) results.Run {
		r, _ := comparetest.Record("seed000/" + name)
		return r
	}
	rep, _ := compare.Compare(
		compare.Side{Label: "baseline", Runs: []results.Run{load("baseline.json")}},
		compare.Side{Label: "kvoffload", Runs: []results.Run{load("kvoffload.json")}},
		compare.Options{})
	WriteText(os.Stdout, rep, 0)
	// Output:
	// A: baseline (1 run, 2026-05-08) minimax-m27-b70/baseline
	// B: kvoffload (1 run, 2026-05-08) minimax-m27-b70/kvoffload
	//
	// Configuration (A → B):
	//   flags.nkvo: 1 → 0
	//
	// tokSOut tg64 (tok/s, higher is better; wall clock, the figure to quote)
	// baseline            kvoffload
	//  mean  ± 95% CI  n   mean  ± 95% CI  n   delta  verdict
	// 14.29  ± 6.3%    3  16.38  ± 1.6%    3  +14.6%  untested
	//
	// untested: the samples are repetitions inside one run a side, which share the machine's state of their minute; 'rigor run minimax-m27-b70/baseline minimax-m27-b70/kvoffload --rounds 5' runs A and B interleaved in one invocation and gives a verdict
	//
	// Samples:
	//   the intervals of a side with one run are over the repetitions inside it: they share the machine's state of their minute and understate the noise between runs, so they are not tested
	//
	// Warnings:
	//   model file hashes are not recorded for runs of baseline and kvoffload: the model bytes are not checked
}
