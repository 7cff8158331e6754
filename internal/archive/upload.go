package archive

// Resumable uploads of large blobs. oras-go v2.7.0 pushes a blob in one
// request (POST for an upload session, then one PUT of the whole body,
// registry/remote/repository.go completePushAfterInitialPost) and has no
// API for chunked or resumed uploads. A multi-GB model cut at 90% would be
// sent again from its first byte, so rigor speaks the registry protocol's
// chunked upload itself (distribution spec, "Pushing a blob in chunks"),
// through oras-go's auth client only (credentials, token scopes, retries):
//
//	POST  /v2/<repo>/blobs/uploads/          202, Location: the session
//	PATCH <session>  Content-Range: a-b      202, Location, Range: 0-b
//	GET   <session>                          204, Location, Range: 0-n (resume)
//	PUT   <session>?digest=sha256:…          201
//
// The session's URL after each acknowledged chunk is kept in a state file
// under the cache (<cache>/archive-uploads/<sha256>.json); a later push of
// the same blob to the same repository asks the registry for the session's
// Range and sends only the rest. A session the registry no longer knows
// (expired, purged, or refused because it holds part of a chunk that was
// cut: distribution cancels an upload whose stored size differs from the
// offset its state names) is started again from the first byte, and the
// push says so.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"oras.land/oras-go/v2/registry"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/errcode"
)

// ChunkThreshold is the size from which a blob is sent in chunks, which
// an interrupted push resumes; smaller blobs go in one request.
var ChunkThreshold int64 = 32 << 20

// ChunkSize is the least size of one chunk of a chunked upload;
// MaxChunkSize the most. A blob is sent in about 16 chunks between the
// two ([chunkSize]): the registry answers a chunk only once it has stored
// it and its hash state, and nothing is sent meanwhile, so fewer chunks
// stall less (1 GiB on the quiet machine: 8.3–9.3 s in 8 MiB chunks,
// 6.6–7.9 s in 64 MiB ones), while a push interrupted in the middle
// resends at most one chunk.
var (
	ChunkSize    int64 = 8 << 20
	MaxChunkSize int64 = 64 << 20
)

// chunkSize is the chunk size for a blob of size bytes: a sixteenth of
// it in whole MiB, within [ChunkSize, MaxChunkSize].
func chunkSize(size int64) int64 {
	return min(max(size/16>>20<<20, ChunkSize), max(MaxChunkSize, ChunkSize))
}

// uploadState is what a state file keeps of an upload session.
type uploadState struct {
	// Archive is the archive's address; SHA256 and Size the blob's.
	Archive string `json:"archive"`
	SHA256  string `json:"sha256"`
	Size    int64  `json:"size"`
	// Location is the session's URL as the registry last gave it, and
	// Offset the bytes it acknowledged then.
	Location string `json:"location"`
	Offset   int64  `json:"offset"`
}

// Resume, when set, is told that an upload resumes at offset of size
// bytes, or (offset -1) that a kept session could not be resumed and the
// upload starts again.
type ResumeFunc func(what string, offset, size int64)

func (a *Archive) statePath(sha string) string {
	if a.StateDir == "" {
		return ""
	}
	return filepath.Join(a.StateDir, sha+".json")
}

func (a *Archive) loadState(sha string, size int64) *uploadState {
	p := a.statePath(sha)
	if p == "" {
		return nil
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return nil
	}
	var s uploadState
	if json.Unmarshal(b, &s) != nil || s.Archive != a.Addr.String() || s.SHA256 != sha || s.Size != size || s.Location == "" {
		return nil
	}
	return &s
}

func (a *Archive) saveState(s *uploadState) error {
	p := a.statePath(s.SHA256)
	if p == "" {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return err
	}
	b, _ := json.Marshal(s)
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, p)
}

func (a *Archive) dropState(sha string) {
	if p := a.statePath(sha); p != "" {
		os.Remove(p)
	}
}

func (a *Archive) baseURL() string {
	scheme := "https"
	if a.repo.PlainHTTP {
		scheme = "http"
	}
	return scheme + "://" + a.Addr.Host + "/v2/" + a.Addr.Repo
}

// do sends req through oras-go's auth client with the repository's
// pull and push scopes.
func (a *Archive) do(req *http.Request) (*http.Response, error) {
	ref := registry.Reference{Registry: a.Addr.Host, Repository: a.Addr.Repo}
	req = req.WithContext(auth.AppendRepositoryScope(req.Context(), ref, auth.ActionPull, auth.ActionPush))
	return a.repo.Client.Do(req)
}

// responseError is the registry's error answer as oras-go shapes it.
func responseError(resp *http.Response) error {
	defer resp.Body.Close()
	e := &errcode.ErrorResponse{Method: resp.Request.Method, URL: resp.Request.URL, StatusCode: resp.StatusCode}
	var body struct {
		Errors errcode.Errors `json:"errors"`
	}
	if b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10)); err == nil {
		json.Unmarshal(b, &body)
	}
	e.Errors = body.Errors
	return e
}

// location resolves a response's Location against its request, on the
// registry's host only (as oras-go does: credentials are never sent
// elsewhere).
func location(resp *http.Response) (string, error) {
	loc, err := resp.Location()
	if err != nil {
		return "", fmt.Errorf("the registry gave no upload location: %w", err)
	}
	if !sameUploadHost(loc, resp.Request.URL) {
		return "", fmt.Errorf("blob upload Location %q is on a different host than the registry %q", loc.Host, resp.Request.URL.Host)
	}
	if resp.Request.URL.Scheme == "https" && loc.Scheme != "https" {
		return "", fmt.Errorf("blob upload Location %q downgrades scheme from https", loc.Host)
	}
	return loc.String(), nil
}

func sameUploadHost(a, b *url.URL) bool {
	port := func(u *url.URL) string {
		if p := u.Port(); p != "" {
			return p
		}
		if u.Scheme == "https" {
			return "443"
		}
		return "80"
	}
	return a.Hostname() == b.Hostname() && port(a) == port(b)
}

// rangeEnd reads a Range header "0-n" and returns the bytes it says the
// session holds (n+1; "0-0" of a session that may hold nothing is read
// with held).
func rangeEnd(h string, held int64) (int64, error) {
	lo, hi, ok := strings.Cut(strings.TrimPrefix(h, "bytes="), "-")
	a, err1 := strconv.ParseInt(lo, 10, 64)
	b, err2 := strconv.ParseInt(hi, 10, 64)
	if !ok || err1 != nil || err2 != nil || a != 0 || b < 0 {
		return 0, fmt.Errorf("the registry answered an upload Range %q", h)
	}
	if b == 0 && held == 0 {
		return 0, nil
	}
	return b + 1, nil
}

// startUpload opens an upload session.
func (a *Archive) startUpload(ctx context.Context) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.baseURL()+"/blobs/uploads/", nil)
	if err != nil {
		return "", err
	}
	resp, err := a.do(req)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusAccepted {
		return "", responseError(resp)
	}
	resp.Body.Close()
	return location(resp)
}

// uploadStatus asks the registry how much of the session it holds: the
// session's new URL and the offset; errSessionGone when it does not know
// it any more.
func (a *Archive) uploadStatus(ctx context.Context, s *uploadState) (string, int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.Location, nil)
	if err != nil {
		return "", 0, err
	}
	resp, err := a.do(req)
	if err != nil {
		return "", 0, err
	}
	switch resp.StatusCode {
	case http.StatusNoContent, http.StatusOK:
		resp.Body.Close()
	case http.StatusNotFound, http.StatusBadRequest, http.StatusRequestedRangeNotSatisfiable:
		responseError(resp)
		return "", 0, errSessionGone
	default:
		return "", 0, responseError(resp)
	}
	loc, err := location(resp)
	if err != nil {
		return "", 0, err
	}
	n, err := rangeEnd(resp.Header.Get("Range"), s.Offset)
	return loc, n, err
}

var errSessionGone = errors.New("the registry no longer knows the upload session")

// sectionBody sets req's body to bytes off to off+n of the file at path,
// a body that can be sent again (oras-go's auth and retry clients resend
// after a challenge or a 5xx): each send opens the file anew at off. The
// body is a [fileSection], which net/http hands to sendfile(2): the chunk
// goes from the page cache to the socket without a copy through rigor.
// The bytes are hashed from another read; the registry checks the digest
// of what it received when the upload is closed, so a file that changes
// in between is refused either way.
func sectionBody(req *http.Request, path string, off, n int64) error {
	open := func() (io.ReadCloser, error) {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		if _, err := f.Seek(off, io.SeekStart); err != nil {
			f.Close()
			return nil, err
		}
		return &fileSection{f: f, end: off + n}, nil
	}
	body, err := open()
	if err != nil {
		return err
	}
	req.Body, req.GetBody, req.ContentLength = body, open, n
	return nil
}

// fileSection reads a file from its position up to end. It exposes the
// file's descriptor (syscall.Conn), so that net/http's copy of a body of
// known length (an io.LimitedReader around it) reaches the kernel's
// sendfile, which sends from the file's position and advances it; Read
// asks the file where it stands, so it is right after a sendfile too.
// Where sendfile is not used, Read alone is as correct, only slower.
type fileSection struct {
	f   *os.File
	end int64
}

func (s *fileSection) Read(p []byte) (int, error) {
	pos, err := s.f.Seek(0, io.SeekCurrent)
	if err != nil {
		return 0, err
	}
	if pos >= s.end {
		return 0, io.EOF
	}
	if rest := s.end - pos; int64(len(p)) > rest {
		p = p[:rest]
	}
	return s.f.Read(p)
}

func (s *fileSection) Close() error { return s.f.Close() }

func (s *fileSection) SyscallConn() (syscall.RawConn, error) { return s.f.SyscallConn() }

// pushChunked sends the file at path as the blob sha in chunks, resuming
// a session a state file kept. It hashes the file as it goes (the bytes
// the registry already holds are read back from the file, not sent): a
// file that does not hash to sha is a [*ChangedError], and the session is
// left for the registry to expire.
func (a *Archive) pushChunked(ctx context.Context, what, path, sha string, size int64, progress func(int64), resumed ResumeFunc) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	defer f.Close()
	st := &uploadState{Archive: a.Addr.String(), SHA256: sha, Size: size}
	var loc string
	var off int64
	if kept := a.loadState(sha, size); kept != nil {
		loc, off, err = a.uploadStatus(ctx, kept)
		if errors.Is(err, errSessionGone) || err == nil && off > size {
			if resumed != nil {
				resumed(what, -1, size)
			}
			loc, off, err = "", 0, nil
		} else if err != nil {
			return a.wrap(what, err)
		} else if resumed != nil {
			resumed(what, off, size)
		}
	}
	if loc == "" {
		if loc, err = a.startUpload(ctx); err != nil {
			return a.wrap(what, err)
		}
	}
	st.Location, st.Offset = loc, off
	if err := a.saveState(st); err != nil {
		return err
	}
	h := sha256.New()
	if off > 0 {
		if _, err := io.CopyN(h, f, off); err != nil {
			return fmt.Errorf("%s: reading the part the registry holds: %w", what, err)
		}
	}
	buf := make([]byte, 1<<20)
	chunk := chunkSize(size)
	for off < size {
		n := min(chunk, size-off)
		// The chunk is hashed while it is sent, not after: hashing 1 GiB
		// one chunk after another added a second of CPU to the wall time
		// (0.82× curl's throughput on the quiet machine). Both read the
		// same bytes from the page cache; the hash is in order because
		// the next chunk waits for this one's.
		hashed := make(chan error, 1)
		go func(off, n int64) {
			_, err := io.CopyBuffer(h, io.NewSectionReader(f, off, n), buf)
			hashed <- err
		}(off, n)
		loc, err = a.patch(ctx, path, loc, off, n)
		if herr := <-hashed; err == nil && herr != nil {
			err = fmt.Errorf("reading the chunk to hash it: %w", herr)
		}
		if err != nil {
			return a.wrap(what, err)
		}
		off += n
		st.Location, st.Offset = loc, off
		if err := a.saveState(st); err != nil {
			return err
		}
		if progress != nil {
			progress(off)
		}
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != sha {
		a.dropState(sha)
		return &ChangedError{What: what, Want: sha, Got: got}
	}
	u, err := url.Parse(loc)
	if err != nil {
		return err
	}
	q := u.Query()
	q.Set("digest", "sha256:"+sha)
	u.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, u.String(), nil)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	req.ContentLength = 0
	resp, err := a.do(req)
	if err != nil {
		return a.wrap(what, err)
	}
	if resp.StatusCode != http.StatusCreated {
		return a.wrap(what, responseError(resp))
	}
	resp.Body.Close()
	a.dropState(sha)
	return nil
}

// patch sends bytes off to off+n of f as one chunk; it returns the
// session's next URL.
func (a *Archive) patch(ctx context.Context, path, loc string, off, n int64) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPatch, loc, nil)
	if err != nil {
		return "", err
	}
	if err := sectionBody(req, path, off, n); err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	req.Header.Set("Content-Range", fmt.Sprintf("%d-%d", off, off+n-1))
	resp, err := a.do(req)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusAccepted && resp.StatusCode != http.StatusNoContent {
		return "", responseError(resp)
	}
	resp.Body.Close()
	next, err := location(resp)
	if err != nil {
		return "", err
	}
	if end, err := rangeEnd(resp.Header.Get("Range"), off+n); err != nil {
		return "", err
	} else if end != off+n {
		return "", fmt.Errorf("the registry holds %d bytes of the upload after a chunk that ends at %d", end, off+n)
	}
	return next, nil
}
