package hubtest_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/rigorbench/rigor/internal/hf"
	"github.com/rigorbench/rigor/internal/hf/hubtest"
)

func get(t *testing.T, method, url, token string, header ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, body
}

var (
	readme = []byte("# tiny\n")
	model  = hubtest.RandomBytes(4096, 3)
)

func newHub(t *testing.T) (*hubtest.Hub, string) {
	h := hubtest.New()
	t.Cleanup(h.Close)
	commit := h.AddRepo("org/tiny", hubtest.RepoOptions{
		Files: []hubtest.File{{Path: "README.md", Data: readme}, {Path: "q/m.gguf", Data: model, LFS: true}},
		Tags:  []string{"v1"},
	})
	return h, commit
}

func TestHub_ModelInfo(t *testing.T) {
	h, commit := newHub(t)
	resp, body := get(t, "GET", h.URL+"/api/models/org/tiny/revision/v1?blobs=true", "")
	if resp.StatusCode != 200 {
		t.Fatalf("model info: %s %s", resp.Status, body)
	}
	var info struct {
		ID       string `json:"id"`
		SHA      string `json:"sha"`
		Private  bool   `json:"private"`
		Siblings []struct {
			RFilename string `json:"rfilename"`
			Size      int    `json:"size"`
			BlobID    string `json:"blobId"`
			LFS       *struct {
				SHA256      string `json:"sha256"`
				Size        int    `json:"size"`
				PointerSize int    `json:"pointerSize"`
			} `json:"lfs"`
		} `json:"siblings"`
	}
	if err := json.Unmarshal(body, &info); err != nil {
		t.Fatal(err)
	}
	if info.ID != "org/tiny" || info.SHA != commit || len(info.Siblings) != 2 {
		t.Fatalf("model info = %s, want id org/tiny, sha %s, 2 siblings", body, commit)
	}
	s0, s1 := info.Siblings[0], info.Siblings[1]
	if s0.RFilename != "README.md" || s0.BlobID != hubtest.GitBlobID(readme) || s0.Size != len(readme) || s0.LFS != nil {
		t.Errorf("README.md sibling = %+v", s0)
	}
	if s1.RFilename != "q/m.gguf" || s1.LFS == nil || s1.LFS.SHA256 != sha256hex(model) || s1.LFS.Size != len(model) || s1.LFS.PointerSize == 0 {
		t.Errorf("q/m.gguf sibling = %+v, want lfs.sha256 %s", s1, sha256hex(model))
	}
	_, body = get(t, "GET", h.URL+"/api/models/org/tiny", "")
	if strings.Contains(string(body), `"size"`) || !strings.Contains(string(body), `"rfilename":"README.md"`) {
		t.Errorf("model info without blobs=true = %s, want rfilename only", body)
	}
}

func TestHub_TreePagination(t *testing.T) {
	h := hubtest.New()
	defer h.Close()
	var files []hubtest.File
	for i := range 5 {
		files = append(files, hubtest.File{Path: fmt.Sprintf("d/f%d", i), Data: []byte{byte(i)}})
	}
	commit := h.AddRepo("org/many", hubtest.RepoOptions{Files: files, PageSize: 2})
	next := h.URL + "/api/models/org/many/tree/main?recursive=true"
	var paths []string
	var pages int
	for next != "" {
		resp, body := get(t, "GET", next, "")
		pages++
		var entries []struct{ Type, Path, OID string }
		if err := json.Unmarshal(body, &entries); err != nil {
			t.Fatalf("page %d: %v: %s", pages, err, body)
		}
		for _, e := range entries {
			paths = append(paths, e.Type+":"+e.Path)
		}
		next = ""
		if l := resp.Header.Get("Link"); l != "" {
			if !strings.HasPrefix(l, "<"+h.URL+"/api/models/org/many/tree/main?") || !strings.HasSuffix(l, `>; rel="next"`) {
				t.Fatalf("Link = %q, want <absolute url>; rel=\"next\"", l)
			}
			next = strings.TrimPrefix(strings.TrimSuffix(l, `>; rel="next"`), "<")
		}
	}
	want := "directory:d file:d/f0 file:d/f1 file:d/f2 file:d/f3 file:d/f4"
	if got := strings.Join(paths, " "); got != want || pages != 3 {
		t.Errorf("tree = %q in %d pages, want %q in 3", got, pages, want)
	}
	// Not recursive: the top level only.
	_, body := get(t, "GET", h.URL+"/api/models/org/many/tree/"+commit, "")
	if !strings.Contains(string(body), `"path":"d"`) || strings.Contains(string(body), "d/f0") {
		t.Errorf("non-recursive tree = %s, want only the directory d", body)
	}
}

func TestHub_Resolve(t *testing.T) {
	h, commit := newHub(t)
	resp, body := get(t, "GET", h.URL+"/org/tiny/resolve/main/README.md", "")
	if resp.StatusCode != 200 || string(body) != string(readme) || resp.Header.Get("X-Repo-Commit") != commit || resp.Header.Get("ETag") != `"`+hubtest.GitBlobID(readme)+`"` {
		t.Errorf("resolve README.md: %s %q headers %v", resp.Status, body, resp.Header)
	}
	resp, _ = get(t, "HEAD", h.URL+"/org/tiny/resolve/v1/q/m.gguf", "")
	loc := resp.Header.Get("Location")
	if resp.StatusCode != 302 || resp.Header.Get("X-Linked-Etag") != `"`+sha256hex(model)+`"` || resp.Header.Get("X-Linked-Size") != fmt.Sprint(len(model)) || !strings.HasPrefix(loc, h.URL+"/cdn/") {
		t.Fatalf("resolve q/m.gguf: %s headers %v, want 302 to the CDN with X-Linked-*", resp.Status, resp.Header)
	}
	resp, body = get(t, "GET", loc, "", "Range", "bytes=4000-")
	if resp.StatusCode != 206 || string(body) != string(model[4000:]) || resp.Header.Get("Content-Range") != fmt.Sprintf("bytes 4000-4095/%d", len(model)) {
		t.Errorf("ranged CDN GET: %s %d bytes, Content-Range %q", resp.Status, len(body), resp.Header.Get("Content-Range"))
	}
	h.NoRange(true)
	resp, body = get(t, "GET", loc, "", "Range", "bytes=4000-")
	if resp.StatusCode != 200 || len(body) != len(model) {
		t.Errorf("ranged CDN GET with NoRange: %s %d bytes, want 200 and the whole file", resp.Status, len(body))
	}
	h.Corrupt("org/tiny", "q/m.gguf")
	_, body = get(t, "GET", loc, "")
	if len(body) != len(model) || string(body) == string(model) {
		t.Errorf("Corrupt: served %d bytes, same as the content: %v", len(body), string(body) == string(model))
	}
}

func TestHub_Errors(t *testing.T) {
	h := hubtest.New()
	defer h.Close()
	h.AddRepo("org/tiny", hubtest.RepoOptions{Files: []hubtest.File{{Path: "a", Data: readme}}})
	h.AddRepo("org/private", hubtest.RepoOptions{Files: []hubtest.File{{Path: "a", Data: readme}}, Private: true, Token: "hf_ok"})
	h.AddRepo("org/gated", hubtest.RepoOptions{Files: []hubtest.File{{Path: "a", Data: readme}}, Gated: true, Token: "hf_ok"})
	tests := []struct {
		path, token string
		status      int
		code        string
	}{
		{"/api/models/org/nope", "", 401, "RepoNotFound"},
		{"/api/models/org/nope", "hf_other", 404, "RepoNotFound"},
		{"/api/models/org/private/revision/main", "", 401, "RepoNotFound"},
		{"/api/models/org/private/revision/main", "hf_other", 404, "RepoNotFound"},
		{"/api/models/org/private/revision/main", "hf_ok", 200, ""},
		{"/api/models/org/tiny/revision/nope", "", 404, "RevisionNotFound"},
		{"/api/models/org/tiny/tree/nope?recursive=true", "", 404, "RevisionNotFound"},
		{"/org/tiny/resolve/main/nope", "", 404, "EntryNotFound"},
		{"/org/tiny/resolve/nope/a", "", 404, "RevisionNotFound"},
		{"/org/gated/resolve/main/a", "", 401, "GatedRepo"},
		{"/org/gated/resolve/main/a", "hf_other", 403, "GatedRepo"},
		{"/org/gated/resolve/main/a", "hf_ok", 200, ""},
		{"/api/models/org/gated/revision/main", "", 200, ""},
	}
	for _, tt := range tests {
		resp, body := get(t, "GET", h.URL+tt.path, tt.token)
		if resp.StatusCode != tt.status || resp.Header.Get("X-Error-Code") != tt.code {
			t.Errorf("GET %s (token %q): got %d %q, want %d %q", tt.path, tt.token, resp.StatusCode, resp.Header.Get("X-Error-Code"), tt.status, tt.code)
		}
		if tt.code == "" {
			continue
		}
		var e struct{ Error string }
		if json.Unmarshal(body, &e) != nil || e.Error == "" || e.Error != resp.Header.Get("X-Error-Message") {
			t.Errorf("GET %s: body %s, X-Error-Message %q, want {\"error\": message}", tt.path, body, resp.Header.Get("X-Error-Message"))
		}
	}
	h.FailNext("/api/models/org/tiny", 429, 1)
	if resp, _ := get(t, "GET", h.URL+"/api/models/org/tiny", ""); resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "1" {
		t.Errorf("FailNext 429: got %s Retry-After %q", resp.Status, resp.Header.Get("Retry-After"))
	}
	if resp, _ := get(t, "GET", h.URL+"/api/models/org/tiny", ""); resp.StatusCode != 200 {
		t.Errorf("after FailNext n=1 ran out: got %s, want 200", resp.Status)
	}
	h.Malformed(hubtest.EndpointRefs)
	_, body := get(t, "GET", h.URL+"/api/models/org/tiny/refs", "")
	var v any
	if json.Unmarshal(body, &v) == nil {
		t.Errorf("Malformed(refs) served valid JSON %s", body)
	}
	if n := len(h.Requests()); n != len(tests)+3 {
		t.Errorf("request log holds %d entries, want %d", n, len(tests)+3)
	}
}

func writeConfig(t *testing.T) string {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "local.bin"), []byte("from disk"), 0o644)
	cfg := `{"repos": {"org/tiny": {"files": [
		{"path": "README.md", "text": "# tiny\n"},
		{"path": "m.gguf", "size": 5000, "seed": 9, "lfs": true},
		{"path": "local.bin", "from": "local.bin"}
	], "tags": ["v1"], "pageSize": 1}}}`
	p := filepath.Join(dir, "hub.json")
	os.WriteFile(p, []byte(cfg), 0o644)
	return p
}

func TestRun(t *testing.T) {
	cfg := writeConfig(t)
	pr, pw := io.Pipe()
	stop := make(chan os.Signal)
	code := make(chan int)
	urlFile := filepath.Join(t.TempDir(), "url")
	go func() { code <- hubtest.Run([]string{"-url-file", urlFile, cfg}, pw, io.Discard, stop) }()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	url := strings.TrimSpace(line)
	if b, _ := os.ReadFile(urlFile); strings.TrimSpace(string(b)) != url {
		t.Errorf("-url-file holds %q, want %q", b, url)
	}
	c := hf.NewClient(hf.ClientOptions{Endpoint: url})
	files, err := c.ListFiles(context.Background(), "org/tiny", "v1")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 3 || files[1].Path != "local.bin" || files[1].BlobID != hubtest.GitBlobID([]byte("from disk")) || files[2].SHA256 != sha256hex(hubtest.RandomBytes(5000, 9)) {
		t.Errorf("files served from the config = %+v", files)
	}
	close(stop)
	if got := <-code; got != 0 {
		t.Errorf("Run exited %d, want 0", got)
	}
	if got := hubtest.Run([]string{}, io.Discard, io.Discard, stop); got != 2 {
		t.Errorf("Run without a config exited %d, want 2", got)
	}
	if got := hubtest.Run([]string{filepath.Join(t.TempDir(), "missing.json")}, io.Discard, io.Discard, stop); got != 1 {
		t.Errorf("Run with a missing config exited %d, want 1", got)
	}
}

// TestCmd runs testdata/script/*.txtar with fake-hub as an in-process
// command and hf-files, a small client, reading HF_ENDPOINT from the
// script's environment.
func TestCmd(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir: "testdata/script",
		Cmds: map[string]func(*testscript.TestScript, bool, []string){
			"fake-hub": hubtest.Cmd,
			"hf-files": func(ts *testscript.TestScript, neg bool, args []string) {
				c := hf.NewClient(hf.OptionsFromEnv(ts.Getenv))
				commit, err := c.ResolveRevision(context.Background(), args[0], args[1])
				if err == nil {
					var files []hf.FileInfo
					if files, err = c.ListFiles(context.Background(), args[0], commit); err == nil {
						for _, f := range files {
							fmt.Fprintf(ts.Stdout(), "%s %d %v\n", f.Path, f.Size, f.LFS)
						}
					}
				}
				if err != nil {
					fmt.Fprintln(ts.Stderr(), err)
				}
				if (err != nil) != neg {
					ts.Fatalf("hf-files: unexpected result: %v", err)
				}
			},
		},
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
	})
}

// A deleted file is gone from every listing and download of the repo,
// whose commit keeps its sha and its other files.
func TestHub_DeleteFile(t *testing.T) {
	h, commit := newHub(t)
	resp, _ := get(t, "HEAD", h.URL+"/org/tiny/resolve/"+commit+"/q/m.gguf", "")
	loc := resp.Header.Get("Location")
	h.DeleteFile("org/tiny", "q/m.gguf")
	c := hf.NewClient(hf.ClientOptions{Endpoint: h.URL})
	if got, err := c.ResolveRevision(context.Background(), "org/tiny", "main"); err != nil || got != commit {
		t.Fatalf("ResolveRevision after DeleteFile = %q, %v; want the same commit %s", got, err, commit)
	}
	files, err := c.ListFiles(context.Background(), "org/tiny", commit)
	if err != nil || len(files) != 1 || files[0].Path != "README.md" {
		t.Errorf("ListFiles after DeleteFile = %+v, %v; want README.md alone", files, err)
	}
	_, body := get(t, "GET", h.URL+"/api/models/org/tiny/revision/"+commit, "")
	if strings.Contains(string(body), "m.gguf") || !strings.Contains(string(body), "README.md") {
		t.Errorf("model info after DeleteFile lists: %s", body)
	}
	resp, _ = get(t, "HEAD", h.URL+"/org/tiny/resolve/"+commit+"/q/m.gguf", "")
	if resp.StatusCode != 404 || resp.Header.Get("X-Error-Code") != "EntryNotFound" {
		t.Errorf("HEAD resolve of the deleted file: %s %q, want 404 EntryNotFound", resp.Status, resp.Header.Get("X-Error-Code"))
	}
	if resp, _ = get(t, "GET", loc, ""); resp.StatusCode == 200 {
		t.Errorf("CDN GET of the deleted file's old link: %s", resp.Status)
	}
	if resp, body = get(t, "GET", h.URL+"/org/tiny/resolve/"+commit+"/README.md", ""); resp.StatusCode != 200 || string(body) != string(readme) {
		t.Errorf("README.md after DeleteFile: %s %q", resp.Status, body)
	}
}

// A purged file is still listed at its commit, but the hub no longer
// serves it.
func TestHub_PurgeFile(t *testing.T) {
	h, commit := newHub(t)
	h.PurgeFile("org/tiny", "q/m.gguf")
	c := hf.NewClient(hf.ClientOptions{Endpoint: h.URL})
	files, err := c.ListFiles(context.Background(), "org/tiny", commit)
	if err != nil || len(files) != 2 {
		t.Errorf("ListFiles after PurgeFile = %+v, %v; want both files", files, err)
	}
	resp, _ := get(t, "HEAD", h.URL+"/org/tiny/resolve/"+commit+"/q/m.gguf", "")
	if resp.StatusCode != 404 || resp.Header.Get("X-Error-Code") != "EntryNotFound" {
		t.Errorf("HEAD resolve of the purged file: %s %q, want 404 EntryNotFound", resp.Status, resp.Header.Get("X-Error-Code"))
	}
	if resp, _ := get(t, "GET", h.URL+"/cdn/repos/org/tiny/"+sha256hex(model), ""); resp.StatusCode == 200 {
		t.Errorf("CDN GET of the purged file: %s", resp.Status)
	}
}
