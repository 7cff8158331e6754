package hf

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"
)

// FileInfo is one file of a repo at a commit, as the tree endpoint lists it.
type FileInfo struct {
	// Path is the slash-separated path in the repo.
	Path string `json:"path"`
	// Size is the size of the content in bytes (for LFS files, of the
	// content, not of the pointer).
	Size int64 `json:"size"`
	// SHA256 is the sha256 of the content for LFS files (the tree's
	// lfs.oid); empty for small files stored in git, unless the caller
	// computed it.
	SHA256 string `json:"sha256,omitempty"`
	// BlobID is the git blob sha1 (the tree's oid): of the content for a
	// small file, of the LFS pointer for an LFS file.
	BlobID string `json:"blobId,omitempty"`
	// LFS says the content is stored in LFS (or Xet) rather than git.
	LFS bool `json:"lfs,omitempty"`
}

// ValidateRepoID checks that id has the form owner/name with the
// characters the hub allows (letters, digits, "-", "_", "."), no "--" or
// "..", no leading or trailing "-" or ".", and at most 96 characters.
func ValidateRepoID(id string) error {
	owner, name, ok := strings.Cut(id, "/")
	if !ok || strings.Contains(name, "/") {
		return fmt.Errorf("invalid repo id %q: want owner/name", id)
	}
	if len(id) > 96 {
		return fmt.Errorf("invalid repo id %q: longer than 96 characters", id)
	}
	for _, part := range []string{owner, name} {
		if part == "" {
			return fmt.Errorf("invalid repo id %q: want owner/name", id)
		}
		for _, r := range part {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.') {
				return fmt.Errorf("invalid repo id %q: character %q not allowed", id, r)
			}
		}
		if strings.Contains(part, "--") || strings.Contains(part, "..") {
			return fmt.Errorf("invalid repo id %q: \"--\" and \"..\" are not allowed", id)
		}
		if strings.ContainsAny(part[:1], "-.") || strings.ContainsAny(part[len(part)-1:], "-.") {
			return fmt.Errorf("invalid repo id %q: parts cannot start or end with \"-\" or \".\"", id)
		}
	}
	return nil
}

// escapeAll percent-encodes s with no safe characters except the
// unreserved ones, like Python's quote(s, safe=""): "refs/pr/1" becomes
// "refs%2Fpr%2F1".
func escapeAll(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		ch := s[i]
		if ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || ch == '-' || ch == '_' || ch == '.' || ch == '~' {
			b.WriteByte(ch)
		} else {
			fmt.Fprintf(&b, "%%%02X", ch)
		}
	}
	return b.String()
}

// escapePath percent-encodes each segment of a slash-separated path.
func escapePath(p string) string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		segs[i] = escapeAll(s)
	}
	return strings.Join(segs, "/")
}

// ResolveRevision returns the 40-hex commit that rev (a branch, tag,
// "refs/pr/N" or commit; "" means "main") points to in repo.
func (c *Client) ResolveRevision(ctx context.Context, repo, rev string) (string, error) {
	if err := ValidateRepoID(repo); err != nil {
		return "", err
	}
	if rev == "" {
		rev = "main"
	}
	r := request{
		method: http.MethodGet,
		url:    c.endpoint + "/api/models/" + repo + "/revision/" + escapeAll(rev),
		repo:   repo,
		rev:    rev,
	}
	var info struct {
		SHA string `json:"sha"`
	}
	if _, err := c.getJSON(ctx, r, &info); err != nil {
		if namesRequest(err, repo, rev) {
			return "", fmt.Errorf("resolving %w", err) // no "repo@rev: repo@rev:"
		}
		return "", fmt.Errorf("resolving %s@%s: %w", repo, rev, err)
	}
	if !isHex(info.SHA, 40) {
		return "", fmt.Errorf("resolving %s@%s: response of GET %s: sha %q is not a 40-hex commit", repo, rev, r.url, c.red.redact(clip(info.SHA)))
	}
	return strings.ToLower(info.SHA), nil
}

// Stat asks the hub whether it still serves file of repo at commit: a HEAD
// of resolve/{commit}/{file}, as huggingface_hub's get_hf_file_metadata
// sends, without following an LFS file's redirect to the CDN. It returns
// nil when the hub answers with the file or its redirect, and the hub's
// answer otherwise: a [*HubError] with [CodeEntryNotFound] for a file the
// commit lists but the hub no longer has, RepoNotFound, RevisionNotFound,
// GatedRepo.
func (c *Client) Stat(ctx context.Context, repo, commit, file string) error {
	if err := ValidateRepoID(repo); err != nil {
		return err
	}
	if err := validFilePath(file); err != nil {
		return err
	}
	r := request{method: http.MethodHead, url: c.endpoint + "/" + repo + "/resolve/" + escapeAll(commit) + "/" + escapePath(file),
		header: http.Header{"Accept-Encoding": {"identity"}}, repo: repo, rev: commit, path: file, noRedirect: true}
	if c.offline {
		return fmt.Errorf("%s %s: %w", r.method, r.url, ErrOffline)
	}
	return c.retry(ctx, func() *attemptError {
		_, done, ae := c.send(ctx, r)
		if ae != nil {
			return ae
		}
		done()
		return nil
	})
}

// treeEntry is one element of the tree endpoint's JSON array.
type treeEntry struct {
	Type string `json:"type"`
	Path string `json:"path"`
	OID  string `json:"oid"`
	Size int64  `json:"size"`
	LFS  *struct {
		OID         string `json:"oid"`
		Size        int64  `json:"size"`
		PointerSize int64  `json:"pointerSize"`
	} `json:"lfs"`
}

// maxPages bounds tree pagination against a hub that links in a circle.
const maxPages = 100000

// ListFiles lists every file of repo at commit (recursively; directories
// are left out), sorted by path, following the tree endpoint's
// Link: <…>; rel="next" pagination.
func (c *Client) ListFiles(ctx context.Context, repo, commit string) ([]FileInfo, error) {
	if err := ValidateRepoID(repo); err != nil {
		return nil, err
	}
	if commit == "" {
		return nil, fmt.Errorf("listing files of %s: empty revision", repo)
	}
	next := c.endpoint + "/api/models/" + repo + "/tree/" + escapeAll(commit) + "?recursive=true"
	seen := map[string]bool{}
	var files []FileInfo
	for page := 1; next != ""; page++ {
		if seen[next] || page > maxPages {
			return nil, fmt.Errorf("listing files of %s@%s: pagination loops at %s", repo, commit, next)
		}
		if c.red.redact(next) != next {
			// Never send the token back in a URL, nor print it in an error.
			return nil, fmt.Errorf("listing files of %s@%s: the hub's next-page link holds the token; refusing to follow it", repo, commit)
		}
		seen[next] = true
		r := request{method: http.MethodGet, url: next, repo: repo, rev: commit}
		var entries []treeEntry
		hdr, err := c.getJSON(ctx, r, &entries)
		if err != nil {
			if namesRequest(err, repo, commit) {
				return nil, fmt.Errorf("listing files of %w", err)
			}
			return nil, fmt.Errorf("listing files of %s@%s: %w", repo, commit, err)
		}
		for i, e := range entries {
			if e.Type != "file" {
				continue
			}
			fi, err := e.fileInfo()
			if err != nil {
				return nil, fmt.Errorf("listing files of %s@%s: response of GET %s: entry %d: %s", repo, commit, next, i, c.red.redact(err.Error()))
			}
			files = append(files, fi)
		}
		next, err = nextLink(next, hdr.Values("Link"))
		if err != nil {
			return nil, fmt.Errorf("listing files of %s@%s: response of GET %s: %s", repo, commit, r.url, c.red.redact(err.Error()))
		}
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	for i := 1; i < len(files); i++ {
		if files[i].Path == files[i-1].Path {
			return nil, fmt.Errorf("listing files of %s@%s: %q listed twice", repo, commit, c.red.redact(files[i].Path))
		}
	}
	return files, nil
}

func (e treeEntry) fileInfo() (FileInfo, error) {
	if err := validFilePath(e.Path); err != nil {
		return FileInfo{}, err
	}
	fi := FileInfo{Path: e.Path, Size: e.Size, BlobID: strings.ToLower(e.OID)}
	if !isHex(fi.BlobID, 40) {
		return FileInfo{}, fmt.Errorf("%s: oid %q is not a git sha1", e.Path, e.OID)
	}
	if e.LFS != nil {
		fi.LFS = true
		fi.SHA256 = strings.ToLower(e.LFS.OID)
		if !isHex(fi.SHA256, 64) {
			return FileInfo{}, fmt.Errorf("%s: lfs oid %q is not a sha256", e.Path, e.LFS.OID)
		}
		if e.LFS.Size > 0 {
			fi.Size = e.LFS.Size
		}
	}
	if fi.Size < 0 {
		return FileInfo{}, fmt.Errorf("%s: negative size %d", e.Path, fi.Size)
	}
	return fi, nil
}

// nextLink returns the absolute URL of the rel="next" link among Link
// header values, resolved against base, or "" when there is none.
func nextLink(base string, values []string) (string, error) {
	for _, v := range values {
		for _, link := range splitLinks(v) {
			link = strings.TrimSpace(link)
			if !strings.HasPrefix(link, "<") {
				continue
			}
			end := strings.Index(link, ">")
			if end < 0 {
				return "", fmt.Errorf("malformed Link header %q", v)
			}
			target, params := link[1:end], link[end+1:]
			isNext := false
			for _, p := range strings.Split(params, ";") {
				k, val, ok := strings.Cut(strings.TrimSpace(p), "=")
				if !ok || !strings.EqualFold(strings.TrimSpace(k), "rel") {
					continue
				}
				for _, rel := range strings.Fields(strings.Trim(strings.TrimSpace(val), `"`)) {
					if strings.EqualFold(rel, "next") {
						isNext = true
					}
				}
			}
			if !isNext {
				continue
			}
			b, err := url.Parse(base)
			if err != nil {
				return "", err
			}
			u, err := b.Parse(target)
			if err != nil {
				return "", fmt.Errorf("malformed Link header %q: %w", v, err)
			}
			if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
				return "", fmt.Errorf("malformed Link header %q: next page is not an http(s) URL", v)
			}
			return u.String(), nil
		}
	}
	return "", nil
}

// splitLinks splits a Link header value at the commas between links, not
// those inside <…> or quotes.
func splitLinks(v string) []string {
	var out []string
	start, inURL, inQuote := 0, false, false
	for i := 0; i < len(v); i++ {
		switch v[i] {
		case '<':
			if !inQuote {
				inURL = true
			}
		case '>':
			if !inQuote {
				inURL = false
			}
		case '"':
			if !inURL {
				inQuote = !inQuote
			}
		case ',':
			if !inURL && !inQuote {
				out = append(out, v[start:i])
				start = i + 1
			}
		}
	}
	return append(out, v[start:])
}

// validFilePath rejects repo paths that could escape a directory when
// joined to it: absolute, empty, "." or ".." segments, backslashes, NUL.
func validFilePath(p string) error {
	if p == "" || strings.HasPrefix(p, "/") || strings.ContainsAny(p, "\\\x00") {
		return fmt.Errorf("unsafe file path %q", p)
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return fmt.Errorf("unsafe file path %q", p)
		}
	}
	return nil
}

// clip shortens untrusted text quoted in an error.
func clip(s string) string {
	if len(s) > 100 {
		return s[:100] + "…"
	}
	return s
}

func isHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

// namesRequest reports whether err is a [HubError] about repo at rev and
// no file, whose text starts with "repo@rev: " already.
func namesRequest(err error, repo, rev string) bool {
	var he *HubError
	return errors.As(err, &he) && he.Repo == repo && he.Revision == rev && he.Path == ""
}
