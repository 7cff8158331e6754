package hf

import (
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/rigorbench/rigor/internal/flock"
)

// DownloadOptions configures [Client.Download].
type DownloadOptions struct {
	// CacheDir is the hub cache to download into; it must be set
	// (internal/cli reads it, see [CacheDirFrom]).
	CacheDir string
	// Revision is the branch or tag the commit was resolved from; ""
	// means "main", as huggingface_hub defaults it. When the hub says the
	// revision still points at the commit, refs/<Revision> is written to
	// hold it, so tools that look files up by branch name find this
	// snapshot. An older locked commit never moves an existing ref
	// backwards, and offline nothing is written to refs/.
	Revision string
	// Progress, when set, is called as bytes of a file arrive (and once
	// with done == total for a file already in the cache). It is called
	// from the goroutine that called Download.
	Progress func(file string, done, total int64)
	// KeepPartial keeps the partial file of a download the disk had no
	// room for (to resume it once there is room); by default it is
	// removed, so that a failed pull does not keep the disk full.
	KeepPartial bool
}

// testOnlyPartWriter wraps the partial file a download writes (tests
// make it fail as a full disk does).
var testOnlyPartWriter = func(f *os.File) io.Writer { return f }

// Download fetches files of repo at commit (GET
// {endpoint}/{repo}/resolve/{commit}/{path}, following redirects to the
// CDN) into the cache: each file into blobs/<hash>.incomplete, resuming a
// partial file with a Range request, verified while streaming against its
// sha256 (and git blob id for small files), then renamed to blobs/<hash>.
// Only when every file is verified are the relative symlinks
// snapshots/<commit>/<path> → ../../blobs/<hash> made, and
// refs/<revision> written, so a snapshot directory never holds a
// partial or unverified file. A file whose blob is already in the cache
// with the right hash is not downloaded again. A corrupted download fails
// with a [*ChecksumError] and its partial file is removed; a refused
// download (401, 403, 404) leaves no empty partial file behind.
//
// Each blob is fetched under the cache's lock file
// .locks/models--owner--name/<hash>.lock (flock(2), as huggingface_hub's
// filelock takes it), so two downloads of one file — two rigors, or rigor
// and huggingface_hub — take turns on blobs/<hash>.incomplete, and the
// second finds the first's verified blob.
//
// In offline mode Download succeeds only if every blob is already cached.
func (c *Client) Download(ctx context.Context, repo, commit string, files []FileInfo, opts DownloadOptions) error {
	if err := ValidateRepoID(repo); err != nil {
		return err
	}
	if !isHex(commit, 40) {
		return fmt.Errorf("downloading %s: commit %q is not a 40-hex commit", repo, commit)
	}
	commit = strings.ToLower(commit)
	if opts.Revision != "" {
		if err := validFilePath(opts.Revision); err != nil {
			return fmt.Errorf("downloading %s: revision %q: %w", repo, opts.Revision, err)
		}
	}
	cache := opts.CacheDir
	if cache == "" {
		return fmt.Errorf("downloading %s: no hub cache directory (DownloadOptions.CacheDir is empty)", repo)
	}
	for _, f := range files {
		if err := validFilePath(f.Path); err != nil {
			return fmt.Errorf("downloading %s@%s: %w", repo, commit, err)
		}
		if blobName(f) == "" {
			return fmt.Errorf("downloading %s@%s: %s: no sha256 or git blob id to verify it against", repo, commit, f.Path)
		}
		if f.Size < 0 {
			return fmt.Errorf("downloading %s@%s: %s: negative size %d", repo, commit, f.Path, f.Size)
		}
	}
	repoDir := RepoDir(cache, repo)
	// Folders 0777 and files 0666 less the umask, as huggingface_hub
	// makes them: a cache shared by a group (umask 002, setgid folders)
	// stays writable by the group's other users.
	if err := os.MkdirAll(filepath.Join(repoDir, "blobs"), 0o777); err != nil {
		return fmt.Errorf("downloading %s: %w", repo, err)
	}
	locks := filepath.Join(cache, ".locks", filepath.Base(repoDir))
	for _, f := range files {
		lk, err := flock.Acquire(ctx, filepath.Join(locks, blobName(f)+".lock"), flock.Options{Waiting: "another download of " + f.Path})
		if err != nil {
			return fmt.Errorf("downloading %s@%s: %s: %w", repo, commit, f.Path, err)
		}
		err = c.downloadBlob(ctx, repoDir, repo, commit, f, opts)
		lk.Unlock()
		var he *HubError
		switch {
		case err == nil:
		case errors.As(err, &he) && he.Repo == repo && he.Revision == commit && he.Path == f.Path:
			// It names the repo, commit and file already.
			return fmt.Errorf("downloading %w", err)
		default:
			return fmt.Errorf("downloading %s@%s: %s: %w", repo, commit, f.Path, err)
		}
	}
	for _, f := range files {
		if err := linkSnapshot(repoDir, commit, f); err != nil {
			return fmt.Errorf("downloading %s@%s: linking %s: %w", repo, commit, f.Path, err)
		}
	}
	rev := opts.Revision
	if rev == "" {
		rev = "main"
	}
	ref := filepath.Join(repoDir, "refs", filepath.FromSlash(rev))
	if b, err := os.ReadFile(ref); rev == commit || c.offline || err == nil && strings.TrimSpace(string(b)) == commit {
		return nil
	}
	// Only what the hub says the revision is now goes into refs/: a pull
	// of an older locked commit must not move a branch of the shared
	// cache backwards for every other tool.
	head, err := c.ResolveRevision(ctx, repo, rev)
	if err != nil || head != commit {
		return nil
	}
	if err := writeFileAtomic(ref, []byte(commit)); err != nil {
		return fmt.Errorf("downloading %s@%s: writing refs/%s: %w", repo, commit, rev, err)
	}
	return nil
}

// downloadBlob makes sure blobs/<name> holds f's verified content.
func (c *Client) downloadBlob(ctx context.Context, repoDir, repo, commit string, f FileInfo, opts DownloadOptions) error {
	progress := opts.Progress
	blob := filepath.Join(repoDir, "blobs", blobName(f))
	ok, err := verifyExisting(blob, repo, f)
	if err != nil {
		return err
	}
	if ok {
		if progress != nil {
			progress(f.Path, f.Size, f.Size)
		}
		return nil
	}
	if c.offline {
		return ErrOffline
	}
	part := blob + ".incomplete"
	if err := c.fetch(ctx, repo, commit, f, part, progress); err != nil {
		var ce *ChecksumError
		var full *DiskFullError
		switch st, serr := os.Stat(part); {
		case errors.As(err, &ce), serr == nil && st.Size() == 0:
			// A corrupt download cannot be resumed, and an empty one (a
			// refused request) holds nothing worth keeping.
			os.Remove(part)
		case errors.As(err, &full):
			full.Kept = opts.KeepPartial
			if !opts.KeepPartial {
				// It would keep the disk full for everything else.
				os.Remove(part)
			}
		}
		return err
	}
	if err := os.Rename(part, blob); err != nil {
		return err
	}
	return nil
}

// verifyExisting reports whether blob exists with f's size and hashes. A
// blob that is there but wrong is removed.
func verifyExisting(blob, repo string, f FileInfo) (bool, error) {
	st, err := os.Stat(blob)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if !st.Mode().IsRegular() || st.Size() != f.Size {
		return false, os.Remove(blob)
	}
	fh, err := os.Open(blob)
	if err != nil {
		return false, err
	}
	defer fh.Close()
	v := newVerifier(f)
	if _, err := io.Copy(v, fh); err != nil {
		return false, fmt.Errorf("hashing cached %s: %w", blob, err)
	}
	if v.check(repo, f) != nil {
		fh.Close()
		return false, os.Remove(blob)
	}
	return true, nil
}

// verifier hashes content as it streams: sha256 always, and the git blob
// sha1 ("blob <size>\x00" + content) for files stored in git.
type verifier struct {
	sha256 hash.Hash
	git    hash.Hash // nil for LFS files
	size   int64
}

func newVerifier(f FileInfo) *verifier {
	v := &verifier{sha256: sha256.New(), size: f.Size}
	if !f.LFS && isHex(f.BlobID, 40) {
		v.git = sha1.New()
	}
	v.reset()
	return v
}

func (v *verifier) reset() {
	v.sha256.Reset()
	if v.git != nil {
		v.git.Reset()
		fmt.Fprintf(v.git, "blob %d\x00", v.size)
	}
}

func (v *verifier) Write(p []byte) (int, error) {
	v.sha256.Write(p)
	if v.git != nil {
		v.git.Write(p)
	}
	return len(p), nil
}

// check compares the hashes with f's, returning a *ChecksumError.
func (v *verifier) check(repo string, f FileInfo) error {
	if f.SHA256 != "" {
		got := hex.EncodeToString(v.sha256.Sum(nil))
		if !strings.EqualFold(got, f.SHA256) {
			return &ChecksumError{Repo: repo, Path: f.Path, Algo: "sha256", Want: strings.ToLower(f.SHA256), Got: got}
		}
	}
	if v.git != nil {
		got := hex.EncodeToString(v.git.Sum(nil))
		if !strings.EqualFold(got, f.BlobID) {
			return &ChecksumError{Repo: repo, Path: f.Path, Algo: "git-sha1", Want: strings.ToLower(f.BlobID), Got: got}
		}
	}
	return nil
}

// fetch downloads f into part, resuming from part's current length and
// retrying transient failures from wherever the last attempt stopped.
func (c *Client) fetch(ctx context.Context, repo, commit string, f FileInfo, part string, progress func(string, int64, int64)) error {
	fh, err := os.OpenFile(part, os.O_RDWR|os.O_CREATE, 0o666)
	if err != nil {
		return err
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return err
	}
	v := newVerifier(f)
	offset, err := resumeFrom(fh, v, st.Size(), f.Size)
	if err != nil {
		return fmt.Errorf("reading partial download %s: %w", part, err)
	}
	restart := func() error {
		offset = 0
		v.reset()
		return nil
	}
	r := request{
		method: http.MethodGet,
		url:    c.endpoint + "/" + repo + "/resolve/" + commit + "/" + escapePath(f.Path),
		repo:   repo,
		rev:    commit,
		path:   f.Path,
	}
	err = c.retry(ctx, func() *attemptError {
		if err := fh.Truncate(offset); err != nil {
			return &attemptError{err: err}
		}
		if _, err := fh.Seek(offset, io.SeekStart); err != nil {
			return &attemptError{err: err}
		}
		if progress != nil {
			progress(f.Path, offset, f.Size)
		}
		if offset == f.Size {
			return nil
		}
		r.header = http.Header{"Accept-Encoding": {"identity"}}
		if offset > 0 {
			r.header.Set("Range", "bytes="+strconv.FormatInt(offset, 10)+"-")
		}
		resp, done, ae := c.send(ctx, r)
		if ae != nil {
			if he, ok := ae.err.(*HubError); ok && he.Status == http.StatusRequestedRangeNotSatisfiable {
				// The partial file is not a prefix of this blob: start over.
				restart()
				ae.transient = true
			}
			return ae
		}
		defer done()
		switch resp.StatusCode {
		case http.StatusPartialContent:
			start, ok := contentRangeStart(resp.Header.Get("Content-Range"))
			if !ok || start != offset {
				restart()
				return &attemptError{err: fmt.Errorf("GET %s: asked for bytes from %d, got Content-Range %q", r.url, offset, resp.Header.Get("Content-Range")), transient: true}
			}
		case http.StatusOK:
			if offset > 0 {
				// The server ignored Range and sends the whole file.
				restart()
				if err := fh.Truncate(0); err != nil {
					return &attemptError{err: err}
				}
				if _, err := fh.Seek(0, io.SeekStart); err != nil {
					return &attemptError{err: err}
				}
			}
		default:
			return &attemptError{err: fmt.Errorf("GET %s: unexpected status %s", r.url, resp.Status)}
		}
		if resp.ContentLength >= 0 && resp.ContentLength != f.Size-offset {
			return &attemptError{err: fmt.Errorf("GET %s: the server sends %d bytes from byte %d, the lock says the file has %d (did the file change on the hub?)", r.url, resp.ContentLength, offset, f.Size)}
		}
		// Read one byte past the expected end to notice an overlong body.
		body := io.LimitReader(resp.Body, f.Size-offset+1)
		start := offset
		res := pipeCopy(testOnlyPartWriter(fh), v, body, func(total int64) {
			if progress != nil {
				progress(f.Path, min(start+total, f.Size), f.Size)
			}
		})
		offset += res.n
		switch {
		case res.writeErr != nil && (errors.Is(res.writeErr, syscall.ENOSPC) || errors.Is(res.writeErr, syscall.EDQUOT)):
			have := offset
			if st, err := fh.Stat(); err == nil {
				have = st.Size()
			}
			return &attemptError{err: &DiskFullError{Path: part, Need: f.Size - have, Err: res.writeErr}}
		case res.writeErr != nil:
			return &attemptError{err: fmt.Errorf("writing %s: %w", part, res.writeErr)}
		case offset > f.Size:
			return &attemptError{err: fmt.Errorf("GET %s: server sent more than the %d bytes locked", r.url, f.Size)}
		case res.readErr != io.EOF:
			return c.transportError(ctx, resp.Body.(*watchedBody).w, r, res.readErr)
		}
		if offset < f.Size {
			return &attemptError{err: fmt.Errorf("GET %s: body ended at byte %d of %d", r.url, offset, f.Size), transient: true}
		}
		return nil
	})
	if err != nil {
		return err
	}
	return v.check(repo, f)
}

// resumeFrom hashes into v what an earlier run left in fh (have bytes of
// a file of size bytes) and returns the offset to carry on from: after
// it, or 0 when it is too long or cannot be read whole.
func resumeFrom(fh *os.File, v *verifier, have, size int64) (int64, error) {
	if have <= 0 || have > size {
		return 0, nil
	}
	n, err := io.Copy(v, io.LimitReader(fh, have))
	if err != nil {
		return 0, err
	}
	if n != have {
		v.reset()
		return 0, nil
	}
	return have, nil
}

// contentRangeStart parses the first byte position of "bytes a-b/n".
func contentRangeStart(v string) (int64, bool) {
	rest, ok := strings.CutPrefix(strings.TrimSpace(v), "bytes ")
	if !ok {
		return 0, false
	}
	a, _, ok := strings.Cut(rest, "-")
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(strings.TrimSpace(a), 10, 64)
	return n, err == nil && n >= 0
}

// linkSnapshot points snapshots/<commit>/<path> at ../../blobs/<name> with
// a relative symlink, replacing whatever was there.
func linkSnapshot(repoDir, commit string, f FileInfo) error {
	link := filepath.Join(repoDir, "snapshots", commit, filepath.FromSlash(f.Path))
	target := strings.Repeat("../", 2+strings.Count(f.Path, "/")) + "blobs/" + blobName(f)
	if cur, err := os.Readlink(link); err == nil && cur == target {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(link), 0o777); err != nil {
		return err
	}
	// Another process may be linking the same file: a name of our own.
	tmp := fmt.Sprintf("%s.%d.tmp-link", link, os.Getpid())
	os.Remove(tmp)
	if err := os.Symlink(target, tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, link); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// writeFileAtomic writes data to name through a temporary file and rename.
func writeFileAtomic(name string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(name), 0o777); err != nil {
		return err
	}
	// Not os.CreateTemp, whose 0600 would keep the group out of refs/.
	var tmp *os.File
	var err error
	for range 100 {
		tmp, err = os.OpenFile(filepath.Join(filepath.Dir(name), ".tmp-"+strconv.FormatUint(rand.Uint64(), 36)), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
		if !errors.Is(err, fs.ErrExist) {
			break
		}
	}
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), name)
}

// Open returns the content of file of repo at commit as a stream (GET
// {endpoint}/{repo}/resolve/{commit}/{path}, following the redirect to
// the CDN), retrying the request's transient failures. The caller reads
// as much as it needs, a GGUF header or a small file, and closes it.
// Reads stall out after the client's timeout.
func (c *Client) Open(ctx context.Context, repo, commit, file string) (io.ReadCloser, error) {
	if err := ValidateRepoID(repo); err != nil {
		return nil, err
	}
	if err := validFilePath(file); err != nil {
		return nil, fmt.Errorf("reading %s@%s: %w", repo, commit, err)
	}
	r := request{
		method: http.MethodGet,
		url:    c.endpoint + "/" + repo + "/resolve/" + commit + "/" + escapePath(file),
		repo:   repo,
		rev:    commit,
		path:   file,
		header: http.Header{"Accept-Encoding": {"identity"}},
	}
	if c.offline {
		return nil, fmt.Errorf("%s %s: %w", r.method, r.url, ErrOffline)
	}
	var body io.ReadCloser
	err := c.retry(ctx, func() *attemptError {
		resp, done, ae := c.send(ctx, r)
		if ae != nil {
			return ae
		}
		body = &doneCloser{Reader: resp.Body, done: done}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading %s@%s: %s: %w", repo, commit, file, err)
	}
	return body, nil
}

// doneCloser closes a response body and stops its watchdog.
type doneCloser struct {
	io.Reader
	done func()
}

func (d *doneCloser) Close() error {
	d.done()
	return nil
}
