package archive

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// bufferingProxy stands in front of the real registry and forwards each
// request only once its whole body has arrived (as nginx does by
// default), so that a client cut in the middle of a chunk leaves the
// registry's upload as it was after the last whole chunk. It counts the
// bytes of upload bodies (PATCH and PUT) it forwarded.
type bufferingProxy struct {
	srv  *httptest.Server
	sent atomic.Int64
}

func newBufferingProxy(t *testing.T, host string) *bufferingProxy {
	target, _ := url.Parse("http://" + host)
	rp := httputil.NewSingleHostReverseProxy(target)
	p := &bufferingProxy{}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil || r.ContentLength > 0 && int64(len(b)) != r.ContentLength {
			return // the client went away: nothing of it reaches the registry
		}
		if r.Method == http.MethodPatch || r.Method == http.MethodPut {
			p.sent.Add(int64(len(b)))
		}
		r.Body = io.NopCloser(bytes.NewReader(b))
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *bufferingProxy) host() string { return strings.TrimPrefix(p.srv.URL, "http://") }

func smallChunks(t *testing.T) {
	th, cs := ChunkThreshold, ChunkSize
	ChunkThreshold, ChunkSize = 2<<20, 1<<20
	t.Cleanup(func() { ChunkThreshold, ChunkSize = th, cs })
}

// An interrupted push of a large blob resumes where the registry's upload
// session stands: the second push sends only the rest, and the blob is
// the file's bytes.
func TestPushResumed(t *testing.T) {
	host, user, pw := testRegistry(t)
	smallChunks(t)
	p := newBufferingProxy(t, host)
	cfg := dockerConfig(t, p.host(), user, pw)
	repo := randomRepo(t)
	state := t.TempDir()
	const size = 6<<20 + 12345
	path, sha := randomFile(t, size)
	openWith := func() *Archive {
		a := open(t, p.host(), repo, cfg)
		a.StateDir = state
		return a
	}

	// The first push is cut after three chunks.
	ctx, cancel := context.WithCancel(context.Background())
	a := openWith()
	_, err := a.PushFile(ctx, "model file big.gguf", path, MediaTypeGGUF, sha, size, func(n int64) {
		if n >= 3<<20 {
			cancel()
		}
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cut push: %v, want context.Canceled", err)
	}
	if got := p.sent.Load(); got != 3<<20 {
		t.Fatalf("the cut push sent %d bytes, want %d", got, 3<<20)
	}
	if _, err := os.Stat(filepath.Join(state, sha+".json")); err != nil {
		t.Fatalf("no state kept: %v", err)
	}

	// The second resumes at 3 MiB and sends the rest only.
	p.sent.Store(0)
	a = openWith()
	var at int64 = -2
	a.Resumed = func(what string, off, n int64) { at = off }
	sent, err := a.PushFile(context.Background(), "model file big.gguf", path, MediaTypeGGUF, sha, size, nil)
	if err != nil || !sent {
		t.Fatalf("resumed push: %v, %v", sent, err)
	}
	if at != 3<<20 {
		t.Errorf("resumed at %d, want %d", at, 3<<20)
	}
	if got := p.sent.Load(); got != size-3<<20 {
		t.Errorf("the resumed push sent %d bytes, want the %d left", got, size-3<<20)
	}
	if _, err := os.Stat(filepath.Join(state, sha+".json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the state outlived the upload: %v", err)
	}
	dest := filepath.Join(t.TempDir(), "out")
	if err := a.FetchFile(context.Background(), "blob", sha, size, dest, 0o644, nil); err != nil {
		t.Fatalf("fetching the resumed blob: %v", err)
	}

	// A session the registry no longer knows starts again from the start.
	path2, sha2 := randomFile(t, 3<<20)
	if err := os.WriteFile(filepath.Join(state, sha2+".json"), []byte(`{"archive":"`+a.Addr.String()+`","sha256":"`+sha2+`","size":`+"3145728"+`,"location":"http://`+p.host()+`/v2/`+repo+`/blobs/uploads/00000000-0000-0000-0000-000000000000?_state=x","offset":1048576}`), 0o600); err != nil {
		t.Fatal(err)
	}
	p.sent.Store(0)
	at = -2
	if _, err := a.PushFile(context.Background(), "model file other.gguf", path2, MediaTypeGGUF, sha2, 3<<20, nil); err != nil {
		t.Fatalf("push after a lost session: %v", err)
	}
	if at != -1 || p.sent.Load() != 3<<20 {
		t.Errorf("lost session: resumed at %d, sent %d; want -1 and the whole %d", at, p.sent.Load(), 3<<20)
	}
}

// A file that changed since it was locked is refused in chunked uploads
// too.
func TestPushChunkedChanged(t *testing.T) {
	host, user, pw := testRegistry(t)
	smallChunks(t)
	a := open(t, host, randomRepo(t), dockerConfig(t, host, user, pw))
	a.StateDir = t.TempDir()
	path, _ := randomFile(t, 3<<20)
	_, err := a.PushFile(context.Background(), "model file m.gguf", path, MediaTypeGGUF, strings.Repeat("a", 64), 3<<20, nil)
	var ce *ChangedError
	if !errors.As(err, &ce) || ce.Pulled {
		t.Fatalf("changed file: %v, want a ChangedError", err)
	}
}

// TestChunkSize: a blob goes in about 16 chunks of whole MiB, never
// fewer than ChunkSize bytes nor more than MaxChunkSize a chunk.
func TestChunkSize(t *testing.T) {
	for _, c := range []struct{ size, want int64 }{
		{32 << 20, 8 << 20}, // the threshold: 4 chunks of the least size
		{64 << 20, 8 << 20}, // archive_resume's model
		{256 << 20, 16 << 20},
		{1 << 30, 64 << 20},
		{100 << 30, 64 << 20},
		{(1 << 30) + 12345, 64 << 20},
		{300 << 20, 18 << 20},
	} {
		if got := chunkSize(c.size); got != c.want {
			t.Errorf("chunkSize(%d) = %d, want %d", c.size, got, c.want)
		}
	}
}
