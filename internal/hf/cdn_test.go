package hf_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/rigorbench/rigor/internal/hf"
	"github.com/rigorbench/rigor/internal/hf/hubtest"
)

// A download the hub redirects to its CDN, which then fails: the error
// and its hint blame the CDN's host, not HF_ENDPOINT or HF_TOKEN, and
// name the repo, commit and file once.
func TestDownload_cdnFailures(t *testing.T) {
	for _, tt := range []struct {
		name  string
		setup func(h *hubtest.Hub)
	}{
		{"403", func(h *hubtest.Hub) { h.FailNext("/cdn/*", http.StatusForbidden, 100) }},
		{"unreachable", func(h *hubtest.Hub) { h.CDN.Close() }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := hubtest.New()
			defer h.Close()
			h.StartCDN()
			h.AddRepo("org/tiny", smallRepo())
			c, _ := newClient(t, h, hf.ClientOptions{Token: "hf_tokenAAAAAAAAAAAAAAAAAAAA", MaxRetries: -1})
			commit, files := lockedFiles(t, c, "org/tiny", "main", "*.gguf")
			cdnHost := strings.TrimPrefix(h.CDN.URL, "http://")
			tt.setup(h)
			err := c.Download(context.Background(), "org/tiny", commit, files, hf.DownloadOptions{CacheDir: t.TempDir()})
			if err == nil {
				t.Fatal("download through a failing CDN succeeded")
			}
			msg := err.Error()
			var h2 interface{ Hint() string }
			hint := ""
			if errors.As(err, &h2) {
				hint = h2.Hint()
			}
			if !strings.Contains(msg, cdnHost) {
				t.Errorf("error %q does not name the CDN host %s", msg, cdnHost)
			}
			if strings.Contains(hint, "HF_TOKEN") || strings.Contains(hint, "HF_ENDPOINT") {
				t.Errorf("hint %q blames HF_TOKEN or HF_ENDPOINT for the CDN", hint)
			}
			if n := strings.Count(msg, "org/tiny@"); n != 1 {
				t.Errorf("error %q names the repo %d times, want once", msg, n)
			}
		})
	}
}
