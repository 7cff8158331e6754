package run

import (
	"math"
	"slices"
	"testing"

	"github.com/rigorbench/rigor/internal/results"
)

func TestOrder(t *testing.T) {
	// One round keeps the listed order, whatever the seed.
	if got := Order(42, 1, 1, 4); !slices.Equal(got, []int{0, 1, 2, 3}) {
		t.Errorf("one round: %v", got)
	}
	// Each round is a permutation, the same for the same seed and round,
	// and the rounds do not all share one order.
	orders := map[string]bool{}
	for k := 1; k <= 8; k++ {
		o := Order(7, k, 8, 5)
		if again := Order(7, k, 8, 5); !slices.Equal(o, again) {
			t.Errorf("round %d: %v then %v from the same seed", k, o, again)
		}
		s := slices.Clone(o)
		slices.Sort(s)
		if !slices.Equal(s, []int{0, 1, 2, 3, 4}) {
			t.Errorf("round %d: %v is not a permutation", k, o)
		}
		orders[fmtInts(o)] = true
	}
	if len(orders) < 2 {
		t.Errorf("8 rounds of 5 share one order: %v", orders)
	}
	if slices.Equal(Order(7, 1, 8, 5), Order(8, 1, 8, 5)) && slices.Equal(Order(7, 2, 8, 5), Order(8, 2, 8, 5)) {
		t.Error("seeds 7 and 8 give the same orders")
	}
}

func fmtInts(v []int) string {
	b := make([]byte, 0, len(v))
	for _, x := range v {
		b = append(b, byte('0'+x))
	}
	return string(b)
}

func TestDropWarmup(t *testing.T) {
	ms := []results.Metric{
		{Name: "tokSOut", Test: "tg8", Value: 5, Samples: []float64{1, 2, 4, 6}},
		{Name: "engineTokSOut", Test: "tg8", Value: 3},
		{Name: "tokSPrompt", Test: "pp16", Value: 2, Samples: []float64{1, 2, 3}},
	}
	w := dropWarmup(ms, 2, 2)
	if got := ms[0]; !slices.Equal(got.WarmupSamples, []float64{1, 2}) || !slices.Equal(got.Samples, []float64{4, 6}) || got.Value != 5 || math.Abs(got.Stddev-math.Sqrt2) > 1e-12 {
		t.Errorf("tokSOut: %+v", got)
	}
	if ms[1].Value != 3 || ms[1].WarmupSamples != nil {
		t.Errorf("a metric without samples changed: %+v", ms[1])
	}
	if len(ms[2].Samples) != 3 || ms[2].WarmupSamples != nil {
		t.Errorf("a metric with the wrong count lost samples: %+v", ms[2])
	}
	if len(w) != 1 || w[0] != "bench.warmup: tokSPrompt pp16 has 3 samples, not 2 measured and 2 warm-up: none was discarded" {
		t.Errorf("warnings: %q", w)
	}
}
