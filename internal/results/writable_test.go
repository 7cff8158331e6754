package results

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rigorbench/rigor/internal/gitrepo"
)

func TestStore_CheckWritable(t *testing.T) {
	root := t.TempDir()
	s := Open(root)
	if err := s.CheckWritable("m/x"); err != nil {
		t.Fatalf("CheckWritable of a fresh module: %v", err)
	}
	if ents, _ := os.ReadDir(filepath.Join(root, "results", "m", "x")); len(ents) != 0 {
		t.Errorf("CheckWritable left %d files behind", len(ents))
	}

	// A results path that cannot be a directory (this holds as root too,
	// where permissions would not).
	blocked := t.TempDir()
	os.WriteFile(filepath.Join(blocked, "results"), []byte("not a directory"), 0o644)
	err := Open(blocked).CheckWritable("m/x")
	if err == nil || !strings.Contains(err.Error(), "checking the results directory") {
		t.Errorf("CheckWritable with results/ a file = %v, want an error naming the directory", err)
	}

	old := MinFreeBytes
	MinFreeBytes = 1 << 62
	defer func() { MinFreeBytes = old }()
	if err := s.CheckWritable("m/x"); !errors.Is(err, ErrNoSpace) {
		t.Errorf("CheckWritable with too little space = %v, want ErrNoSpace", err)
	}
}

func TestFallback(t *testing.T) {
	dir := t.TempDir()
	r := testRun("20260508T032753Z-3f9a", "m/x", t0, 1, 2, 3)
	r.Processes[0].Env["HF_TOKEN"] = "hf_secretvalue123"
	path, err := Fallback(dir).Write(r, map[string][]byte{"out.txt": []byte("token hf_secretvalue123")})
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, "m", "x", "20260508T032753Z-3f9a.json"); path != want {
		t.Errorf("fallback record at %s, want %s", path, want)
	}
	b, _ := os.ReadFile(path)
	raw, _ := os.ReadFile(filepath.Join(dir, "m", "x", "20260508T032753Z-3f9a", "out.txt"))
	if strings.Contains(string(b)+string(raw), "hf_secretvalue123") {
		t.Errorf("the fallback record holds the secret")
	}
	if _, err := Decode(b); err != nil {
		t.Errorf("the fallback record does not decode: %v", err)
	}
}

func TestStore_HeadDetached(t *testing.T) {
	root := t.TempDir()
	s := Open(root)
	if _, err := s.HeadDetached(); !errors.Is(err, gitrepo.ErrNotRepository) {
		t.Errorf("HeadDetached outside a repository = %v, want gitrepo.ErrNotRepository", err)
	}
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", root, "-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q")
	git("commit", "-q", "--allow-empty", "-m", "one")
	if d, err := s.HeadDetached(); d || err != nil {
		t.Errorf("HeadDetached on a branch = %v, %v", d, err)
	}
	git("checkout", "-q", "--detach")
	if d, err := s.HeadDetached(); !d || err != nil {
		t.Errorf("HeadDetached on a detached HEAD = %v, %v", d, err)
	}
}
