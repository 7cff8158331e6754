package suggest

import "testing"

func TestDistance(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"abc", "", 3}, {"", "abc", 3}, {"nkvo", "nkvo", 0}, {"nkvoo", "nkvo", 1},
		{"kitten", "sitting", 3}, {"flaw", "lawn", 2}, {"ü", "u", 1}, {"mian", "main", 2},
	} {
		if got := Distance(c.a, c.b); got != c.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}
