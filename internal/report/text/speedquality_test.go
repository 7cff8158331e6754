package text

import (
	"strings"
	"testing"

	"github.com/rigorbench/rigor/internal/compare"
	"github.com/rigorbench/rigor/internal/results"
)

// The table names the baseline, marks the front, and says when the KLD is
// a top-k lower bound.
func TestWriteSpeedQuality(t *testing.T) {
	sq := &compare.SpeedQuality{Baseline: "qs/f16", Corpus: "builtin:opticks", Ctx: 128, Tokens: 252, Form: "top-20",
		Metric: "tokSOut tg16", Unit: "tok/s", Unmeasured: 1, Points: []compare.QualityPoint{
			{Point: "qs/f16", Speed: compare.MetricStat{N: 1, Mean: 100}, Q: &results.QualityMeasured{SameTop: 100, PPLRatio: 1}, Baseline: true, Pareto: true},
			{Point: "qs/q4_0", Speed: compare.MetricStat{N: 1, Mean: 90}, Q: &results.QualityMeasured{KLD: 0.002369, KLDErr: 0.0000233, SameTop: 60.7, PPLRatio: 1.0033}},
		}}
	var b strings.Builder
	writeSpeedQuality(&b, sq)
	out := b.String()
	for _, want := range []string{
		"speed and quality against qs/f16 (builtin:opticks, ctx 128, 252 tokens; tokSOut tg16, the primary output rate; ± 95% CI)\n",
		"top-20 KLD: a lower bound of the full\n",
		"0  (baseline)    100.0%     1.0000  pareto\n",
		"0.002369  ± 4.57e-05     60.7%     1.0033\n",
		"not shown: 1 point with no quality measured (each point's latest ok run)\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("lacks %q:\n%s", want, out)
		}
	}
}
