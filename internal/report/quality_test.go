package report

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/rigorbench/rigor/internal/results"
)

// qualityRuns are the quick start's three quality experiments (F16 the
// baseline, Q8_0, Q4_0), a fourth slower and further than Q4_0 (off the
// front), and an experiment of the package with no quality measured.
func qualityRuns() []*results.Run {
	m := func(kld, sameTop float64) *results.Quality {
		return &results.Quality{Measured: &results.QualityMeasured{Tool: "node-llama-cpp", Baseline: "qs/f16", BaselineLockDigest: "d1",
			Corpus: "builtin:opticks", CorpusSHA256: "c1", Ctx: 128, Chunks: 4, Tokens: 252,
			KLD: kld, KLDErr: kld / 10, KLD99: kld * 5, SameTop: sameTop, PPLRatio: 1 + kld}}
	}
	run := func(exp string, minute int, speed []float64, q *results.Quality) *results.Run {
		return &results.Run{ID: "r-" + strings.TrimPrefix(exp, "qs/"), Experiment: exp, Point: exp, Status: results.StatusOK,
			Start:   time.Date(2026, 3, 1, 10, minute, 0, 0, time.UTC),
			Metrics: []results.Metric{{Name: "tokSOut", Test: "tg16", Unit: "tok/s", Direction: "higher", Value: speed[0], Samples: speed}},
			Quality: q}
	}
	return []*results.Run{
		run("qs/f16", 1, []float64{100, 102, 98, 101, 99}, m(0, 100)),
		run("qs/q8_0", 2, []float64{130, 131, 129, 130, 130}, m(1.4e-5, 98.4)),
		run("qs/q4_0", 3, []float64{160, 162, 158, 161, 159}, m(2.37e-3, 60.7)),
		run("qs/q2_k", 4, []float64{150, 151, 149, 150, 150}, m(3e-2, 40)),
		run("qs/tiny", 5, []float64{300, 301, 299}, nil),
	}
}

func TestBuild_speedQuality(t *testing.T) {
	site, err := Build(qualityRuns(), Options{Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	pages := pageMap(site)
	page := pages["experiments/qs/q4_0.html"]
	i := strings.Index(page, `<h2 id="quality">Speed and quality</h2>`)
	if i < 0 {
		t.Fatalf("q4_0's page has no speed-and-quality section")
	}
	sec := page[i:]
	sec = sec[:strings.Index(sec, "</table>")]
	svg := sec[strings.Index(sec, "<svg"):strings.Index(sec, "</svg>")]
	// The scatter: a title and description naming every point, the axes,
	// the baseline at the left edge, the front in the legend.
	for _, want := range []string{`id="plot-quality"`, "qs/q4_0: speed against quality (KL divergence from qs/f16)",
		"mean KL divergence from qs/f16 (log), lower is better ←", "tokSOut tg16 tok/s, higher is better ↑",
		">0 (baseline)</text>", ">Pareto front</text>", ">beaten</text>",
		">f16</text>", ">q8_0</text>", ">q4_0</text>", ">q2_k</text>",
		"qs/q2_k 0.030000 KLD, 150.0 tok/s", "qs/q4_0 0.002370 KLD, 160.0 tok/s (Pareto front)", "qs/q8_0 1.40e-05 KLD"} {
		if !strings.Contains(svg, want) {
			t.Errorf("the scatter lacks %q", want)
		}
	}
	if strings.Contains(sec, "qs/tiny") {
		t.Errorf("an experiment without quality measured is in the view")
	}
	// The table: the front marked, the baseline named, the caption says
	// which speed.
	rowRE := regexp.MustCompile(`<tr><td>(qs/[a-z0-9_]+)( <span class="drift">\(baseline\)</span>)?<td class="mono">r-[a-z0-9_]+<td class="num">([^<]+)<td class="num">5<td class="num">([^<]+)<td class="num">[^<]+<td class="num">[^<]+<td class="num">[^<]+<td>(<strong>pareto</strong>)?</tr>`)
	var got []string
	for _, m := range rowRE.FindAllStringSubmatch(sec, -1) {
		s := m[1]
		if m[2] != "" {
			s += " baseline"
		}
		if m[5] != "" {
			s += " pareto"
		}
		got = append(got, s)
	}
	want := []string{"qs/f16 baseline pareto", "qs/q8_0 pareto", "qs/q4_0 pareto", "qs/q2_k"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("table rows %q, want %q", got, want)
	}
	if !strings.Contains(sec, "tokSOut tg16 (the primary output rate") {
		t.Errorf("the caption does not say which speed")
	}
	// Every member's page has the view; the experiment without quality
	// has none.
	for _, p := range []string{"experiments/qs/f16.html", "experiments/qs/q8_0.html", "experiments/qs/q2_k.html"} {
		if !strings.Contains(pages[p], `id="plot-quality"`) {
			t.Errorf("%s has no scatter", p)
		}
	}
	if strings.Contains(pages["experiments/qs/tiny.html"], `id="quality"`) {
		t.Errorf("tiny's page has a quality section")
	}
}

// A point whose latest ok run measured no quality is not drawn, and the
// page says how many.
func TestBuild_speedQualityNotDrawn(t *testing.T) {
	runs := qualityRuns()
	later := *runs[2]
	later.ID, later.Quality, later.Start = "r-q4_0-later", nil, later.Start.Add(time.Hour)
	// A sweep of KV-cache types whose q4_0 point measured nothing.
	kv8, kv4 := *runs[1], *runs[1]
	kv8.ID, kv8.Experiment, kv8.Point = "r-kv8", "qs/kv", "qs/kv[ctk=q8_0]"
	kv4.ID, kv4.Experiment, kv4.Point, kv4.Quality = "r-kv4", "qs/kv", "qs/kv[ctk=q4_0]", nil
	runs = append(runs, &later, &kv8, &kv4)
	site, err := Build(runs, Options{Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	pages := pageMap(site)
	if page := pages["experiments/qs/q8_0.html"]; strings.Contains(page, ">q4_0</text>") || !strings.Contains(page, ">q8_0</text>") {
		t.Errorf("q4_0's latest ok run measured nothing, and it is drawn (or q8_0 is not)")
	}
	if strings.Contains(pages["experiments/qs/q4_0.html"], `id="quality"`) {
		t.Errorf("q4_0's page has a quality section, and its latest ok run measured nothing")
	}
	kv := pages["experiments/qs/kv.html"]
	if !strings.Contains(kv, "Not drawn: 1 point with no quality measured.") || !strings.Contains(kv, ">kv[ctk=q8_0]</text>") {
		t.Errorf("the sweep's page does not draw its measured point or does not say its other is not drawn")
	}
}

// An incremental report keeps the page of an experiment with a
// speed-vs-quality view only while its peers' records are those it was
// built from (the group's PeersKey); other pages do not depend on peers.
func TestWriteGroups_speedQualityPeers(t *testing.T) {
	runs := qualityRuns()
	groups := func(peersKey string) []Group {
		var gs []Group
		for _, r := range runs {
			x := results.Summarize(r)
			gs = append(gs, Group{ID: r.Experiment, Key: "k-" + r.ID, Runs: 1, PeersKey: peersKey,
				Summaries: func() ([]*results.Summary, error) { return []*results.Summary{x}, nil },
				Load:      func(*results.Summary) (*results.Run, error) { return r, nil },
				Peers: func() ([]*results.Run, error) {
					var out []*results.Run
					for _, o := range runs {
						if o != r {
							out = append(out, o)
						}
					}
					return out, nil
				}})
		}
		return gs
	}
	dir := t.TempDir() + "/report"
	site, err := WriteGroups(dir, groups("p1"), nil, Options{Format: "f"})
	if err != nil {
		t.Fatal(err)
	}
	if page, _ := os.ReadFile(filepath.Join(dir, "experiments", "qs", "q4_0.html")); !strings.Contains(string(page), ">q8_0</text>") {
		t.Fatalf("an incremental build does not draw the peers")
	}
	site, err = WriteGroups(dir, groups("p1"), ReadCache(dir, "f"), Options{Format: "f"})
	if err != nil {
		t.Fatal(err)
	}
	if site.Kept != 5 {
		t.Errorf("same records: %d experiments kept, want 5", site.Kept)
	}
	site, err = WriteGroups(dir, groups("p2"), ReadCache(dir, "f"), Options{Format: "f"})
	if err != nil {
		t.Fatal(err)
	}
	if site.Kept != 1 { // qs/tiny, with no view
		t.Errorf("a peer changed: %d experiments kept, want 1 (the one without a speed-vs-quality view)", site.Kept)
	}
	site, err = WriteGroups(dir, groups(""), ReadCache(dir, "f"), Options{Format: "f"})
	if err != nil {
		t.Fatal(err)
	}
	if site.Kept != 1 {
		t.Errorf("peers of unknown key: %d experiments kept, want 1", site.Kept)
	}
}
