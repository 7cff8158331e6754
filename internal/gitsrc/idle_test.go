package gitsrc

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// A remote that starts its answer and then stalls mid-body: the read
// fails and the watch says the remote went silent; one that answers in
// full is left alone.
func TestIdleTransport_stallMidBody(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "0008NAK\n")
		w.(http.Flusher).Flush()
		if r.URL.Path == "/stall" {
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}
	}))
	defer srv.Close()
	defer close(release)
	c := &http.Client{Transport: idleTransport{base: http.DefaultTransport}}

	ctx, watch := withIdle(context.Background(), 200*time.Millisecond)
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/stall", nil)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, err = io.ReadAll(resp.Body)
	resp.Body.Close()
	if err == nil || !watch.silent() {
		t.Fatalf("a stalled body: err %v, silent %v; want an error and silent", err, watch.silent())
	}

	ctx, watch = withIdle(context.Background(), 200*time.Millisecond)
	req, _ = http.NewRequestWithContext(ctx, "GET", srv.URL+"/ok", nil)
	resp, err = c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || string(b) != "0008NAK\n" || watch.silent() {
		t.Fatalf("a whole answer: %q, %v, silent %v", b, err, watch.silent())
	}
}
