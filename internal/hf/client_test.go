package hf_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rigorbench/rigor/internal/hf"
	"github.com/rigorbench/rigor/internal/hf/hubtest"
)

const testToken = "hf_SecretTokenValue0123456789"

// sleeps records the waits between retries instead of waiting.
type sleeps struct {
	mu sync.Mutex
	d  []time.Duration
}

func (s *sleeps) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.d = append(s.d, d)
	return ctx.Err()
}

func newClient(t *testing.T, h *hubtest.Hub, opts hf.ClientOptions) (*hf.Client, *sleeps) {
	t.Helper()
	s := &sleeps{}
	if opts.Endpoint == "" {
		opts.Endpoint = h.URL
	}
	if opts.Sleep == nil {
		opts.Sleep = s.sleep
	}
	if opts.Timeout == 0 {
		opts.Timeout = 5 * time.Second
	}
	return hf.NewClient(opts), s
}

func smallRepo() hubtest.RepoOptions {
	return hubtest.RepoOptions{
		Files: []hubtest.File{
			{Path: "README.md", Data: []byte("# tiny\n")},
			{Path: "config.json", Data: []byte(`{"n_layer": 2}`)},
			{Path: "tiny-Q8_0.gguf", Data: hubtest.RandomBytes(300_000, 1), LFS: true},
			{Path: "sub/dir/tiny-Q4_0.gguf", Data: hubtest.RandomBytes(200_000, 2), LFS: true},
		},
		Branches: []string{"main", "dev"},
		Tags:     []string{"v1.0"},
	}
}

func TestOptionsFromEnv(t *testing.T) {
	dir := t.TempDir()
	tokFile := filepath.Join(dir, "tokfile")
	os.WriteFile(tokFile, []byte("hf_fromPath\n"), 0o600)
	home := filepath.Join(dir, "hfhome")
	os.MkdirAll(home, 0o755)
	os.WriteFile(filepath.Join(home, "token"), []byte(" hf_fromHome "), 0o600)

	tests := []struct {
		env  map[string]string
		want hf.ClientOptions
	}{
		{map[string]string{}, hf.ClientOptions{}},
		{map[string]string{"HF_ENDPOINT": "https://hf-mirror.com/", "HF_TOKEN": "hf_x"}, hf.ClientOptions{Endpoint: "https://hf-mirror.com", Token: "hf_x"}},
		{map[string]string{"HF_TOKEN_PATH": tokFile, "HF_HOME": home}, hf.ClientOptions{Token: "hf_fromPath"}},
		{map[string]string{"HF_HOME": home}, hf.ClientOptions{Token: "hf_fromHome"}},
		{map[string]string{"HF_HOME": home, "HF_TOKEN": "hf_env"}, hf.ClientOptions{Token: "hf_env"}},
		{map[string]string{"HF_TOKEN_PATH": filepath.Join(dir, "missing")}, hf.ClientOptions{}},
		{map[string]string{"HF_HUB_OFFLINE": "1"}, hf.ClientOptions{Offline: true}},
		{map[string]string{"HF_HUB_OFFLINE": "on"}, hf.ClientOptions{Offline: true}},
		{map[string]string{"HF_HUB_OFFLINE": "Yes"}, hf.ClientOptions{Offline: true}},
		{map[string]string{"HF_HUB_OFFLINE": "TRUE"}, hf.ClientOptions{Offline: true}},
		{map[string]string{"HF_HUB_OFFLINE": "0"}, hf.ClientOptions{}},
		{map[string]string{"HF_HUB_OFFLINE": "false"}, hf.ClientOptions{}},
		{map[string]string{"TRANSFORMERS_OFFLINE": "1"}, hf.ClientOptions{Offline: true}},
		{map[string]string{"HF_HUB_ETAG_TIMEOUT": "30"}, hf.ClientOptions{Timeout: 30 * time.Second}},
		{map[string]string{"HF_HUB_ETAG_TIMEOUT": "2.5", "HF_HUB_DOWNLOAD_TIMEOUT": "20"}, hf.ClientOptions{Timeout: 20 * time.Second}},
		{map[string]string{"HF_HUB_DOWNLOAD_TIMEOUT": "soon"}, hf.ClientOptions{}},
	}
	for _, tt := range tests {
		env := map[string]string{"HOME": filepath.Join(dir, "nohome")}
		for k, v := range tt.env {
			env[k] = v
		}
		got := hf.OptionsFromEnv(func(k string) string { return env[k] })
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("OptionsFromEnv(%v) = %+v, want %+v", tt.env, got, tt.want)
		}
	}
}

func TestNewClient_Endpoint(t *testing.T) {
	for in, want := range map[string]string{
		"":                        hf.DefaultEndpoint,
		"https://hf-mirror.com/":  "https://hf-mirror.com",
		"http://127.0.0.1:8080//": "http://127.0.0.1:8080",
		"https://huggingface.co":  "https://huggingface.co",
	} {
		if got := hf.NewClient(hf.ClientOptions{Endpoint: in}).Endpoint(); got != want {
			t.Errorf("NewClient(Endpoint: %q).Endpoint() = %q, want %q", in, got, want)
		}
	}
}

func TestValidateRepoID(t *testing.T) {
	good := []string{"unsloth/MiniMax-M2.7-GGUF", "google-bert/bert-base-uncased", "a/b", "Org_1/model.v2"}
	bad := []string{"", "gpt2", "a/b/c", "/b", "a/", "a b/c", "a/b--c", "a/b..c", "-a/b", "a/b.", "a/b?c", "a/" + strings.Repeat("x", 100), "a/b%2Fc"}
	for _, id := range good {
		if err := hf.ValidateRepoID(id); err != nil {
			t.Errorf("ValidateRepoID(%q) = %v, want nil", id, err)
		}
	}
	for _, id := range bad {
		if err := hf.ValidateRepoID(id); err == nil {
			t.Errorf("ValidateRepoID(%q) = nil, want an error", id)
		}
	}
}

func TestClient_ResolveRevision(t *testing.T) {
	h := hubtest.New()
	defer h.Close()
	first := h.AddRepo("org/tiny", smallRepo())
	second := h.Push("org/tiny", "refs/pr/1", []hubtest.File{{Path: "README.md", Data: []byte("pr\n")}})
	if first == second {
		t.Fatalf("Push returned the first commit %s again", first)
	}
	c, _ := newClient(t, h, hf.ClientOptions{})
	tests := []struct{ rev, want, path string }{
		{"main", first, "/api/models/org/tiny/revision/main"},
		{"", first, "/api/models/org/tiny/revision/main"},
		{"dev", first, "/api/models/org/tiny/revision/dev"},
		{"v1.0", first, "/api/models/org/tiny/revision/v1.0"},
		{"refs/pr/1", second, "/api/models/org/tiny/revision/refs%2Fpr%2F1"},
		{first, first, "/api/models/org/tiny/revision/" + first},
		{strings.ToUpper(second), second, "/api/models/org/tiny/revision/" + strings.ToUpper(second)},
	}
	for _, tt := range tests {
		h.ResetRequests()
		got, err := c.ResolveRevision(context.Background(), "org/tiny", tt.rev)
		if err != nil || got != tt.want {
			t.Errorf("ResolveRevision(org/tiny, %q) = %q, %v, want %q", tt.rev, got, err, tt.want)
			continue
		}
		reqs := h.Requests()
		if len(reqs) != 1 || reqs[0].Path != tt.path {
			t.Errorf("ResolveRevision(org/tiny, %q) requested %+v, want one GET %s", tt.rev, reqs, tt.path)
		}
	}
}

func TestClient_InvalidRepoMakesNoRequest(t *testing.T) {
	h := hubtest.New()
	defer h.Close()
	c, _ := newClient(t, h, hf.ClientOptions{})
	ctx := context.Background()
	for _, id := range []string{"gpt2", "a/b/c", "../x/y", "a/b c"} {
		if _, err := c.ResolveRevision(ctx, id, "main"); err == nil || !strings.Contains(err.Error(), "invalid repo id") {
			t.Errorf("ResolveRevision(%q) error = %v, want invalid repo id", id, err)
		}
		if _, err := c.ListFiles(ctx, id, "main"); err == nil {
			t.Errorf("ListFiles(%q) succeeded, want an error", id)
		}
	}
	if n := len(h.Requests()); n != 0 {
		t.Errorf("invalid repo ids caused %d requests, want 0", n)
	}
}

func TestClient_HubErrors(t *testing.T) {
	h := hubtest.New()
	defer h.Close()
	commit := h.AddRepo("org/tiny", smallRepo())
	priv := smallRepo()
	priv.Private, priv.Token = true, testToken
	h.AddRepo("org/private", priv)
	gated := smallRepo()
	gated.Gated, gated.Token = true, testToken
	gatedCommit := h.AddRepo("org/gated", gated)

	anon, _ := newClient(t, h, hf.ClientOptions{})
	other, _ := newClient(t, h, hf.ClientOptions{Token: "hf_someOtherAccount"})
	granted, _ := newClient(t, h, hf.ClientOptions{Token: testToken})
	ctx := context.Background()
	resolve := func(repo, rev string) func(*hf.Client) error {
		return func(c *hf.Client) error { _, err := c.ResolveRevision(ctx, repo, rev); return err }
	}
	list := func(repo, rev string) func(*hf.Client) error {
		return func(c *hf.Client) error { _, err := c.ListFiles(ctx, repo, rev); return err }
	}
	download := func(repo, commit, file string) func(*hf.Client) error {
		return func(c *hf.Client) error {
			return c.Download(ctx, repo, commit, []hf.FileInfo{{Path: file, Size: 3, BlobID: strings.Repeat("a", 40)}}, hf.DownloadOptions{CacheDir: t.TempDir()})
		}
	}
	tests := []struct {
		name       string
		client     *hf.Client
		op         func(*hf.Client) error
		status     int
		code, hint string
	}{
		{"unknown repo anonymous", anon, resolve("org/nope", "main"), 401, hf.CodeRepoNotFound, "private repos need HF_TOKEN"},
		{"unknown repo with token", other, resolve("org/nope", "main"), 404, hf.CodeRepoNotFound, "has no access"},
		{"private repo anonymous", anon, resolve("org/private", "main"), 401, hf.CodeRepoNotFound, "private repos need HF_TOKEN"},
		{"private repo other token", other, list("org/private", "main"), 404, hf.CodeRepoNotFound, "has no access"},
		{"unknown revision", anon, resolve("org/tiny", "nope"), 404, hf.CodeRevisionNotFound, "/api/models/org/tiny/refs"},
		{"unknown revision tree", anon, list("org/tiny", "nope"), 404, hf.CodeRevisionNotFound, "branches and tags"},
		{"missing file", anon, download("org/tiny", commit, "nope.gguf"), 404, hf.CodeEntryNotFound, "check the file path \"nope.gguf\""},
		{"gated anonymous", anon, download("org/gated", gatedCommit, "README.md"), 401, hf.CodeGatedRepo, "accept the terms on " + h.URL + "/org/gated"},
		{"gated not granted", other, download("org/gated", gatedCommit, "README.md"), 403, hf.CodeGatedRepo, "has not been granted access"},
	}
	for _, tt := range tests {
		err := tt.op(tt.client)
		var he *hf.HubError
		if !errors.As(err, &he) {
			t.Errorf("%s: error = %v, want a *HubError", tt.name, err)
			continue
		}
		if he.Status != tt.status || he.Code != tt.code {
			t.Errorf("%s: got status %d code %q, want %d %q (error: %v)", tt.name, he.Status, he.Code, tt.status, tt.code, err)
		}
		if he.Message == "" {
			t.Errorf("%s: empty Message, want the hub's X-Error-Message", tt.name)
		}
		if !strings.Contains(he.Hint(), tt.hint) {
			t.Errorf("%s: Hint() = %q, want it to contain %q", tt.name, he.Hint(), tt.hint)
		}
	}

	// The gated repo's metadata is public, as on the hub; its files are not.
	if got, err := anon.ResolveRevision(ctx, "org/gated", "main"); err != nil || got != gatedCommit {
		t.Errorf("ResolveRevision(org/gated) anonymous = %q, %v, want %s", got, err, gatedCommit)
	}
	if _, err := granted.ResolveRevision(ctx, "org/private", "main"); err != nil {
		t.Errorf("ResolveRevision(org/private) with the granted token: %v", err)
	}
}

func TestHubError_Hint(t *testing.T) {
	tests := []struct {
		err  hf.HubError
		want string
	}{
		{hf.HubError{Status: 401}, "set HF_TOKEN"},
		{hf.HubError{Status: 401, TokenSent: true}, "rejected HF_TOKEN"},
		{hf.HubError{Status: 403, TokenSent: true}, "no access"},
		{hf.HubError{Status: 429}, "rate limiting"},
		{hf.HubError{Status: 502, Endpoint: "https://hf.example"}, "HF_HUB_OFFLINE"},
		{hf.HubError{Status: 400}, ""},
	}
	for _, tt := range tests {
		got := tt.err.Hint()
		if tt.want == "" && got != "" || !strings.Contains(got, tt.want) {
			t.Errorf("HubError%+v.Hint() = %q, want it to contain %q", tt.err, got, tt.want)
		}
	}
}

func TestClient_ListFilesPaginated(t *testing.T) {
	h := hubtest.New()
	defer h.Close()
	opts := smallRepo()
	for i := range 5 {
		opts.Files = append(opts.Files, hubtest.File{Path: fmt.Sprintf("shards/m-%05d-of-00005.gguf", i+1), Data: hubtest.RandomBytes(1000, uint64(10+i)), LFS: true})
	}
	opts.PageSize = 3
	commit := h.AddRepo("org/tiny", opts)
	c, _ := newClient(t, h, hf.ClientOptions{})
	files, err := c.ListFiles(context.Background(), "org/tiny", commit)
	if err != nil {
		t.Fatal(err)
	}
	var pages int
	for _, r := range h.Requests() {
		if strings.Contains(r.Path, "/tree/") {
			pages++
		}
	}
	if pages < 3 {
		t.Errorf("ListFiles made %d tree requests, want at least 3 pages", pages)
	}
	var got []string
	for _, f := range files {
		got = append(got, f.Path)
	}
	want := []string{"README.md", "config.json", "shards/m-00001-of-00005.gguf", "shards/m-00002-of-00005.gguf", "shards/m-00003-of-00005.gguf", "shards/m-00004-of-00005.gguf", "shards/m-00005-of-00005.gguf", "sub/dir/tiny-Q4_0.gguf", "tiny-Q8_0.gguf"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ListFiles paths = %q, want %q", got, want)
	}
	byPath := map[string]hf.FileInfo{}
	for _, f := range files {
		byPath[f.Path] = f
	}
	readme := byPath["README.md"]
	if readme.LFS || readme.SHA256 != "" || readme.BlobID != hubtest.GitBlobID([]byte("# tiny\n")) || readme.Size != 7 {
		t.Errorf("README.md = %+v, want git blob %s size 7", readme, hubtest.GitBlobID([]byte("# tiny\n")))
	}
	q8 := byPath["tiny-Q8_0.gguf"]
	if !q8.LFS || q8.SHA256 != sha256hex(hubtest.RandomBytes(300_000, 1)) || q8.Size != 300_000 || len(q8.BlobID) != 40 {
		t.Errorf("tiny-Q8_0.gguf = %+v, want LFS with the content's sha256 and size 300000", q8)
	}
}

func TestClient_Retries(t *testing.T) {
	h := hubtest.New()
	defer h.Close()
	commit := h.AddRepo("org/tiny", smallRepo())
	ctx := context.Background()

	// 429 twice, then success: two waits of the hub's Retry-After (1s).
	c, s := newClient(t, h, hf.ClientOptions{Backoff: 50 * time.Millisecond})
	h.FailNext("/api/models/org/tiny/revision/main", http.StatusTooManyRequests, 2)
	got, err := c.ResolveRevision(ctx, "org/tiny", "main")
	if err != nil || got != commit {
		t.Fatalf("ResolveRevision after two 429 = %q, %v, want %s", got, err, commit)
	}
	if want := []time.Duration{time.Second, time.Second}; !reflect.DeepEqual(s.d, want) {
		t.Errorf("waits after 429 with Retry-After: 1 = %v, want %v", s.d, want)
	}

	// 503 until retries run out: exponential backoff, then the error.
	c, s = newClient(t, h, hf.ClientOptions{MaxRetries: 3, Backoff: 100 * time.Millisecond, MaxBackoff: 300 * time.Millisecond})
	h.ResetRequests()
	h.FailNext("/api/models/org/tiny/tree/*", http.StatusServiceUnavailable, 10)
	_, err = c.ListFiles(ctx, "org/tiny", commit)
	var he *hf.HubError
	if !errors.As(err, &he) || he.Status != 503 || he.Attempts != 4 {
		t.Fatalf("ListFiles with the hub failing = %v, want a 503 *HubError after 4 attempts", err)
	}
	if !strings.Contains(err.Error(), "gave up after 4 attempts") {
		t.Errorf("error %q does not say how many attempts were made", err)
	}
	if n := len(h.Requests()); n != 4 {
		t.Errorf("hub saw %d requests, want 4", n)
	}
	if want := []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 300 * time.Millisecond}; !reflect.DeepEqual(s.d, want) {
		t.Errorf("backoff waits = %v, want %v", s.d, want)
	}

	// A 404 is not retried.
	c, s = newClient(t, h, hf.ClientOptions{})
	h.ResetRequests()
	if _, err := c.ResolveRevision(ctx, "org/tiny", "nope"); err == nil {
		t.Fatal("ResolveRevision(nope) succeeded")
	}
	if n := len(h.Requests()); n != 1 || len(s.d) != 0 {
		t.Errorf("a 404 was tried %d times with waits %v, want once", n, s.d)
	}
}

func TestClient_Timeout(t *testing.T) {
	h := hubtest.New()
	defer h.Close()
	h.AddRepo("org/tiny", smallRepo())
	h.Delay(10 * time.Second)
	c, _ := newClient(t, h, hf.ClientOptions{Timeout: 100 * time.Millisecond, MaxRetries: 1})
	_, err := c.ResolveRevision(context.Background(), "org/tiny", "main")
	var te *hf.TimeoutError
	if !errors.As(err, &te) {
		t.Fatalf("ResolveRevision against a silent hub = %v, want a *TimeoutError", err)
	}
	want := "hub did not answer within 100ms at " + h.URL
	if !strings.Contains(err.Error(), want) || te.Attempts != 2 {
		t.Errorf("error = %q (attempts %d), want it to contain %q after 2 attempts", err, te.Attempts, want)
	}
}

func TestClient_Unreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	endpoint := "http://" + ln.Addr().String()
	ln.Close() // nothing listens there now: connection refused
	c := hf.NewClient(hf.ClientOptions{Endpoint: endpoint, MaxRetries: -1, Token: testToken})
	_, err = c.ResolveRevision(context.Background(), "org/tiny", "main")
	var ue *hf.UnreachableError
	if !errors.As(err, &ue) {
		t.Fatalf("ResolveRevision against a closed port = %v, want an *UnreachableError", err)
	}
	if !strings.Contains(err.Error(), "hub unreachable at "+endpoint) || !strings.Contains(ue.Hint(), "HF_ENDPOINT") || !strings.Contains(ue.Hint(), "HF_HUB_OFFLINE") {
		t.Errorf("error %q, hint %q: want the endpoint and a hint naming HF_ENDPOINT and HF_HUB_OFFLINE", err, ue.Hint())
	}
}

func TestClient_Offline(t *testing.T) {
	h := hubtest.New()
	defer h.Close()
	commit := h.AddRepo("org/tiny", smallRepo())
	c, _ := newClient(t, h, hf.ClientOptions{Offline: true})
	ctx := context.Background()
	if _, err := c.ResolveRevision(ctx, "org/tiny", "main"); !errors.Is(err, hf.ErrOffline) {
		t.Errorf("ResolveRevision offline = %v, want ErrOffline", err)
	}
	if _, err := c.ListFiles(ctx, "org/tiny", commit); !errors.Is(err, hf.ErrOffline) {
		t.Errorf("ListFiles offline = %v, want ErrOffline", err)
	}
	files := []hf.FileInfo{{Path: "README.md", Size: 7, BlobID: hubtest.GitBlobID([]byte("# tiny\n"))}}
	if err := c.Download(ctx, "org/tiny", commit, files, hf.DownloadOptions{CacheDir: t.TempDir()}); !errors.Is(err, hf.ErrOffline) {
		t.Errorf("Download offline with an empty cache = %v, want ErrOffline", err)
	}
	if n := len(h.Requests()); n != 0 {
		t.Errorf("offline client made %d requests, want 0", n)
	}
}

func TestClient_Malformed(t *testing.T) {
	for _, tt := range []struct {
		e    hubtest.Endpoint
		path string
	}{
		{hubtest.EndpointModel, "/api/models/org/tiny/revision/main"},
		{hubtest.EndpointTree, "/api/models/org/tiny/tree/"},
	} {
		h := hubtest.New()
		commit := h.AddRepo("org/tiny", smallRepo())
		call := func(c *hf.Client) error {
			var err error
			if tt.e == hubtest.EndpointModel {
				_, err = c.ResolveRevision(context.Background(), "org/tiny", "main")
			} else {
				_, err = c.ListFiles(context.Background(), "org/tiny", commit)
			}
			return err
		}
		// Malformed every time: retried like a 5xx, then the error names
		// the request and the attempts.
		h.Malformed(tt.e)
		c, s := newClient(t, h, hf.ClientOptions{MaxRetries: 2, Backoff: time.Millisecond})
		err := call(c)
		if err == nil || !strings.Contains(err.Error(), "decoding response of GET "+h.URL+tt.path) {
			t.Errorf("malformed %s: error = %v, want it to name GET %s%s", tt.e, err, h.URL, tt.path)
		}
		if err == nil || !strings.Contains(err.Error(), "gave up after 3 attempts") || len(s.d) != 2 {
			t.Errorf("malformed %s: error %v after waits %v, want 2 retries", tt.e, err, s.d)
		}
		h.Close()

		// Malformed once: the retry succeeds.
		h = hubtest.New()
		commit = h.AddRepo("org/tiny", smallRepo())
		h.MalformedNext(tt.e, 1)
		c, s = newClient(t, h, hf.ClientOptions{Backoff: time.Millisecond})
		if err := call(c); err != nil || len(s.d) != 1 {
			t.Errorf("malformed %s once: %v after waits %v, want success after one retry", tt.e, err, s.d)
		}
		h.Close()
	}
}

// TestClient_TokenRedacted greps every error and hint the client produces,
// including ones quoting a hub that echoes the token, for the token.
func TestClient_TokenRedacted(t *testing.T) {
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth := r.Header.Get("Authorization")
		switch {
		case strings.Contains(r.URL.Path, "/revision/header"):
			w.Header().Set("X-Error-Message", "bad credentials: "+auth)
			w.WriteHeader(http.StatusUnauthorized)
		case strings.Contains(r.URL.Path, "/revision/body"):
			w.WriteHeader(http.StatusForbidden)
			fmt.Fprintf(w, `{"error": "token %s is not allowed"}`, auth)
		case strings.Contains(r.URL.Path, "/revision/text"):
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprintf(w, "upstream said %s", auth)
		default:
			fmt.Fprintf(w, `{"sha": %q}`, auth)
		}
	}))
	defer echo.Close()
	h := hubtest.New()
	defer h.Close()
	commit := h.AddRepo("org/tiny", smallRepo())
	gated := smallRepo()
	gated.Gated, gated.Token = true, "hf_granted"
	gatedCommit := h.AddRepo("org/gated", gated)

	ctx := context.Background()
	var errs []error
	ec, _ := newClient(t, nil, hf.ClientOptions{Endpoint: echo.URL, Token: testToken, MaxRetries: 1})
	for _, rev := range []string{"header", "body", "text", "main"} {
		_, err := ec.ResolveRevision(ctx, "org/echo", rev)
		errs = append(errs, err)
	}
	hc, _ := newClient(t, h, hf.ClientOptions{Token: testToken, MaxRetries: 1})
	_, err := hc.ResolveRevision(ctx, "org/nope", "main")
	errs = append(errs, err)
	_, err = hc.ListFiles(ctx, "org/tiny", "nope")
	errs = append(errs, err)
	errs = append(errs, hc.Download(ctx, "org/gated", gatedCommit, []hf.FileInfo{{Path: "README.md", Size: 7, BlobID: hubtest.GitBlobID([]byte("# tiny\n"))}}, hf.DownloadOptions{CacheDir: t.TempDir()}))
	h.Corrupt("org/tiny", "tiny-Q8_0.gguf")
	files, _ := hc.ListFiles(ctx, "org/tiny", commit)
	q8, _ := hf.MatchFiles(files, []string{"tiny-Q8_0.gguf"})
	errs = append(errs, hc.Download(ctx, "org/tiny", commit, q8, hf.DownloadOptions{CacheDir: t.TempDir()}))
	h.Delay(5 * time.Second)
	tc, _ := newClient(t, h, hf.ClientOptions{Token: testToken, Timeout: 50 * time.Millisecond, MaxRetries: -1})
	_, err = tc.ResolveRevision(ctx, "org/tiny", "main")
	errs = append(errs, err)

	for i, err := range errs {
		if err == nil {
			t.Errorf("operation %d succeeded, want an error", i)
			continue
		}
		texts := []string{err.Error(), fmt.Sprintf("%+v", err), fmt.Sprintf("%#v", err)}
		var hinter interface{ Hint() string }
		if errors.As(err, &hinter) {
			texts = append(texts, hinter.Hint())
		}
		for e := err; e != nil; e = errors.Unwrap(e) {
			texts = append(texts, e.Error())
		}
		for _, s := range texts {
			if strings.Contains(s, testToken) {
				t.Errorf("operation %d: the token appears in %q", i, s)
			}
		}
	}
}

func sha256hex(b []byte) string {
	return fmt.Sprintf("%x", sha256sum(b))
}

// Stat sends one HEAD to the hub per file and never follows an LFS
// file's redirect to the CDN; a file the commit lists and the hub no
// longer serves is 404 EntryNotFound, as is one the commit never had.
func TestStat(t *testing.T) {
	h := hubtest.New()
	t.Cleanup(h.Close)
	h.StartCDN()
	commit := h.AddRepo("org/tiny", smallRepo())
	c, _ := newClient(t, h, hf.ClientOptions{Token: testToken})
	ctx := context.Background()
	for _, f := range []string{"README.md", "tiny-Q8_0.gguf", "sub/dir/tiny-Q4_0.gguf"} {
		if err := c.Stat(ctx, "org/tiny", commit, f); err != nil {
			t.Errorf("Stat %s = %v, want nil", f, err)
		}
	}
	for _, r := range h.Requests() {
		if r.Server != "hub" || r.Method != http.MethodHead || r.Token != testToken {
			t.Errorf("request %+v: want a HEAD to the hub with the token, none to the CDN", r)
		}
	}
	h.PurgeFile("org/tiny", "tiny-Q8_0.gguf")
	var he *hf.HubError
	for _, f := range []string{"tiny-Q8_0.gguf", "nothere.gguf"} {
		err := c.Stat(ctx, "org/tiny", commit, f)
		if !errors.As(err, &he) || he.Status != 404 || he.Code != hf.CodeEntryNotFound || he.Path != f {
			t.Errorf("Stat %s = %v, want 404 EntryNotFound for it", f, err)
		}
	}
	if err := c.Stat(ctx, "org/gone", commit, "README.md"); !errors.As(err, &he) || he.Code != hf.CodeRepoNotFound {
		t.Errorf("Stat of a missing repo = %v, want RepoNotFound", err)
	}
	off := hf.NewClient(hf.ClientOptions{Endpoint: h.URL, Offline: true})
	if err := off.Stat(ctx, "org/tiny", commit, "README.md"); !errors.Is(err, hf.ErrOffline) {
		t.Errorf("Stat offline = %v, want ErrOffline", err)
	}
}
