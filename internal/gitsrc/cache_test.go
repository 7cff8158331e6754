package gitsrc

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	sg "github.com/rigorbench/rigor/internal/suggest"
)

func TestCacheDir(t *testing.T) {
	home := t.TempDir()
	tests := []struct {
		rigor, xdg string
		want       string
	}{
		{"/srv/rigor-cache", "/x", "/srv/rigor-cache"},
		{"", "/xdg", "/xdg/rigor"},
		{"", "relative/xdg", filepath.Join(home, ".cache", "rigor")}, // XDG requires absolute paths
		{"", "", filepath.Join(home, ".cache", "rigor")},
	}
	for _, tt := range tests {
		t.Setenv("HOME", home)
		t.Setenv("RIGOR_CACHE", tt.rigor)
		t.Setenv("XDG_CACHE_HOME", tt.xdg)
		if got := CacheDirFrom(os.Getenv); got != tt.want {
			t.Errorf("CacheDirFrom with RIGOR_CACHE=%q XDG_CACHE_HOME=%q = %q, want %q", tt.rigor, tt.xdg, got, tt.want)
		}
	}
}

var mirrorNameRE = regexp.MustCompile(`^[A-Za-z0-9._-]+-[0-9a-f]{12}$`)

func TestMirrorPath(t *testing.T) {
	tests := []struct {
		url      string
		readable string // the part before the hash
	}{
		{"https://github.com/ggml-org/llama.cpp", "github.com-ggml-org-llama.cpp"},
		{"https://github.com/ikawrakow/ik_llama.cpp.git", "github.com-ikawrakow-ik_llama.cpp.git"},
		{"https://user:secret@example.com/a/b", "example.com-a-b"},
		{"git@github.com:org/repo.git", "github.com-org-repo.git"},
		{"/home/me/src/engine", "home-me-src-engine"},
		{"file:///home/me/src/engine/", "home-me-src-engine"},
		{"///", "repo"},
		{"https://example.com/" + strings.Repeat("very-long-", 20) + "tail", "long-" + strings.Repeat("very-long-", 7) + "tail"},
	}
	seen := map[string]string{}
	for _, tt := range tests {
		got := MirrorPath("/cache", tt.url)
		dir, base := filepath.Split(got)
		if dir != "/cache/git/" || !mirrorNameRE.MatchString(base) {
			t.Errorf("MirrorPath(/cache, %q) = %q, want /cache/git/<name>-<12 hex>", tt.url, got)
			continue
		}
		if readable := base[:len(base)-13]; readable != tt.readable {
			t.Errorf("MirrorPath(/cache, %q): name %q, want %q", tt.url, readable, tt.readable)
		}
		if other, dup := seen[got]; dup {
			t.Errorf("MirrorPath(/cache, %q) = MirrorPath(/cache, %q) = %q", tt.url, other, got)
		}
		seen[got] = tt.url
		if again := MirrorPath("/cache", tt.url); again != got {
			t.Errorf("MirrorPath(/cache, %q) changed: %q then %q", tt.url, got, again)
		}
	}
	// URLs that sanitize alike still get their own mirror.
	a, b := MirrorPath("/c", "https://h/a/b"), MirrorPath("/c", "https://h/a-b")
	if a == b {
		t.Errorf("MirrorPath of https://h/a/b and https://h/a-b are both %q", a)
	}
}

func FuzzMirrorPath(f *testing.F) {
	f.Add("https://github.com/ggml-org/llama.cpp")
	f.Add("git@github.com:org/repo.git")
	f.Add("/a/../b")
	f.Add("..")
	f.Fuzz(func(t *testing.T, url string) {
		got := MirrorPath("/cache", url)
		dir, base := filepath.Split(got)
		if dir != "/cache/git/" || !mirrorNameRE.MatchString(base) || len(base) > maxMirrorNameLen+13 {
			t.Errorf("MirrorPath(/cache, %q) = %q, want /cache/git/<name>-<12 hex>", url, got)
		}
		if strings.HasPrefix(base, ".") {
			t.Errorf("MirrorPath(/cache, %q) = %q: a hidden or dot name", url, got)
		}
	})
}

func TestSuggest(t *testing.T) {
	refs := map[string]string{
		"refs/heads/main": "1", "refs/heads/master-old": "2", "refs/heads/dev": "3",
		"refs/tags/v1.0": "4", "refs/tags/v1.0^{}": "5", "refs/tags/b8000": "6", "HEAD": "ref: refs/heads/main",
	}
	tests := []struct {
		ref  string
		want []string
	}{
		{"mian", []string{"main"}},
		{"master", []string{"master-old"}},
		{"maim", []string{"main"}},
		{"v1.1", []string{"v1.0"}},
		{"refs/tags/b800", []string{"b8000"}},
		{"zzzzzzzz", nil},
	}
	for _, tt := range tests {
		got := suggest(refs, tt.ref)
		if strings.Join(got, ",") != strings.Join(tt.want, ",") {
			t.Errorf("suggest(%q) = %q, want %q", tt.ref, got, tt.want)
		}
	}
}

func TestEditDistance(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"abc", "", 3}, {"", "ab", 2}, {"main", "mian", 2}, {"kitten", "sitting", 3}, {"v1.0", "v1.1", 1},
	}
	for _, tt := range tests {
		if got := sg.Distance(tt.a, tt.b); got != tt.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}
