package gitsrc

import (
	"errors"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
)

func TestStripUserinfo(t *testing.T) {
	for in, want := range map[string]string{
		"http://tok:s3cret@127.0.0.1:8/eng.git":         "http://127.0.0.1:8/eng.git",
		"https://ghp_abcdef@github.com/o/r":             "https://github.com/o/r",
		"https://x-access-token:s3@github.com/o/r?x=@y": "https://github.com/o/r?x=@y",
		"git+https://u:p@h/r":                           "git+https://h/r",
		"ssh://git@github.com/o/r.git":                  "ssh://git@github.com/o/r.git",
		"ssh://git:pw@github.com/o/r.git":               "ssh://git@github.com/o/r.git",
		"git@github.com:o/r.git":                        "git@github.com:o/r.git",
		"https://github.com/o/r":                        "https://github.com/o/r",
		"/abs/path/repo":                                "/abs/path/repo",
	} {
		if got := StripUserinfo(in); got != want {
			t.Errorf("StripUserinfo(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestAuthOf(t *testing.T) {
	ep, err := transport.NewEndpoint("https://tok:s3cret-value@example.com/r.git")
	if err != nil {
		t.Fatal(err)
	}
	a, ok := authOf(ep).(*githttp.BasicAuth)
	if !ok || a.Username != "tok" || a.Password != "s3cret-value" {
		t.Errorf("authOf = %#v, want basic auth tok:s3cret-value", authOf(ep))
	}
	if ep, _ := transport.NewEndpoint("https://example.com/r.git"); authOf(ep) != nil {
		t.Error("a URL without user information has credentials")
	}
}

// A server that echoes the credentials, decoded, in its answer: the error
// text holds none of them, and errors.Is still sees what is inside.
func TestScrubCredentials(t *testing.T) {
	url := "https://x-access-token:s3cr%40t-tok@example.com/r.git"
	inner := errors.New("authentication required: bad credentials for x-access-token:s3cr@t-tok (s3cr%40t-tok)")
	err := scrubCredentials(inner, url)
	if strings.Contains(err.Error(), "s3cr") {
		t.Errorf("scrubbed error = %q", err)
	}
	if !errors.Is(err, inner) {
		t.Error("errors.Is lost the error within")
	}
	plain := errors.New("no secret here")
	if scrubCredentials(plain, url) != plain {
		t.Error("an error without credentials was wrapped")
	}
	tokenOnly := scrubCredentials(errors.New("denied for ghp_0123456789abcdef"), "https://ghp_0123456789abcdef@github.com/o/r")
	if strings.Contains(tokenOnly.Error(), "ghp_0123456789abcdef") {
		t.Errorf("a token in the user position was kept: %q", tokenOnly)
	}
}
