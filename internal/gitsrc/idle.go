package gitsrc

import (
	"context"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing/transport/client"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
)

// A remote that accepts the connection and then sends nothing (a stuck
// proxy, a server that hangs) would hold a fetch for as long as its whole
// deadline, which must allow minutes for a first clone. Over http(s) the
// silence itself is bounded instead: every request gitsrc makes carries
// an [idleWatch] in its context, and the transport below cancels a request
// that got no byte for that long, before its answer or within its body,
// and marks the watch, so that the operation reports a [*TimeoutError]
// naming the remote whatever go-git made of the cancelled read.

// idleWatch bounds the silence of one operation's requests.
type idleWatch struct {
	d     time.Duration
	mu    sync.Mutex
	fired bool
}

type idleKey struct{}

// withIdle returns ctx carrying a watch that allows the remote d of
// silence (d <= 0: no bound) and the watch.
func withIdle(ctx context.Context, d time.Duration) (context.Context, *idleWatch) {
	w := &idleWatch{d: d}
	return context.WithValue(ctx, idleKey{}, w), w
}

// silent reports whether a request of the operation was cancelled for
// its silence.
func (w *idleWatch) silent() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.fired
}

func init() {
	c := githttp.NewClient(&http.Client{Transport: idleTransport{base: http.DefaultTransport}})
	client.InstallProtocol("http", c)
	client.InstallProtocol("https", c)
}

// idleTransport cancels a request whose remote stays silent for the
// watch's duration: no response header, or no byte of the body.
type idleTransport struct{ base http.RoundTripper }

func (t idleTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	w, _ := req.Context().Value(idleKey{}).(*idleWatch)
	if w == nil || w.d <= 0 {
		return t.base.RoundTrip(req)
	}
	ctx, cancel := context.WithCancel(req.Context())
	timer := time.AfterFunc(w.d, func() {
		w.mu.Lock()
		w.fired = true
		w.mu.Unlock()
		cancel()
	})
	resp, err := t.base.RoundTrip(req.WithContext(ctx))
	if err != nil {
		timer.Stop()
		cancel()
		return nil, err
	}
	timer.Stop()
	resp.Body = &idleBody{rc: resp.Body, timer: timer, d: w.d, cancel: cancel}
	return resp, nil
}

// idleBody runs the silence timer while a read waits for the remote (not
// while go-git works between reads: the remote cannot send into a full
// buffer then).
type idleBody struct {
	rc     io.ReadCloser
	timer  *time.Timer
	d      time.Duration
	cancel context.CancelFunc
}

func (b *idleBody) Read(p []byte) (int, error) {
	b.timer.Reset(b.d)
	n, err := b.rc.Read(p)
	b.timer.Stop()
	return n, err
}

func (b *idleBody) Close() error {
	b.timer.Stop()
	err := b.rc.Close()
	b.cancel()
	return err
}
