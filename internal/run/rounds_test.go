package run

import (
	"slices"
	"testing"
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
