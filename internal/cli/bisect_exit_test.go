package cli

import (
	"strings"
	"testing"

	"github.com/rigorbench/rigor/internal/bisect"
)

// TestBisectExit: a bisect that names the first bad commit exits 0; one
// that cannot name a commit fails with its own code, so that a script
// tells "nothing changed" from "the range could not be split" from
// "every commit in it was skipped" (issue 29's leftover: it exited 0).
func TestBisectExit(t *testing.T) {
	f := &bisect.File{Experiment: "b/a"}
	f.Commits = []bisect.Commit{{Hash: "1111111111111111"}, {Hash: "2222222222222222"}, {Hash: "3333333333333333"}, {Hash: "4444444444444444"}}
	for _, c := range []struct {
		o    bisect.Outcome
		code int
		msg  string
	}{
		{bisect.Outcome{Ending: bisect.Found, First: 2, LastGood: 1, FirstBad: 2, Undecided: -1}, 0, ""},
		{bisect.Outcome{Ending: bisect.NoChangeEnding, LastGood: 0, FirstBad: 3, Undecided: -1}, ExitBisectNoChange,
			"rigor bisect named no commit: the endpoints 111111111111 and 444444444444 did not differ"},
		{bisect.Outcome{Ending: bisect.CouldNotSplit, LastGood: 0, FirstBad: 3, Undecided: 1}, ExitBisectUnsplit,
			"rigor bisect named no commit: it could not split 111111111111..444444444444: 222222222222 stayed undecided"},
		{bisect.Outcome{Ending: bisect.CouldNotSplit, LastGood: 0, FirstBad: 3, Undecided: -1, Skipped: []int{1, 2}}, ExitBisectSkipped,
			"rigor bisect named no commit: every commit between 111111111111 and 444444444444 was skipped"},
	} {
		err := bisectEnd(f, c.o)
		if c.code == 0 {
			if err != nil {
				t.Errorf("%s: %v, want success", c.o.Ending, err)
			}
			continue
		}
		var stderr strings.Builder
		if code := report(&stderr, err); code != c.code || !strings.Contains(stderr.String(), "rigor: error: "+c.msg) || !strings.Contains(stderr.String(), "rigor: hint: ") {
			t.Errorf("%s: exit %d, stderr %q; want exit %d and %q with a hint", c.o.Ending, code, stderr.String(), c.code, c.msg)
		}
	}
}
