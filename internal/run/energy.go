package run

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/rigorbench/rigor/internal/hoststate"
	"github.com/rigorbench/rigor/internal/metric"
	"github.com/rigorbench/rigor/internal/results"
)

// timedFrom says how the timed section was found when the engine's
// repetitions give it.
const timedFrom = "the engine's repetitions (tokens over tok/s), ending when it exited"

// timedFromEngine says so when the engine reported its measured part's
// length (the load generator's duration).
const timedFromEngine = "the measured part's duration as the engine reported it, ending when it exited"

// testTokens returns the tokens one repetition of a llama-bench test
// processes in its timed part: "tg64" 64, "pp512" 512, "pp512+tg128" 640;
// a depth ("tg128@pp4096", "tg64 @ d512") is filled before the clock
// starts and does not count. 0 when the name says nothing (a vLLM mode, a
// serve run).
func testTokens(test string) float64 {
	head, _, _ := strings.Cut(test, "@")
	var n float64
	for part := range strings.SplitSeq(strings.TrimSpace(head), "+") {
		part = strings.TrimSpace(part)
		if !strings.HasPrefix(part, "pp") && !strings.HasPrefix(part, "tg") {
			return 0
		}
		v, err := strconv.Atoi(part[2:])
		if err != nil || v <= 0 {
			return 0
		}
		n += float64(v)
	}
	return n
}

// timedSeconds is how long the engine's timed repetitions took, warm-up
// ones included: each repetition of each throughput test is its tokens
// over its rate. 0 when any test's tokens are unknown (the section cannot
// be placed then).
func timedSeconds(ms []results.Metric) float64 {
	var secs float64
	for _, m := range ms {
		if metric.PerJoule(m.Name) == "" {
			continue // engine counters time the same repetitions again
		}
		n := testTokens(m.Test)
		if n == 0 {
			return 0
		}
		samples := append(append([]float64(nil), m.WarmupSamples...), m.Samples...)
		if len(samples) == 0 && m.Value > 0 {
			samples = []float64{m.Value}
		}
		for _, r := range samples {
			if r <= 0 {
				return 0
			}
			secs += n / r
		}
	}
	return secs
}

// energyMetrics derives, from a run's throughput metrics and the average
// power of the engine's timed section, tokens per joule (tokPerJOut, …:
// each repetition's tok/s over the section's W) and the energy of each
// repetition (energyJ: W × tokens / tok/s). One average power serves
// every test of the section, which the Derived text says.
func energyMetrics(ms []results.Metric, te *hoststate.TimedEnergy) []results.Metric {
	if te == nil || te.AvgW <= 0 {
		return nil
	}
	how := fmt.Sprintf("over %s W, the average power of %s during the engine's timed section (%s s, %s)",
		strconv.FormatFloat(te.AvgW, 'f', -1, 64), strings.Join(te.Domains, " + "),
		strconv.FormatFloat(te.Seconds, 'g', 3, 64), te.From)
	var out []results.Metric
	for _, m := range ms {
		name := metric.PerJoule(m.Name)
		if name == "" {
			continue
		}
		perJ := results.Metric{Name: name, Test: m.Test, Unit: metric.TokPerJ, Direction: results.HigherIsBetter,
			Value: m.Value / te.AvgW, Stddev: m.Stddev / te.AvgW, Derived: m.Name + " " + how}
		for _, s := range m.Samples {
			perJ.Samples = append(perJ.Samples, s/te.AvgW)
		}
		out = append(out, perJ)
		n := testTokens(m.Test)
		if n == 0 || m.Value <= 0 {
			continue
		}
		e := results.Metric{Name: metric.EnergyJ, Test: m.Test, Unit: metric.Joule, Direction: results.LowerIsBetter,
			Value: te.AvgW * n / m.Value, Derived: "the tokens of one repetition over its " + m.Name + ", " + how}
		for _, s := range m.Samples {
			if s > 0 {
				e.Samples = append(e.Samples, te.AvgW*n/s)
			}
		}
		out = append(out, e)
	}
	return out
}
