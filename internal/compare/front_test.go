package compare

import (
	"slices"
	"testing"
	"time"

	"github.com/rigorbench/rigor/internal/results"
)

func qp(name string, speed, kld float64, baseline bool) QualityPoint {
	return QualityPoint{Point: name, Speed: MetricStat{Mean: speed}, Q: &results.QualityMeasured{KLD: kld}, Baseline: baseline}
}

func frontOf(pts []QualityPoint) []string {
	var out []string
	for i, on := range ParetoFront(pts) {
		if on {
			out = append(out, pts[i].Point)
		}
	}
	return out
}

func TestParetoFront(t *testing.T) {
	cases := []struct {
		name string
		pts  []QualityPoint
		want []string
	}{
		{"one point", []QualityPoint{qp("a", 10, 0.1, false)}, []string{"a"}},
		{"a faster and closer point beats", []QualityPoint{qp("a", 10, 0.1, false), qp("b", 12, 0.05, false)}, []string{"b"}},
		{"a trade-off keeps both", []QualityPoint{qp("a", 10, 0.01, false), qp("b", 12, 0.05, false)}, []string{"a", "b"}},
		// Equal on both: neither beats the other.
		{"ties on both", []QualityPoint{qp("a", 10, 0.05, false), qp("b", 10, 0.05, false)}, []string{"a", "b"}},
		// As fast and more divergent: beaten; as divergent and slower: beaten.
		{"a tie on one side", []QualityPoint{qp("a", 10, 0.05, false), qp("b", 10, 0.08, false), qp("c", 9, 0.05, false)}, []string{"a"}},
		// The baseline is on the front even where a 0-KLD point is faster
		// (an F16 KV cache beside the F16 baseline, timed faster by noise).
		{"the baseline by definition", []QualityPoint{qp("base", 10, 0, true), qp("same", 11, 0, false), qp("q4", 14, 0.01, false)}, []string{"base", "same", "q4"}},
		{"a slower baseline is still on it", []QualityPoint{qp("base", 5, 0, true), qp("q8", 12, 0.001, false), qp("q4", 11, 0.01, false)}, []string{"base", "q8"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := frontOf(c.pts); !slices.Equal(got, c.want) {
				t.Errorf("front %v, want %v", got, c.want)
			}
		})
	}
	// The front is of the centers: b's interval overlaps a's, but its mean
	// is faster at the same KLD, so a is off the front.
	a, b := qp("a", 10, 0.02, false), qp("b", 10.1, 0.02, false)
	a.Speed.Low, a.Speed.High = 9, 11
	b.Speed.Low, b.Speed.High = 9.1, 11.1
	if got := frontOf([]QualityPoint{a, b}); !slices.Equal(got, []string{"b"}) {
		t.Errorf("overlapping intervals: front %v, want [b] (the centers decide)", got)
	}
	if got := ParetoFront(nil); len(got) != 0 {
		t.Errorf("no points: %v", got)
	}
}

func qrun(exp, id string, start int, speed []float64, q *results.QualityMeasured) *results.Run {
	r := &results.Run{ID: id, Experiment: exp, Point: exp, Status: results.StatusOK,
		Start:   time.Date(2026, 1, 1, 0, start, 0, 0, time.UTC),
		Metrics: []results.Metric{{Name: "tokSPrompt", Test: "pp32", Unit: "tok/s", Value: 500, Samples: []float64{500, 500}}}}
	if speed != nil {
		r.Metrics = append(r.Metrics, results.Metric{Name: "tokSOut", Test: "tg16", Unit: "tok/s", Value: speed[0], Samples: speed})
	}
	if q != nil {
		r.Quality = &results.Quality{Measured: q}
	}
	return r
}

func TestSpeedQualityOf(t *testing.T) {
	m := func(kld float64) *results.QualityMeasured {
		return &results.QualityMeasured{Baseline: "qs/f16", BaselineLockDigest: "d1", Corpus: "builtin:opticks", CorpusSHA256: "c1", Ctx: 128, Chunks: 4, Tokens: 252, KLD: kld}
	}
	other := m(0.5)
	other.Ctx = 256
	runs := []*results.Run{
		qrun("qs/f16", "f1", 1, []float64{100, 102, 98}, m(0)),
		qrun("qs/q8_0", "q8old", 2, []float64{50, 50}, m(0.9)), // superseded by q8new
		qrun("qs/q8_0", "q8new", 3, []float64{120, 121, 119}, m(0.00001)),
		qrun("qs/q4_0", "q4", 4, []float64{110, 111, 109}, m(0.002)),
		qrun("qs/q2", "q2", 5, []float64{90, 91}, m(0.03)), // slower and further than q4: off the front
		qrun("qs/ctx", "c", 6, []float64{200, 200}, other), // measured otherwise
		qrun("qs/tiny", "t", 7, []float64{300, 300}, nil),  // no quality: not in the view
		qrun("qs/nospeed", "n", 8, nil, m(0.1)),            // no tokSOut
		{ID: "bad", Experiment: "qs/q4_0", Point: "qs/q4_0", Status: results.StatusFailed, Start: time.Date(2026, 1, 1, 0, 9, 0, 0, time.UTC)},
	}
	sq := SpeedQualityOf(runs, "qs/q4_0")
	if sq == nil {
		t.Fatal("no view")
	}
	if sq.Baseline != "qs/f16" || sq.Metric != "tokSOut tg16" || sq.Unit != "tok/s" || sq.Tokens != 252 || sq.Form != "full" {
		t.Errorf("view %+v", sq)
	}
	var got []string
	for _, p := range sq.Points {
		mark := ""
		if p.Pareto {
			mark = "*"
		}
		if p.Baseline {
			mark += "B"
		}
		got = append(got, p.Point+mark)
	}
	want := []string{"qs/f16*B", "qs/q8_0*", "qs/q4_0", "qs/q2"}
	if !slices.Equal(got, want) {
		t.Errorf("points %v, want %v", got, want)
	}
	if sq.Other != 1 || sq.NoSpeed != 1 || sq.Unmeasured != 0 {
		t.Errorf("other %d nospeed %d unmeasured %d, want 1 1 0", sq.Other, sq.NoSpeed, sq.Unmeasured)
	}
	if p := sq.Points[1]; p.Run != "q8new" || p.Speed.N != 3 || !(p.Speed.Low < 120 && p.Speed.High > 120) {
		t.Errorf("q8_0 point %+v: want the latest run, its 3 samples and their interval", p)
	}
	if SpeedQualityOf(runs, "qs/tiny") != nil {
		t.Error("an experiment without quality measured has a view")
	}
	// A point of the experiment that never measured quality is counted.
	sweep := qrun("qs/kv", "k1", 1, []float64{10, 10}, m(0.01))
	sweep.Point = "qs/kv[ctk=q8_0]"
	bare := qrun("qs/kv", "k2", 2, []float64{10, 10}, nil)
	bare.Point = "qs/kv[ctk=q4_0]"
	if sq := SpeedQualityOf([]*results.Run{sweep, bare}, "qs/kv"); sq == nil || sq.Unmeasured != 1 || len(sq.Points) != 1 {
		t.Errorf("sweep view %+v: want 1 point and 1 unmeasured", sq)
	}
}
