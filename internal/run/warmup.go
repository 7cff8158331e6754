package run

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"github.com/rigorbench/rigor/internal/results"
	"github.com/rigorbench/rigor/internal/spec"
)

// defaultRepetitions is llama-bench's -r default, which rigor's
// node-llama-cpp runner shares.
const defaultRepetitions = 5

// Warmup is the point as the engine runs it when its workload sets
// bench.warmup: N repetitions of each test run before the bench.r measured
// ones and are discarded, so the engine is asked for r+N (-r). It returns
// the point unchanged and 0 without a warm-up (or for a family whose
// workload has no bench.r). The record keeps the spec as written (r and
// warmup) and the argv as run (-r r+N).
func Warmup(p *spec.Point) (*spec.Point, int) {
	if p.Spec.Serve != nil {
		// A serve workload's warmup is the load generator's own:
		// unmeasured requests before the measured ones.
		return p, 0
	}
	n := intOf(p.Spec.Bench["warmup"])
	if n <= 0 {
		return p, 0
	}
	q := *p
	q.Bench = make([]spec.Arg, 0, len(p.Bench)+1)
	found := false
	for _, a := range p.Bench {
		if a.Def.Name == "r" && len(a.Values) == 1 {
			r, err := strconv.Atoi(a.Values[0])
			if err != nil {
				return p, 0
			}
			a.Values = []string{strconv.Itoa(r + n)}
			found = true
		}
		q.Bench = append(q.Bench, a)
	}
	if !found {
		q.Bench = append(q.Bench, spec.Arg{Def: spec.FlagDef{Name: "r", Spelling: "-r"}, Values: []string{strconv.Itoa(defaultRepetitions + n)}, On: true})
	}
	return &q, n
}

// repetitions is the bench.r of a point, or the default.
func repetitions(p *spec.Point) int {
	if r := intOf(p.Spec.Bench["r"]); r > 0 {
		return r
	}
	return defaultRepetitions
}

// dropWarmup moves the first n samples of every metric that has r+n of
// them into WarmupSamples, and recomputes its value and standard deviation
// over the r that are kept. A metric with another count (the engine
// printed fewer rows) keeps its samples, and the returned warning says so.
func dropWarmup(ms []results.Metric, n, r int) []string {
	var warnings []string
	for i := range ms {
		m := &ms[i]
		if len(m.Samples) == 0 {
			continue
		}
		if len(m.Samples) != r+n {
			warnings = append(warnings, fmt.Sprintf("bench.warmup: %s has %d samples, not %d measured and %d warm-up: none was discarded", m.Key(), len(m.Samples), r, n))
			continue
		}
		m.WarmupSamples = append([]float64(nil), m.Samples[:n]...)
		m.Samples = append([]float64(nil), m.Samples[n:]...)
		var sum float64
		for _, x := range m.Samples {
			sum += x
		}
		mean := sum / float64(len(m.Samples))
		var ss float64
		for _, x := range m.Samples {
			ss += (x - mean) * (x - mean)
		}
		m.Value = mean
		m.Stddev = 0
		if len(m.Samples) > 1 {
			m.Stddev = math.Sqrt(ss / float64(len(m.Samples)-1))
		}
	}
	return warnings
}

func intOf(v any) int {
	switch x := v.(type) {
	case int:
		return x
	case int64:
		return int(x)
	case float64:
		return int(x)
	case json.Number:
		i, _ := x.Int64()
		return int(i)
	}
	return 0
}
