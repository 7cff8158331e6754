package gitsrc

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// ErrOffline is returned by [Fetch] when [Options.Offline] forbids the network.
var ErrOffline = errors.New("offline")

// AmbiguousError reports a short sha that is the prefix of several commits.
type AmbiguousError struct {
	URL    string
	Prefix string
	// Candidates are the matching commits, sorted, each as the full sha, a
	// space and the first line of its message.
	Candidates []string
}

// Error names the prefix and every candidate.
func (e *AmbiguousError) Error() string {
	return fmt.Sprintf("short sha %q of %s is ambiguous: %d commits match: %s",
		e.Prefix, e.URL, len(e.Candidates), strings.Join(e.Candidates, "; "))
}

// RefNotFoundError reports a ref that names no branch, tag or commit of URL.
type RefNotFoundError struct {
	URL string
	Ref string
	// Suggestions are the remote's branch and tag names nearest to Ref, best
	// first; possibly none.
	Suggestions []string
	// Offline is set when only the cache mirror was searched.
	Offline bool
}

// Error names the ref, the URL and any suggestions.
func (e *RefNotFoundError) Error() string {
	var b strings.Builder
	if e.Offline {
		fmt.Fprintf(&b, "ref %q not found in the cache mirror of %s (offline: the remote was not asked)", e.Ref, e.URL)
	} else {
		fmt.Fprintf(&b, "ref %q not found in %s: no branch, tag or commit has that name", e.Ref, e.URL)
	}
	if len(e.Suggestions) > 0 {
		fmt.Fprintf(&b, " (did you mean %s?)", strings.Join(e.Suggestions, ", "))
	}
	return b.String()
}

// NoMirrorError reports that an offline resolution found no mirror of URL in
// the cache.
type NoMirrorError struct {
	URL   string
	Cache string // the cache directory searched
}

// Error names the cache and the URL.
func (e *NoMirrorError) Error() string {
	return fmt.Sprintf("offline: the cache %s has no mirror of %s; run without --offline to fetch it", e.Cache, e.URL)
}

// UnreachableError reports a remote whose host could not be reached: DNS
// failure, connection refused, no route, or no answer within the timeout.
type UnreachableError struct {
	URL  string
	Host string
	Err  error
}

// Error names the URL and the host.
func (e *UnreachableError) Error() string {
	return fmt.Sprintf("cannot reach %s: host %s is unreachable: %v", e.URL, e.Host, e.Err)
}

// Unwrap returns the network error.
func (e *UnreachableError) Unwrap() error { return e.Err }

// TimeoutError reports a network operation on URL that did not finish within
// the timeout although the host answered.
type TimeoutError struct {
	URL     string
	Op      string // "listing refs of" or "fetching"
	Timeout time.Duration
	// Silent is set when the remote sent nothing for Timeout (it accepted
	// the connection and did not answer, or stalled mid-transfer), rather
	// than the operation outlasting its whole deadline.
	Silent bool
}

// Error names the operation, the URL and the timeout.
func (e *TimeoutError) Error() string {
	if e.Silent {
		return fmt.Sprintf("%s %s: timed out: the remote sent nothing for %s", e.Op, e.URL, e.Timeout)
	}
	return fmt.Sprintf("%s %s: timed out after %s", e.Op, e.URL, e.Timeout)
}

// PatchError reports a patch that does not apply strictly: which patch, which
// file, which hunk, and what git said.
type PatchError struct {
	Patch string // the patch file, as given
	// Commit is the commit the patch was applied to (after the patches before
	// it in the list).
	Commit string
	// Position is the patch's 1-based place in the list; the patches before
	// it applied.
	Position int
	// File is the path in the source tree that failed, when git named one.
	File string
	// Hunk is the failing hunk's header ("@@ -123,7 +123,8 @@ ..."), when
	// found in the patch.
	Hunk string
	// HunkNumber is the 1-based index of Hunk among the hunks of File in the
	// patch; 0 when unknown.
	HunkNumber int
	// Line is the line of File where git expected the hunk; 0 when unknown.
	Line int
	// Detail is what git reported, one error per line.
	Detail string
}

// Error names the patch, the commit, the file and the hunk.
func (e *PatchError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "patch %s does not apply at %s", e.Patch, shortSHA(e.Commit))
	if e.Position > 1 {
		fmt.Fprintf(&b, " after the %d patches before it", e.Position-1)
	}
	if e.File != "" {
		fmt.Fprintf(&b, ": %s", e.File)
	}
	switch {
	case e.Hunk != "" && e.HunkNumber > 0:
		fmt.Fprintf(&b, ": hunk #%d %q", e.HunkNumber, e.Hunk)
	case e.Line > 0:
		fmt.Fprintf(&b, ": hunk at line %d", e.Line)
	}
	if e.Detail != "" {
		fmt.Fprintf(&b, ": %s", strings.ReplaceAll(e.Detail, "\n", "; "))
	}
	return b.String()
}

func shortSHA(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}
