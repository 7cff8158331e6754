package lock

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/rigorbench/rigor/internal/hf"
)

// checkAccess proves that the files of a hub repo can be downloaded with
// the configured token: a gated repo's model info and file list are
// public, only its files are not, so without this check a lock would
// succeed and the run fail. It sends one HEAD request for file without
// following the redirect to the CDN.
func (r *Resolver) checkAccess(ctx context.Context, repo, rev, commit, file string) error {
	u := r.hf.Endpoint() + "/" + repo + "/resolve/" + commit + "/" + escapePath(file)
	ctx, cancel := context.WithTimeout(ctx, r.opts.ProbeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodHead, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("User-Agent", "rigor")
	if r.opts.HFToken != "" {
		req.Header.Set("Authorization", "Bearer "+r.opts.HFToken)
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		// The listing worked a moment ago; a failure of this extra probe
		// is not worth failing the lock for.
		return nil
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden {
		return nil
	}
	msg := resp.Header.Get("X-Error-Message")
	if r.opts.HFToken != "" {
		msg = strings.ReplaceAll(msg, r.opts.HFToken, "<HF_TOKEN>")
	}
	return &hf.HubError{
		Status: resp.StatusCode, Code: resp.Header.Get("X-Error-Code"), Message: msg,
		Method: http.MethodHead, URL: u, Endpoint: r.hf.Endpoint(),
		Repo: repo, Revision: rev, Path: file, TokenSent: r.opts.HFToken != "", Attempts: 1,
	}
}

func escapePath(p string) string {
	parts := strings.Split(p, "/")
	for i, s := range parts {
		parts[i] = url.PathEscape(s)
	}
	return strings.Join(parts, "/")
}
