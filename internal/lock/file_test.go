package lock

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func sampleFile() *File {
	return &File{Version: Version, Rigor: "test", Experiments: map[string]*Entry{
		"pkg/b": {
			SpecDigest: "sha256:" + strings.Repeat("b", 64),
			Engine: EngineLock{Family: "llama.cpp", Requested: EngineRequest{Git: "https://example.com/x<y>.git", Ref: "main"},
				Commit: strings.Repeat("1", 40), Kind: "branch",
				Patches: []PatchLock{{Path: "patches/a.patch", SHA256: strings.Repeat("2", 64), Size: 10}}},
			Model: ModelLock{Requested: ModelRequest{HF: "o/n", Files: []string{"*.gguf"}}, Commit: strings.Repeat("3", 40),
				Files: []FileLock{{Path: "m.gguf", Size: 5, SHA256: strings.Repeat("4", 64)}, {Path: "README.md", Size: 1, BlobID: strings.Repeat("5", 40)}}},
		},
		"pkg/a": {
			SpecDigest: "sha256:" + strings.Repeat("a", 64),
			Engine:     EngineLock{Family: "node-llama-cpp", Requested: EngineRequest{NPM: "3.x"}, NPM: &NPMLock{Package: "node-llama-cpp", Version: "3.22.1", Integrity: "sha512-x"}},
			Model:      ModelLock{Requested: ModelRequest{Path: "m"}, Files: []FileLock{{Path: "m/x", Size: 1, SHA256: strings.Repeat("6", 64)}}},
		},
	}}
}

func TestWriteRead_roundTrip(t *testing.T) {
	root := t.TempDir()
	f := sampleFile()
	if err := Write(root, "dir/pkg", f); err != nil {
		t.Fatal(err)
	}
	name := Path(root, "dir/pkg")
	if want := filepath.Join(root, "lockfiles", "dir", "pkg.lock.json"); name != want {
		t.Errorf("Path: got %s, want %s", name, want)
	}
	b1, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(string(b1), "}\n") || !strings.Contains(string(b1), "x<y>.git") {
		t.Errorf("encoding: want a trailing newline and no HTML escaping, got:\n%s", b1)
	}
	if strings.Index(string(b1), `"pkg/a"`) > strings.Index(string(b1), `"pkg/b"`) {
		t.Errorf("experiments are not sorted by id:\n%s", b1)
	}
	g, err := Read(root, "dir/pkg")
	if err != nil {
		t.Fatal(err)
	}
	b2, err := Encode(g)
	if err != nil {
		t.Fatal(err)
	}
	if string(b1) != string(b2) {
		t.Errorf("read and encoded again: got\n%s\nwant\n%s", b2, b1)
	}
	if g.Experiments["pkg/b"].Digest() != f.Experiments["pkg/b"].Digest() {
		t.Errorf("Digest changed across a round trip")
	}
	// No temp file is left beside the lockfile.
	ents, _ := os.ReadDir(filepath.Dir(name))
	if len(ents) != 1 {
		t.Errorf("got %d files in the lockfile directory, want 1", len(ents))
	}
}

func TestWrite_unchangedBytesNotRewritten(t *testing.T) {
	root := t.TempDir()
	f := sampleFile()
	if err := Write(root, "p", f); err != nil {
		t.Fatal(err)
	}
	st1, _ := os.Stat(Path(root, "p"))
	// A read-only directory makes any write fail: an unchanged file must
	// not even be attempted.
	dir := filepath.Dir(Path(root, "p"))
	if err := os.Chmod(dir, 0o555); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(dir, 0o755)
	if os.Geteuid() == 0 {
		// root ignores permissions; compare inodes instead.
		if err := Write(root, "p", f); err != nil {
			t.Fatal(err)
		}
		st2, _ := os.Stat(Path(root, "p"))
		if !os.SameFile(st1, st2) {
			t.Errorf("an unchanged lockfile was replaced")
		}
		return
	}
	if err := Write(root, "p", f); err != nil {
		t.Errorf("rewriting unchanged bytes: %v", err)
	}
}

func TestWrite_failureLeavesOldFile(t *testing.T) {
	root := t.TempDir()
	f := sampleFile()
	if err := Write(root, "p", f); err != nil {
		t.Fatal(err)
	}
	old, _ := os.ReadFile(Path(root, "p"))
	// Make the temp file impossible to rename over: the target becomes a
	// non-empty directory.
	name := Path(root, "q")
	os.MkdirAll(filepath.Join(name, "x"), 0o755)
	if err := Write(root, "q", f); err == nil {
		t.Fatalf("Write over a directory: got no error")
	}
	ents, _ := os.ReadDir(filepath.Dir(name))
	for _, e := range ents {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("temp file %s left behind", e.Name())
		}
	}
	now, _ := os.ReadFile(Path(root, "p"))
	if string(now) != string(old) {
		t.Errorf("another lockfile changed")
	}
}

func TestRead_errors(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"syntax", "{\n  \"version\": 1,\n  \"rigor\": x\n}\n", "lockfiles/p.lock.json:3:12: invalid JSON: invalid character 'x' looking for beginning of value"},
		{"truncated", "{\n  \"version\": 1,", "lockfiles/p.lock.json:2:16: invalid JSON: unexpected end of file"},
		{"type", "{\"version\": \"1\"}", "lockfiles/p.lock.json:1:16: version: got a JSON string, want a number"},
		{"unknown field", "{\"version\": 1, \"experiments\": {}, \"extra\": 1}", `lockfiles/p.lock.json: unknown field "extra"`},
		{"version", "{\"version\": 2, \"experiments\": {}}", "lockfiles/p.lock.json: version: unsupported lockfile version 2 (this rigor reads version 1)"},
		{"no experiments", "{\"version\": 1}", "lockfiles/p.lock.json: experiments: missing"},
		{"digest", `{"version": 1, "experiments": {"p/x": {"specDigest": "md5:1", "engine": {"family": "vllm"}}}}`, `lockfiles/p.lock.json: experiments.p/x.specDigest: "md5:1" is not sha256:<64 hex digits>`},
		{"trailing", "{\"version\": 1, \"experiments\": {}} {}", "lockfiles/p.lock.json:1:36: unexpected data after the top-level object"},
		{"null entry", `{"version": 1, "experiments": {"p/x": null}}`, "lockfiles/p.lock.json: experiments.p/x: null, want an object"},
	} {
		_, err := Parse("lockfiles/p.lock.json", []byte(tc.in))
		var pe *ParseError
		if !errors.As(err, &pe) {
			t.Errorf("%s: Parse(%q): got %v, want a *ParseError", tc.name, tc.in, err)
			continue
		}
		if err.Error() != tc.want {
			t.Errorf("%s: Parse(%q):\ngot  %s\nwant %s", tc.name, tc.in, err, tc.want)
		}
	}
	_, err := Read(t.TempDir(), "none")
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Read of a missing lockfile: got %v, want fs.ErrNotExist", err)
	}
}

func TestDiff(t *testing.T) {
	a := sampleFile().Experiments["pkg/b"]
	b := sampleFile().Experiments["pkg/b"]
	if d := Diff("x", a, b); len(d) != 0 {
		t.Errorf("Diff of equal entries: got %v, want none", d)
	}
	b.Engine.Commit = strings.Repeat("9", 40)
	b.Model.Files = b.Model.Files[:1]
	got := Diff("x", a, b)
	want := []Change{
		{ID: "x", Input: "engine.commit", Old: strings.Repeat("1", 40), New: strings.Repeat("9", 40)},
		{ID: "x", Input: "model.file README.md", Old: strings.Repeat("5", 40), New: ""},
	}
	if len(got) != len(want) {
		t.Fatalf("Diff: got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("Diff[%d]: got %+v, want %+v", i, got[i], want[i])
		}
	}
	if d := Diff("x", a, nil); len(d) != 1 || d[0].Input != "entry" {
		t.Errorf("Diff to nil: got %v, want one entry removal", d)
	}
}

func FuzzParse(f *testing.F) {
	b, _ := Encode(sampleFile())
	f.Add(b)
	f.Add([]byte(`{"version": 1, "experiments": {"a/b": {"specDigest": "sha256:00"}}}`))
	f.Add([]byte("{\"version\": 1,\n\"experiments\": {\"x\": {\"engine\": {\"family\": 1}}}}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		lf, err := Parse("f.lock.json", data)
		if err != nil {
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("Parse: got %T %v, want a *ParseError", err, err)
			}
			return
		}
		// What parses encodes canonically, and that encoding parses to
		// the same bytes again.
		b1, err := Encode(lf)
		if err != nil {
			t.Fatalf("Encode: %v", err)
		}
		lf2, err := Parse("f.lock.json", b1)
		if err != nil {
			t.Fatalf("canonical bytes do not parse: %v\n%s", err, b1)
		}
		b2, _ := Encode(lf2)
		if string(b1) != string(b2) {
			t.Fatalf("encoding is not stable:\n%s\n%s", b1, b2)
		}
	})
}
