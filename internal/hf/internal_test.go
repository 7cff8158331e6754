package hf

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestNextLink(t *testing.T) {
	base := "https://huggingface.co/api/models/o/n/tree/main?recursive=true"
	tests := []struct {
		values []string
		want   string
		err    bool
	}{
		{nil, "", false},
		{[]string{`<https://huggingface.co/api/models/o/n/tree/main?recursive=true&cursor=ZXlK>; rel="next"`}, "https://huggingface.co/api/models/o/n/tree/main?recursive=true&cursor=ZXlK", false},
		{[]string{`</api/models/o/n/tree/main?cursor=abc>; rel=next`}, "https://huggingface.co/api/models/o/n/tree/main?cursor=abc", false},
		{[]string{`<https://x/prev>; rel="prev", <https://x/next?a=1,2>; rel="next"`}, "https://x/next?a=1,2", false},
		{[]string{`<https://x/first>; rel="first"`, `<https://x/n>; title="a, b"; rel="last next"`}, "https://x/n", false},
		{[]string{`<https://x/prev>; rel="prev"`}, "", false},
		{[]string{`<https://x/n; rel="next"`}, "", true},
		{[]string{`<file:///etc/passwd>; rel="next"`}, "", true},
	}
	for _, tt := range tests {
		got, err := nextLink(base, tt.values)
		if got != tt.want || (err != nil) != tt.err {
			t.Errorf("nextLink(%q) = %q, %v, want %q (error %v)", tt.values, got, err, tt.want, tt.err)
		}
	}
}

func FuzzNextLink(f *testing.F) {
	f.Add(`<https://huggingface.co/api/models/o/n/tree/main?cursor=x>; rel="next"`)
	f.Add(`<a>; rel="prev", <b>; rel="next"`)
	f.Add(`<"x,">; title=",<"; rel=next`)
	f.Fuzz(func(t *testing.T, v string) {
		got, err := nextLink("http://127.0.0.1:1/api/models/o/n/tree/main", []string{v})
		if err == nil && got != "" && !strings.HasPrefix(got, "http://") && !strings.HasPrefix(got, "https://") {
			t.Errorf("nextLink(%q) = %q, not an http(s) URL", v, got)
		}
	})
}

func TestContentRangeStart(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"bytes 100-199/200", 100, true},
		{"bytes 0-0/1", 0, true},
		{" bytes 5-9/*", 5, true},
		{"bytes */200", 0, false},
		{"items 1-2/3", 0, false},
		{"bytes -1-2/3", 0, false},
		{"", 0, false},
	}
	for _, tt := range tests {
		got, ok := contentRangeStart(tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("contentRangeStart(%q) = %d, %v, want %d, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func FuzzContentRangeStart(f *testing.F) {
	f.Add("bytes 100-199/200")
	f.Add("bytes */0")
	f.Fuzz(func(t *testing.T, v string) {
		if n, ok := contentRangeStart(v); ok && n < 0 {
			t.Errorf("contentRangeStart(%q) = %d, negative", v, n)
		}
	})
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 8, 20, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		in   string
		want time.Duration
	}{
		{"", 0},
		{"3", 3 * time.Second},
		{" 120 ", 2 * time.Minute},
		{"-5", 0},
		{"Thu, 20 Aug 2026 12:00:30 GMT", 30 * time.Second},
		{"Thu, 20 Aug 2026 11:00:00 GMT", 0},
		{"soon", 0},
	}
	for _, tt := range tests {
		if got := parseRetryAfter(tt.in, now); got != tt.want {
			t.Errorf("parseRetryAfter(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func FuzzParseRetryAfter(f *testing.F) {
	f.Add("3")
	f.Add("Thu, 20 Aug 2026 12:00:30 GMT")
	f.Fuzz(func(t *testing.T, v string) {
		if d := parseRetryAfter(v, time.Now()); d < 0 {
			t.Errorf("parseRetryAfter(%q) = %v, negative", v, d)
		}
	})
}

func TestEscapeAll(t *testing.T) {
	for in, want := range map[string]string{
		"main":          "main",
		"refs/pr/1":     "refs%2Fpr%2F1",
		"v1.0-rc_2~x":   "v1.0-rc_2~x",
		"a b+c&d=e:f@g": "a%20b%2Bc%26d%3De%3Af%40g",
		"ü":             "%C3%BC",
	} {
		if got := escapeAll(in); got != want {
			t.Errorf("escapeAll(%q) = %q, want %q", in, got, want)
		}
	}
	if got, want := escapePath("sub dir/a#b.gguf"), "sub%20dir/a%23b.gguf"; got != want {
		t.Errorf("escapePath = %q, want %q", got, want)
	}
}

// FuzzTreeEntry feeds tree listing JSON to the decoder: whatever the hub
// sends, an accepted entry has a safe path and well-formed hashes.
func FuzzTreeEntry(f *testing.F) {
	f.Add(`{"type":"file","path":"config.json","oid":"0123456789abcdef0123456789abcdef01234567","size":570}`)
	f.Add(`{"type":"file","path":"m.gguf","oid":"0123456789abcdef0123456789abcdef01234567","size":5,"lfs":{"oid":"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef","size":5,"pointerSize":130}}`)
	f.Add(`{"type":"file","path":"../x","oid":"0123456789abcdef0123456789abcdef01234567","size":1}`)
	f.Fuzz(func(t *testing.T, in string) {
		var e treeEntry
		if json.Unmarshal([]byte(in), &e) != nil {
			return
		}
		fi, err := e.fileInfo()
		if err != nil {
			return
		}
		if validFilePath(fi.Path) != nil || !isHex(fi.BlobID, 40) || fi.Size < 0 || fi.LFS && !isHex(fi.SHA256, 64) {
			t.Errorf("accepted %q as %+v", in, fi)
		}
		if blobName(fi) == "" || strings.ContainsAny(blobName(fi), "/.") {
			t.Errorf("accepted %q with blob name %q", in, blobName(fi))
		}
		root := "/cache/snap"
		if p := filepath.Join(root, filepath.FromSlash(fi.Path)); !strings.HasPrefix(p, root+"/") {
			t.Errorf("path %q escapes the snapshot dir: %s", fi.Path, p)
		}
	})
}

// FuzzMatchFiles checks glob matching never panics and agrees with
// path.Match for globs without "**".
func FuzzMatchFiles(f *testing.F) {
	f.Add("UD-IQ4_XS/*-of-00004.gguf", "UD-IQ4_XS/m-00001-of-00004.gguf")
	f.Add("**/*.gguf", "a/b/c.gguf")
	f.Add("[", "x")
	f.Fuzz(func(t *testing.T, glob, p string) {
		if strings.Count(glob, "**") > 8 {
			return
		}
		got, err := MatchFiles([]FileInfo{{Path: p}}, []string{glob})
		if err == nil && len(got) != 1 {
			t.Errorf("MatchFiles(%q, %q) = %v without error", p, glob, got)
		}
	})
}

func TestCacheDir(t *testing.T) {
	tests := []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"HOME": "/home/u"}, "/home/u/.cache/huggingface/hub"},
		{map[string]string{"HOME": "/home/u", "XDG_CACHE_HOME": "/xdg"}, "/xdg/huggingface/hub"},
		{map[string]string{"HOME": "/home/u", "XDG_CACHE_HOME": "/xdg", "HF_HOME": "/hf"}, "/hf/hub"},
		{map[string]string{"HOME": "/home/u", "HF_HOME": "~/hf"}, "/home/u/hf/hub"},
		{map[string]string{"HOME": "/home/u", "HF_HOME": "/hf", "HUGGINGFACE_HUB_CACHE": "/legacy"}, "/legacy"},
		{map[string]string{"HOME": "/home/u", "HF_HOME": "/hf", "HUGGINGFACE_HUB_CACHE": "/legacy", "HF_HUB_CACHE": "/hub"}, "/hub"},
	}
	for _, tt := range tests {
		got, err := CacheDirFrom(func(k string) string { return tt.env[k] })
		if err != nil || got != tt.want {
			t.Errorf("CacheDirFrom(%v) = %q, %v, want %q", tt.env, got, err, tt.want)
		}
	}
	if got, want := SnapshotPath("/c", "unsloth/M-GGUF", "abc", "Q4/x.gguf"), "/c/models--unsloth--M-GGUF/snapshots/abc/Q4/x.gguf"; got != want {
		t.Errorf("SnapshotPath = %q, want %q", got, want)
	}
}
