package archive

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/rigorbench/rigor/internal/gitsrc"
)

func gitT(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// sourceRepo makes an upstream with two commits and a patch of the second.
func sourceRepo(t *testing.T) (up, first, second, patch, patchSHA string) {
	up = filepath.Join(t.TempDir(), "engine")
	os.MkdirAll(up, 0o755)
	gitT(t, up, "init", "-q", "--initial-branch=main", ".")
	os.WriteFile(filepath.Join(up, "a.txt"), []byte("one\n"), 0o644)
	gitT(t, up, "add", "-A")
	gitT(t, up, "commit", "-q", "-m", "first")
	first = gitT(t, up, "rev-parse", "HEAD")
	os.WriteFile(filepath.Join(up, "a.txt"), []byte("two\n"), 0o644)
	gitT(t, up, "commit", "-q", "-am", "second")
	second = gitT(t, up, "rev-parse", "HEAD")
	body := "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-two\n+TWO\n"
	patch = filepath.Join(t.TempDir(), "p.patch")
	os.WriteFile(patch, []byte(body), 0o644)
	sum := sha256.Sum256([]byte(body))
	return up, first, second, patch, hex.EncodeToString(sum[:])
}

// The source of a locked commit goes into the archive as a git bundle and
// its patches; on a machine whose cache is empty and whose remote is gone
// it comes back into the git mirror, and the missing patch file is
// written, checked against the lock. Pushing again sends nothing.
func TestSourceRoundTrip(t *testing.T) {
	host, user, pw := testRegistry(t)
	a := open(t, host, randomRepo(t), dockerConfig(t, host, user, pw))
	ctx := context.Background()
	up, first, second, patch, psha := sourceRepo(t)
	cache := filepath.Join(t.TempDir(), "cache")
	mirror, err := gitsrc.EnsureMirror(ctx, up, gitsrc.Options{Cache: cache})
	if err != nil {
		t.Fatal(err)
	}
	patches := []SourceFile{{Path: "patches/p.patch", SHA256: psha, Size: 46, File: patch}}
	sent, _, err := a.PushSource(ctx, "engine", mirror, second, patches, t.TempDir(), nil)
	if err != nil || !sent {
		t.Fatalf("push: sent %v, %v", sent, err)
	}
	if sent, _, err := a.PushSource(ctx, "engine", mirror, second, patches, t.TempDir(), nil); err != nil || sent {
		t.Fatalf("second push: sent %v, %v; want nothing sent", sent, err)
	}
	if ok, lacking, err := a.SourceHas(ctx, second, patches); err != nil || !ok || len(lacking) > 0 {
		t.Fatalf("SourceHas: %v %v %v", ok, lacking, err)
	}
	if ok, lacking, _ := a.SourceHas(ctx, second, append(patches, SourceFile{Path: "patches/other.patch", SHA256: strings.Repeat("a", 64)})); ok || len(lacking) != 1 {
		t.Fatalf("SourceHas with a patch it lacks: %v %v", ok, lacking)
	}
	if ok, _, _ := a.SourceHas(ctx, first, nil); ok {
		t.Fatal("SourceHas of a commit never pushed")
	}

	os.RemoveAll(up)
	other := filepath.Join(t.TempDir(), "cache")
	dest := filepath.Join(t.TempDir(), "module", "patches", "p.patch")
	want := []SourceFile{{Path: "patches/p.patch", SHA256: psha, Size: 46, File: dest}}
	if err := a.FetchSource(ctx, other, up, second, want, t.TempDir(), nil); err != nil {
		t.Fatal(err)
	}
	if ok, err := gitsrc.HasCommit(ctx, gitsrc.MirrorPath(other, up), second); err != nil || !ok {
		t.Fatalf("the mirror lacks the pulled commit: %v %v", ok, err)
	}
	if b, _ := os.ReadFile(dest); sha256.Sum256(b) != sha256.Sum256([]byte("--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-two\n+TWO\n")) {
		t.Fatalf("the pulled patch is %q", b)
	}
	if err := a.FetchSource(ctx, other, up, first, nil, t.TempDir(), nil); !errors.Is(err, ErrNotArchived) {
		t.Fatalf("a source never pushed: %v, want ErrNotArchived", err)
	}
}

// An archived source that is not the locked commit is refused, naming the
// artifact: a config that names another commit, a bundle of another
// commit under the locked commit's tag.
func TestSourceTampered(t *testing.T) {
	host, user, pw := testRegistry(t)
	a := open(t, host, randomRepo(t), dockerConfig(t, host, user, pw))
	ctx := context.Background()
	up, first, second, _, _ := sourceRepo(t)
	cache := filepath.Join(t.TempDir(), "cache")
	mirror, err := gitsrc.EnsureMirror(ctx, up, gitsrc.Options{Cache: cache})
	if err != nil {
		t.Fatal(err)
	}
	// The bundle of first, pushed as the source of second.
	if _, _, err := a.PushSource(ctx, "engine", mirror, first, nil, t.TempDir(), nil); err != nil {
		t.Fatal(err)
	}
	art, err := a.FetchArtifact(ctx, SourceTag(first))
	if err != nil {
		t.Fatal(err)
	}
	var cfg SourceConfig
	json.Unmarshal(art.Config, &cfg)
	cfg.Commit = second
	b, _ := json.Marshal(cfg)
	if err := a.PushArtifact(ctx, Artifact{Tag: SourceTag(second), ConfigType: MediaTypeSource, Config: b, Layers: art.Layers}); err != nil {
		t.Fatal(err)
	}
	// A config naming another commit than its tag.
	cfg.Commit = first
	b, _ = json.Marshal(cfg)
	third := strings.Repeat("c", 40)
	if err := a.PushArtifact(ctx, Artifact{Tag: SourceTag(third), ConfigType: MediaTypeSource, Config: b, Layers: []ocispec.Descriptor{art.Layers[0]}}); err != nil {
		t.Fatal(err)
	}
	for _, commit := range []string{second, third} {
		other := filepath.Join(t.TempDir(), "cache")
		err := a.FetchSource(ctx, other, up, commit, nil, t.TempDir(), nil)
		var se *SourceError
		if !errors.As(err, &se) || !strings.Contains(err.Error(), "source-"+commit[:12]) || !strings.Contains(err.Error(), "refused") {
			t.Fatalf("a source that is not %s: %v, want a SourceError naming the artifact", commit[:12], err)
		}
		if ok, _ := gitsrc.HasCommit(ctx, gitsrc.MirrorPath(other, up), first); ok {
			t.Fatal("a refused bundle's objects are in the mirror")
		}
	}
}
