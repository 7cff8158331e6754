package lock

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/rigorbench/rigor/internal/hf"
	"github.com/rigorbench/rigor/internal/hf/hubtest"
	"github.com/rigorbench/rigor/internal/lock/npmtest"
	"github.com/rigorbench/rigor/internal/spec"
)

// pinArchive is an [Archive] held in memory, which counts what it is
// asked: the resolver's side of the gate (when the archive may stand in).
// internal/archive's TestPinRoundTrip and the lock_archive testscript run
// the real registry.
type pinArchive struct {
	pins  map[string]*Pin
	err   error
	asked []string
}

func (a *pinArchive) Pin(_ context.Context, key string) (*Pin, error) {
	a.asked = append(a.asked, key)
	return a.pins[key], a.err
}

func (a *pinArchive) RestoreSource(context.Context, string, string, string) (bool, error) {
	return false, nil
}

func (a *pinArchive) String() string { return "oci://127.0.0.1:5000/test" }

// The archive stands in for a hub that answers RepoNotFound or cannot be
// reached, never for one that answers (a moved revision is taken from
// upstream) nor for a gated repository; an input it does not hold, or an
// archive that fails, is an error that says both.
func TestResolver_hubFromArchive(t *testing.T) {
	hub := hubtest.New()
	defer hub.Close()
	files := []hubtest.File{{Path: "m.gguf", Data: []byte("one"), LFS: true}, {Path: "config.json", Data: []byte("{}")}}
	c1 := hub.AddRepo("org/m-GGUF", hubtest.RepoOptions{Files: files})
	hub.AddRepo("org/gated", hubtest.RepoOptions{Files: files, Gated: true, Token: "hf_right"})
	empty := hubtest.New()
	defer empty.Close()
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "vllm"), []byte("#!/bin/sh\n"), 0o755)
	newR := func(endpoint string, a Archive, u Update) *Resolver {
		opts := Options{Root: root, Cache: t.TempDir(), HFCache: t.TempDir(), Update: u,
			HF: hf.NewClient(hf.ClientOptions{Endpoint: endpoint, MaxRetries: -1})}
		if a != nil {
			opts.Archive = a
		}
		return NewResolver(opts)
	}
	x := experiment("p/x", spec.Spec{Model: spec.Model{HF: "org/m-GGUF", Files: []string{"*.gguf", "config.json"}},
		Engine: spec.Engine{Family: "vllm", Source: spec.Source{Path: "vllm"}}})
	e1, err := newR(hub.URL, nil, Update{}).Resolve(context.Background(), x, nil)
	if err != nil {
		t.Fatal(err)
	}
	key := HubKey("org/m-GGUF", "", []string{"*.gguf", "config.json"})
	// The pin as internal/archive gives it back: through JSON.
	b, _ := json.Marshal(Pin{Request: key, Commit: e1.Model.Commit, Files: e1.Model.Files, Artifacts: []string{"model-x"}})
	pin, err := DecodePin(b, key)
	if err != nil {
		t.Fatal(err)
	}
	arch := &pinArchive{pins: map[string]*Pin{key: pin}}

	// Upstream moved: upstream's commit, the archive not asked.
	c2 := hub.Push("org/m-GGUF", "main", []hubtest.File{{Path: "m.gguf", Data: []byte("ONE"), LFS: true}, {Path: "config.json", Data: []byte("{}")}})
	r := newR(hub.URL, arch, Update{Model: true})
	e2, err := r.Resolve(context.Background(), x, e1)
	if err != nil || e2.Model.Commit != c2 || len(arch.asked) != 0 || len(r.archived) != 0 {
		t.Fatalf("moved upstream: commit %s (want %s), archive asked %v, %v", e2.Model.Commit, c2, arch.asked, err)
	}

	// The repository gone (RepoNotFound), and the hub unreachable: the
	// archive's pin, the same facts as the upstream lock, and said.
	for _, endpoint := range []string{empty.URL, "http://127.0.0.1:1"} {
		arch.asked = nil
		r := newR(endpoint, arch, Update{Model: true})
		e3, err := r.Resolve(context.Background(), x, e1)
		if err != nil {
			t.Fatalf("%s: %v", endpoint, err)
		}
		if !reflect.DeepEqual(e3.Model, e1.Model) || e3.Model.Commit != c1 {
			t.Fatalf("%s: model from the archive %+v, want %+v", endpoint, e3.Model, e1.Model)
		}
		got := r.fromArchiveOf(map[string]bool{"p/x": true})
		if len(got) != 1 || got[0].Input != InputModel || got[0].Pinned != c1 || got[0].Request != "org/m-GGUF@main *.gguf,config.json" || got[0].Why == "" {
			t.Fatalf("%s: FromArchive %+v", endpoint, got)
		}
	}

	// Not archived, or the archive failing: an error naming both.
	none := &pinArchive{}
	_, err = newR(empty.URL, none, Update{}).Resolve(context.Background(), x, nil)
	var nae *NotArchivedError
	if !errors.As(err, &nae) || !strings.Contains(err.Error(), "repository not found") || !strings.HasSuffix(err.Error(), "holds no pin of org/m-GGUF@main *.gguf,config.json") {
		t.Fatalf("not archived: %v", err)
	}
	failing := &pinArchive{err: errors.New("the registry is unreachable")}
	_, err = newR(empty.URL, failing, Update{}).Resolve(context.Background(), x, nil)
	if !errors.As(err, &nae) || !strings.Contains(err.Error(), "could not stand in for org/m-GGUF@main *.gguf,config.json: the registry is unreachable") {
		t.Fatalf("archive failing: %v", err)
	}

	// A gated repository is not gone: the archive is not asked.
	g := experiment("p/g", spec.Spec{Model: spec.Model{HF: "org/gated", Files: []string{"*.gguf"}},
		Engine: spec.Engine{Family: "vllm", Source: spec.Source{Path: "vllm"}}})
	arch.asked = nil
	if _, err := newR(hub.URL, arch, Update{}).Resolve(context.Background(), g, nil); err == nil || len(arch.asked) != 0 {
		t.Fatalf("gated: %v, archive asked %v; want the hub's error and no archive", err, arch.asked)
	}
}

// A pin is refused unless it is one of the key asked, with its facts.
func TestDecodePin(t *testing.T) {
	key := GitKey("https://user:secret@example.com/e.git", "")
	if key != "git https://example.com/e.git HEAD" {
		t.Fatalf("GitKey = %q: the credentials must not be in a key", key)
	}
	c := strings.Repeat("a", 40)
	for _, tc := range []struct{ json, want string }{
		{`{"request": "git https://example.com/e.git HEAD", "commit": "` + c + `"}`, ""},
		{`{"request": "git https://example.com/other.git HEAD", "commit": "` + c + `"}`, "not \"git https://example.com/e.git HEAD\""},
		{`{"request": "git https://example.com/e.git HEAD", "commit": "abc"}`, "not 40 hex digits"},
		{`not json`, "not a pin"},
	} {
		_, err := DecodePin([]byte(tc.json), key)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("DecodePin(%s) = %v, want %q", tc.json, err, tc.want)
		}
	}
	hub := HubKey("o/m", "main", nil)
	if _, err := DecodePin([]byte(`{"request": "`+strings.ReplaceAll(hub, `"`, `\"`)+`", "commit": "`+c+`", "files": [{"path": "m.gguf", "size": 1}]}`), hub); err == nil || !strings.Contains(err.Error(), "has no sha256") {
		t.Errorf("a hub pin with a file without sha256: %v", err)
	}
	corpus := CorpusKey("o/texts", "", "c.txt")
	if corpus != "corpus o/texts@main c.txt" || corpus == HubKey("o/texts", "", []string{"c.txt"}) {
		t.Errorf("CorpusKey = %q: a corpus's key is its own, not a model's", corpus)
	}
	sha := strings.Repeat("b", 64)
	for _, tc := range []struct{ files, want string }{
		{`[{"path": "c.txt", "size": 1, "sha256": "` + sha + `"}]`, ""},
		{`[{"path": "other.txt", "size": 1, "sha256": "` + sha + `"}]`, "no commit and file of the corpus"},
		{`[]`, "no commit and file of the corpus"},
		{`[{"path": "c.txt", "size": 1}]`, "has no sha256"},
	} {
		_, err := DecodePin([]byte(`{"request": "`+corpus+`", "commit": "`+c+`", "files": `+tc.files+`}`), corpus)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("corpus pin with files %s: %v, want %q", tc.files, err, tc.want)
		}
	}
	rev := RevisionKey("o/m", "")
	if _, err := DecodePin([]byte(`{"request": "`+rev+`", "commit": "abc"}`), rev); err == nil || !strings.Contains(err.Error(), "no commit of the revision") {
		t.Errorf("a revision pin without a commit: %v", err)
	}
	if _, err := DecodePin([]byte(`{"request": "`+rev+`", "commit": "`+c+`"}`), rev); err != nil {
		t.Errorf("a revision pin: %v", err)
	}
	npm := NPMKey("node-llama-cpp", "^3", "@node-llama-cpp/linux-x64")
	if _, err := DecodePin([]byte(`{"request": "`+npm+`"}`), npm); err == nil || !strings.Contains(err.Error(), "no npm version") {
		t.Errorf("an npm pin without a version: %v", err)
	}
}

// The archive stands in for an npm version that is no longer published
// (the real npm client against a stand-in registry), never for a registry
// that answers with a newer version in the range.
func TestResolver_npmFromArchive(t *testing.T) {
	if _, err := exec.LookPath("npm"); err != nil {
		t.Skip("npm is not installed")
	}
	t.Setenv("npm_config_fetch_retries", "0")
	plat := "@node-llama-cpp/linux-x64"
	x := experiment("p/n", spec.Spec{Model: spec.Model{Name: "m"},
		Engine: spec.Engine{Family: spec.FamilyNodeLlama, Source: spec.Source{NPM: "3.x"}}})
	resolve := func(pkgs map[string]map[string]string, a Archive) (*Entry, *Resolver, error) {
		reg := npmtest.New(npmtest.Config{Packages: pkgs})
		defer reg.Close()
		t.Setenv("npm_config_registry", reg.URL)
		t.Setenv("npm_config_cache", t.TempDir())
		opts := Options{Root: t.TempDir(), Cache: t.TempDir(), Platform: "linux-x64"}
		if a != nil {
			opts.Archive = a
		}
		r := NewResolver(opts)
		e, err := r.Resolve(context.Background(), x, nil)
		return e, r, err
	}
	e1, _, err := resolve(map[string]map[string]string{"node-llama-cpp": {"3.22.1": ""}, plat: {"3.22.1": ""}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	key := NPMKey("node-llama-cpp", "3.x", plat)
	arch := &pinArchive{pins: map[string]*Pin{key: {Request: key, NPM: e1.Engine.NPM}}}

	// 3.23.0 published: upstream's answer, the archive not asked.
	e2, _, err := resolve(map[string]map[string]string{"node-llama-cpp": {"3.22.1": "", "3.23.0": ""}, plat: {"3.22.1": "", "3.23.0": ""}}, arch)
	if err != nil || e2.Engine.NPM.Version != "3.23.0" || len(arch.asked) != 0 {
		t.Fatalf("a newer version upstream: %+v, archive asked %v, %v", e2.Engine.NPM, arch.asked, err)
	}
	// Unpublished: the archive's pin, said.
	e3, r, err := resolve(map[string]map[string]string{plat: {"3.22.1": ""}}, arch)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(e3.Engine, e1.Engine) {
		t.Fatalf("engine from the archive %+v, want %+v", e3.Engine, e1.Engine)
	}
	if got := r.fromArchiveOf(map[string]bool{"p/n": true}); len(got) != 1 || got[0].Pinned != "3.22.1" || got[0].Request != "node-llama-cpp@3.x" || !strings.Contains(got[0].Why, "E404") && !strings.Contains(got[0].Why, "no such version") && !strings.Contains(got[0].Why, "no published version") {
		t.Fatalf("FromArchive %+v", got)
	}
}
