package cli

import (
	"testing"
	"time"
)

func TestPullLine(t *testing.T) {
	for _, c := range []struct {
		sum, total int64
		elapsed    time.Duration
		want       string
	}{
		{500e6, 2000e6, 10 * time.Second, "rigor: pulling o/m  25% 500.0 MB / 2.0 GB (50.0 MB/s, ETA 30s)"},
		{2000e6, 2000e6, 40 * time.Second, "rigor: pulling o/m 100% 2.0 GB / 2.0 GB (50.0 MB/s)"},
		{0, 10, 0, "rigor: pulling o/m   0% 0 B / 10 B (0 B/s)"},
	} {
		if got := pullLine("o/m", c.sum, c.total, c.elapsed); got != c.want {
			t.Errorf("pullLine(%d, %d, %s) = %q, want %q", c.sum, c.total, c.elapsed, got, c.want)
		}
	}
}
