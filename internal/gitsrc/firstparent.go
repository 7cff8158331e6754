package gitsrc

import (
	"fmt"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

// LogCommit is a commit of a first-parent walk.
type LogCommit struct {
	Hash    string
	Subject string
	// Date is the author date.
	Date time.Time
	// Parents counts the commit's parents: more than one is a merge.
	Parents int
}

// NotFirstParentError is a good commit that is not on the first-parent
// line of the bad one.
type NotFirstParentError struct {
	Good, Bad string
}

func (e *NotFirstParentError) Error() string {
	return fmt.Sprintf("%s is not on the first-parent line of %s (the line a bisect walks)", shortSHA(e.Good), shortSHA(e.Bad))
}

// FirstParents returns the commits of mirror from good to bad along bad's
// first parents, good first and bad last: the history `git log
// --first-parent good..bad` shows, in the order it happened. A merge
// stands for the commits it brought in. good must be on that line
// ([*NotFirstParentError]); limit bounds the walk (0: 100,000 commits).
func FirstParents(mirror, good, bad string, limit int) ([]LogCommit, error) {
	if limit <= 0 {
		limit = 100000
	}
	repo, _, err := openMirror(mirror)
	if err != nil {
		return nil, err
	}
	var out []LogCommit
	h := plumbing.NewHash(bad)
	for len(out) <= limit {
		c, err := repo.CommitObject(h)
		if err != nil {
			return nil, fmt.Errorf("reading commit %s of %s: %w", shortSHA(h.String()), mirror, err)
		}
		subject, _, _ := strings.Cut(strings.TrimSpace(c.Message), "\n")
		out = append(out, LogCommit{Hash: c.Hash.String(), Subject: subject, Date: c.Author.When, Parents: c.NumParents()})
		if c.Hash.String() == good {
			for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
				out[i], out[j] = out[j], out[i]
			}
			return out, nil
		}
		if c.NumParents() == 0 {
			return nil, &NotFirstParentError{Good: good, Bad: bad}
		}
		h = c.ParentHashes[0]
	}
	return nil, fmt.Errorf("%s is more than %d first-parent commits before %s", shortSHA(good), limit, shortSHA(bad))
}
