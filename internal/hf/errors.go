package hf

import (
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"time"
)

// ErrOffline is returned, wrapped, by every operation that would need the
// network while offline mode (HF_HUB_OFFLINE) is on.
var ErrOffline = errors.New("hub offline mode is on (HF_HUB_OFFLINE), no request made")

// Error codes the hub sends in the X-Error-Code header.
const (
	CodeRepoNotFound     = "RepoNotFound"
	CodeRevisionNotFound = "RevisionNotFound"
	CodeEntryNotFound    = "EntryNotFound"
	CodeGatedRepo        = "GatedRepo"
)

// HubError is an error answer from the hub: a non-2xx status, with the
// hub's X-Error-Code and message when it sent them.
type HubError struct {
	// Status is the HTTP status code.
	Status int
	// Code is the X-Error-Code header (see the Code constants), or empty.
	Code string
	// Message is the X-Error-Message header, or the "error" field of the
	// JSON body, or a short excerpt of a text body; the token is redacted.
	Message string
	// Method and URL name the request that failed (the URL never holds
	// the token, which travels in a header).
	Method, URL string
	// Endpoint is the hub base URL the client used.
	Endpoint string
	// Repo, Revision and Path say what was asked for; Path is empty for
	// requests about the whole repo.
	Repo, Revision, Path string
	// TokenSent says whether the request carried a token; the hints differ.
	TokenSent bool
	// Attempts is how many times the request was tried (more than one when
	// retries were exhausted).
	Attempts int
	// Server is the scheme and host that answered when it is not the
	// hub's (the CDN a download was redirected to), "" for the hub.
	Server string
}

// Error says what was asked for, what the hub answered and its message.
func (e *HubError) Error() string {
	var b strings.Builder
	b.WriteString(e.subject())
	b.WriteString(": ")
	switch e.Code {
	case CodeRepoNotFound:
		b.WriteString("repository not found")
	case CodeRevisionNotFound:
		b.WriteString("revision not found")
	case CodeEntryNotFound:
		b.WriteString("file not found")
	case CodeGatedRepo:
		b.WriteString("gated repository, access denied")
	default:
		if e.Server != "" {
			b.WriteString("download server " + e.Server + " (the hub's redirect) answered")
		} else {
			b.WriteString("hub answered")
		}
	}
	fmt.Fprintf(&b, " (%d %s", e.Status, http.StatusText(e.Status))
	if e.Code != "" {
		fmt.Fprintf(&b, ", %s", e.Code)
	}
	b.WriteString(")")
	if e.Message != "" {
		fmt.Fprintf(&b, ": %s", e.Message)
	}
	if e.Attempts > 1 {
		fmt.Fprintf(&b, " (gave up after %d attempts)", e.Attempts)
	}
	return b.String()
}

// subject names what the request was about: "org/name@rev: file".
func (e *HubError) subject() string {
	s := e.Repo
	if s == "" {
		s = e.Method + " " + e.URL
	}
	if e.Revision != "" {
		s += "@" + e.Revision
	}
	if e.Path != "" {
		s += ": " + e.Path
	}
	return s
}

// Hint returns one sentence telling the user what to do about the error,
// or "" when there is nothing useful to say.
func (e *HubError) Hint() string {
	page := e.Endpoint + "/" + e.Repo
	if e.Server != "" {
		// HF_TOKEN is never sent to the CDN; its link is signed by the hub.
		switch {
		case e.Status == http.StatusUnauthorized, e.Status == http.StatusForbidden:
			return fmt.Sprintf("the download server %s refused the link the hub signed for it (the token is not sent there): pull again for a fresh link; if it keeps refusing, a proxy or firewall may stand between you and %s", e.Server, e.Server)
		case e.Status >= 500, e.Status == http.StatusTooManyRequests:
			return fmt.Sprintf("the download server %s is failing: retry later", e.Server)
		}
		return ""
	}
	switch {
	case e.Code == CodeGatedRepo && e.TokenSent:
		return fmt.Sprintf("the account of HF_TOKEN has not been granted access: accept the terms on %s with that account", page)
	case e.Code == CodeGatedRepo:
		return fmt.Sprintf("accept the terms on %s, then set HF_TOKEN to a token of that account", page)
	case e.Code == CodeRepoNotFound && e.TokenSent:
		return fmt.Sprintf("check the repo id %q (owner/name, as in %s); if it is private, the account of HF_TOKEN has no access to it", e.Repo, page)
	case e.Code == CodeRepoNotFound:
		return fmt.Sprintf("check the repo id %q (owner/name, as in %s); private repos need HF_TOKEN", e.Repo, page)
	case e.Code == CodeRevisionNotFound:
		return fmt.Sprintf("check the revision %q: list the repo's branches and tags at %s/api/models/%s/refs", e.Revision, e.Endpoint, e.Repo)
	case e.Code == CodeEntryNotFound:
		return fmt.Sprintf("check the file path %q: list the files at %s/tree/%s", e.Path, page, e.Revision)
	case e.Status == http.StatusUnauthorized && e.TokenSent:
		return "the hub rejected HF_TOKEN: check that the token is valid and not expired"
	case e.Status == http.StatusUnauthorized, e.Status == http.StatusForbidden && !e.TokenSent:
		return "set HF_TOKEN to a token with read access (https://huggingface.co/settings/tokens)"
	case e.Status == http.StatusForbidden:
		return "the account of HF_TOKEN has no access: check the token's permissions"
	case e.Status == http.StatusTooManyRequests && !e.TokenSent:
		return "the hub is rate limiting: wait and retry; authenticated requests (HF_TOKEN) get higher limits"
	case e.Status == http.StatusTooManyRequests:
		return "the hub is rate limiting: wait a few minutes and retry"
	case e.Status >= 500:
		return fmt.Sprintf("the hub at %s is failing: retry later, or set HF_HUB_OFFLINE=1 to use the local cache", e.Endpoint)
	}
	return ""
}

// TimeoutError says the hub did not answer (or stalled mid-transfer) within
// the client's timeout.
type TimeoutError struct {
	Endpoint    string        // hub base URL
	Method, URL string        // the request that timed out
	After       time.Duration // the client's timeout
	Attempts    int           // tries made, retries included
}

// Error names the timeout, the endpoint and the request.
func (e *TimeoutError) Error() string {
	s := fmt.Sprintf("hub did not answer within %s at %s (%s %s)", fmtDuration(e.After), e.Endpoint, e.Method, e.URL)
	if e.Attempts > 1 {
		s += fmt.Sprintf(" (gave up after %d attempts)", e.Attempts)
	}
	return s
}

// Timeout reports true, like net.Error.
func (e *TimeoutError) Timeout() bool { return true }

// Hint tells the user what to do.
func (e *TimeoutError) Hint() string {
	return "check the network and HF_ENDPOINT, raise the timeout, or set HF_HUB_OFFLINE=1 to use the local cache"
}

// UnreachableError says the hub could not be reached at all: connection
// refused, DNS failure, TLS failure.
type UnreachableError struct {
	Endpoint string // hub base URL
	Attempts int    // tries made, retries included
	Err      error  // the network error, token redacted
	// Server is the scheme and host that could not be reached when it is
	// not the hub's (the CDN a download was redirected to).
	Server string
}

// Error names the endpoint and the network error.
func (e *UnreachableError) Error() string {
	s := fmt.Sprintf("hub unreachable at %s: %v", e.Endpoint, e.Err)
	if e.Server != "" {
		s = fmt.Sprintf("download server unreachable at %s (the hub %s redirected there): %v", e.Server, e.Endpoint, e.Err)
	}
	if e.Attempts > 1 {
		s += fmt.Sprintf(" (gave up after %d attempts)", e.Attempts)
	}
	return s
}

// Unwrap returns the network error.
func (e *UnreachableError) Unwrap() error { return e.Err }

// Hint tells the user what to do.
func (e *UnreachableError) Hint() string {
	if e.Server != "" {
		return "check that this machine can reach " + e.Server + ", where the hub sends downloads (a proxy or firewall may block it), or set HF_HUB_OFFLINE=1 to use only the local cache"
	}
	return "check the network and HF_ENDPOINT (now " + e.Endpoint + "), or set HF_HUB_OFFLINE=1 to use only the local cache"
}

// ChecksumError says downloaded bytes do not hash to what the lock says.
type ChecksumError struct {
	// Repo and Path name the file.
	Repo, Path string
	// Algo is "sha256" or "git-sha1" (the git blob id of a small file).
	Algo string
	// Want is the locked hash, Got the hash of the bytes received.
	Want, Got string
}

// Error names the file and both hashes.
func (e *ChecksumError) Error() string {
	return fmt.Sprintf("%s: %s: %s mismatch: want %s, got %s (download rejected)", e.Repo, e.Path, e.Algo, e.Want, e.Got)
}

// Hint tells the user what to do.
func (e *ChecksumError) Hint() string {
	return "the bytes served differ from the lock: retry the pull; if it persists the file changed on the hub or a proxy is corrupting it"
}

func fmtDuration(d time.Duration) string {
	if d%time.Second == 0 {
		return fmt.Sprintf("%ds", int(d/time.Second))
	}
	return d.String()
}

// redactor removes a secret from strings.
type redactor string

func (r redactor) redact(s string) string {
	if r == "" {
		return s
	}
	return strings.ReplaceAll(s, string(r), "[REDACTED]")
}

// redactedError hides the token in a wrapped error's message while keeping
// it inspectable with errors.Is/As.
type redactedError struct {
	r   redactor
	err error
}

func (e *redactedError) Error() string { return e.r.redact(e.err.Error()) }
func (e *redactedError) Unwrap() error { return e.err }

func (r redactor) wrap(err error) error {
	if err == nil || r == "" || !strings.Contains(err.Error(), string(r)) {
		return err
	}
	return &redactedError{r, err}
}

// DiskFullError says the disk (or the user's quota) had no room for the
// rest of a download.
type DiskFullError struct {
	// Path is the partial file that was being written.
	Path string
	// Need is how many more bytes the file needed.
	Need int64
	// Kept says the partial file was kept (--keep-partial).
	Kept bool
	Err  error
}

// Error says what ran out, where, and how much more was needed.
func (e *DiskFullError) Error() string {
	return fmt.Sprintf("no space left on the disk of %s: %s more needed for this file", filepath.Dir(e.Path), humanSize(e.Need))
}

// Unwrap returns the write error.
func (e *DiskFullError) Unwrap() error { return e.Err }

// Hint tells the user what to do.
func (e *DiskFullError) Hint() string {
	h := fmt.Sprintf("free at least %s in %s (or point HF_HUB_CACHE at a disk with room), then pull again", humanSize(e.Need), filepath.Dir(filepath.Dir(e.Path)))
	if e.Kept {
		return h + "; the partial file is kept and the download resumes from it"
	}
	return h + "; the partial file was removed (--keep-partial keeps it to resume)"
}

// humanSize writes a byte count with a binary unit: 1.5 GiB.
func humanSize(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	d, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		d *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(d), "KMGTPE"[exp])
}
