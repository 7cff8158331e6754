package gitsrc

import (
	"errors"
	neturl "net/url"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"

	"github.com/rigorbench/rigor/internal/redact"
)

// StripUserinfo returns a git URL without the credentials in its user
// information: http://tok:SECRET@host/x.git and https://TOKEN@host/x.git
// become http://host/x.git and https://host/x.git; the password of any
// other scheme's URL is dropped, its user kept (ssh://git@host/x.git,
// git@host:x.git, which name an account, not a credential). A lockfile,
// a mirror's config, a record and an error name a remote so; the
// credentials reach git only from memory ([authOf]).
func StripUserinfo(url string) string {
	rawScheme, userinfo, rest, hasUser, ok := redact.SplitUserinfo(url)
	if !ok || !hasUser {
		return url
	}
	scheme := strings.ToLower(rawScheme)
	user, _, hasPw := strings.Cut(userinfo, ":")
	switch {
	case strings.HasPrefix(scheme, "http") || strings.HasSuffix(scheme, "+http") || strings.HasSuffix(scheme, "+https"):
		return rawScheme + "://" + rest
	case hasPw:
		return rawScheme + "://" + user + "@" + rest
	}
	return url
}

// authOf returns the credentials of an http(s) endpoint's user
// information as go-git's basic auth, sent from memory; nil when it has
// none (go-git then sends nothing, and a server that wants credentials
// answers 401).
func authOf(ep *transport.Endpoint) transport.AuthMethod {
	if ep == nil || ep.Protocol != "http" && ep.Protocol != "https" || ep.User == "" && ep.Password == "" {
		return nil
	}
	return &githttp.BasicAuth{Username: ep.User, Password: ep.Password}
}

// credentialsOf returns the secret parts of a URL's user information,
// decoded and as written: the password, and the user of an http(s) URL
// (a token alone in the user position).
func credentialsOf(url string) []string {
	rawScheme, userinfo, _, hasUser, ok := redact.SplitUserinfo(url)
	if !ok || !hasUser {
		return nil
	}
	user, pw, hasPw := strings.Cut(userinfo, ":")
	var out []string
	add := func(v string) {
		if v == "" {
			return
		}
		out = append(out, v)
		if u, err := neturl.PathUnescape(v); err == nil && u != v {
			out = append(out, u)
		}
	}
	if hasPw {
		add(pw)
		// A server echoing the decoded credentials writes user:password.
		add(user + ":" + pw)
	}
	if scheme := strings.ToLower(rawScheme); strings.Contains(scheme, "http") && (!hasPw || len(user) >= 16) {
		add(user)
	}
	return out
}

// credError is an error whose text no longer holds the credentials of
// the URL it concerns (a server that echoes them in a 401 body, an error
// that quotes the URL); errors.Is and errors.As see the error within.
type credError struct {
	err error
	msg string
}

func (e *credError) Error() string { return e.msg }
func (e *credError) Unwrap() error { return e.err }

// scrubCredentials returns err with every credential of url replaced by
// <redacted> in its text, or err itself when its text holds none.
func scrubCredentials(err error, url string) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	creds := credentialsOf(url)
	// Longest first, so that user:password goes before password.
	for changed := true; changed; {
		changed = false
		for k := 1; k < len(creds); k++ {
			if len(creds[k]) > len(creds[k-1]) {
				creds[k], creds[k-1] = creds[k-1], creds[k]
				changed = true
			}
		}
	}
	out := msg
	for _, c := range creds {
		out = strings.ReplaceAll(out, c, redact.Mark)
	}
	if out == msg {
		return err
	}
	var ce *credError
	if errors.As(err, &ce) && ce == err {
		return &credError{err: ce.err, msg: out}
	}
	return &credError{err: err, msg: out}
}
