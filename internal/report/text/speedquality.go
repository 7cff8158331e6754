package text

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/rigorbench/rigor/internal/compare"
	"github.com/rigorbench/rigor/internal/compare/stats"
)

// writeSpeedQuality writes the log's speed-vs-quality table: each point's
// speed with its interval, mean KLD ± its 95% interval, same-top %, PPL
// ratio, and the Pareto front marked.
func writeSpeedQuality(b *strings.Builder, sq *compare.SpeedQuality) {
	fmt.Fprintf(b, "\nspeed and quality against %s (%s, ctx %d, %d tokens; %s, the primary output rate; ± 95%% CI)\n",
		sq.Baseline, sq.Corpus, sq.Ctx, sq.Tokens, sq.Metric)
	if sq.Form != "full" {
		fmt.Fprintf(b, "%s KLD: a lower bound of the full\n", sq.Form)
	}
	if len(sq.Points) > 0 {
		speed := sq.Metric
		if sq.Unit != "" {
			speed += " (" + sq.Unit + ")"
		}
		g := &grid{right: []bool{false, true, false, true, false, true, true, false}}
		g.rows = append(g.rows, []string{"point", speed, "± 95% CI", "mean KLD", "± 95% CI", "same top", "PPL ratio", ""})
		for _, p := range sq.Points {
			s := compare.Summary{N: p.Speed.N, Center: p.Speed.Mean, Low: p.Speed.Low, High: p.Speed.High, Confidence: 0.95}
			kld, kldCI := fmtKLD(p.Q.KLD), "± "+fmtKLD(stats.ZCritical(0.05)*p.Q.KLDErr)
			if p.Baseline {
				kld, kldCI = "0", "(baseline)"
			}
			mark := ""
			if p.Pareto {
				mark = "pareto"
			}
			g.rows = append(g.rows, []string{p.Point, compare.FormatNum(p.Speed.Mean), fmtCI(s, 0.95), kld, kldCI,
				strconv.FormatFloat(p.Q.SameTop, 'f', 1, 64) + "%", strconv.FormatFloat(p.Q.PPLRatio, 'f', 4, 64), mark})
		}
		wd := g.widths()
		for _, row := range g.rows {
			b.WriteString(strings.TrimRight(g.line(row, wd), " ") + "\n")
		}
		b.WriteString("pareto: no other point is both faster and closer to the baseline, by the means (the intervals say how sure); the baseline is on the front by definition\n")
	}
	if s := notDrawnText(sq); s != "" {
		b.WriteString(s + "\n")
	}
}

// notDrawnText says which points the view leaves out; "" when none.
func notDrawnText(sq *compare.SpeedQuality) string {
	var parts []string
	n := func(k int) string {
		if k == 1 {
			return "1 point"
		}
		return strconv.Itoa(k) + " points"
	}
	if sq.Unmeasured > 0 {
		parts = append(parts, n(sq.Unmeasured)+" with no quality measured")
	}
	if sq.Other > 0 {
		parts = append(parts, n(sq.Other)+" measured on another corpus, ctx or baseline lock")
	}
	if sq.NoSpeed > 0 {
		parts = append(parts, n(sq.NoSpeed)+" without "+sq.Metric)
	}
	if len(parts) == 0 {
		return ""
	}
	return "not shown: " + strings.Join(parts, "; ") + " (each point's latest ok run)"
}

// jsonSpeedQuality is [compare.SpeedQuality] in `rigor log --json`.
type jsonSpeedQuality struct {
	Baseline   string             `json:"baseline"`
	Corpus     string             `json:"corpus"`
	Ctx        int                `json:"ctx"`
	Tokens     int                `json:"tokens"`
	Form       string             `json:"form"`
	Metric     string             `json:"metric"`
	Unit       string             `json:"unit"`
	Points     []jsonQualityPoint `json:"points"`
	Unmeasured int                `json:"unmeasured"`
	Other      int                `json:"other"`
	NoSpeed    int                `json:"noSpeed"`
}

type jsonQualityPoint struct {
	Point    string     `json:"point"`
	Run      string     `json:"run"`
	Speed    jsonMetric `json:"speed"`
	KLD      float64    `json:"kld"`
	KLDErr   float64    `json:"kldErr"`
	SameTop  float64    `json:"sameTop"`
	PPLRatio float64    `json:"pplRatio"`
	Baseline bool       `json:"baseline"`
	Pareto   bool       `json:"pareto"`
}

func speedQualityJSON(sq *compare.SpeedQuality) *jsonSpeedQuality {
	if sq == nil {
		return nil
	}
	out := &jsonSpeedQuality{Baseline: sq.Baseline, Corpus: sq.Corpus, Ctx: sq.Ctx, Tokens: sq.Tokens, Form: sq.Form, Metric: sq.Metric, Unit: sq.Unit,
		Points: []jsonQualityPoint{}, Unmeasured: sq.Unmeasured, Other: sq.Other, NoSpeed: sq.NoSpeed}
	for _, p := range sq.Points {
		m := p.Speed
		out.Points = append(out.Points, jsonQualityPoint{Point: p.Point, Run: p.Run,
			Speed: jsonMetric{m.Key, m.Name, m.Test, m.Unit, m.N, jnum(m.Mean), jnum(m.Stddev), jnum(m.Low), jnum(m.High), jnum(m.Min), jnum(m.Max)},
			KLD:   p.Q.KLD, KLDErr: p.Q.KLDErr, SameTop: p.Q.SameTop, PPLRatio: p.Q.PPLRatio, Baseline: p.Baseline, Pareto: p.Pareto})
	}
	return out
}
