package gitsrc

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// diffPatch returns the `git diff` that turns the files of before into those
// of after (a file absent from after is deleted).
func diffPatch(t *testing.T, before, after map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	gitT(t, dir, "init", "--quiet", ".")
	for name, content := range before {
		writeFile(t, dir, name, content)
	}
	commitAll(t, dir, "before")
	for name := range before {
		if _, ok := after[name]; !ok {
			os.Remove(filepath.Join(dir, name))
		}
	}
	for name, content := range after {
		writeFile(t, dir, name, content)
	}
	gitT(t, dir, "add", "-A")
	return gitT(t, dir, "diff", "--cached") + "\n"
}

// patchFixture is an engine source tree in a mirror and patches for it.
type patchFixture struct {
	mirror  string
	commit  string
	tagOnly string // a commit only a tag reaches
	patches string // directory of the patch files
	a, b    string // src/a.c and src/b.c at commit
}

func newPatchFixture(t *testing.T) patchFixture {
	t.Helper()
	up := initRepo(t)
	f := patchFixture{a: lines(40, nil), b: lines(30, map[int]string{1: "/* b */"})}
	writeFile(t, up, "src/a.c", f.a)
	writeFile(t, up, "src/b.c", f.b)
	f.commit = commitAll(t, up, "engine source")
	gitT(t, up, "checkout", "--quiet", "--detach")
	writeFile(t, up, "src/c.c", "only on a tag\n")
	f.tagOnly = commitAll(t, up, "tagged only")
	gitT(t, up, "tag", "-a", "t1", "-m", "t1")
	gitT(t, up, "checkout", "--quiet", "main")

	mirror, err := EnsureMirror(context.Background(), up, testOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	f.mirror = mirror

	f.patches = t.TempDir()
	a1 := lines(40, map[int]string{10: "patched 10"})
	b1 := lines(30, map[int]string{1: "/* b */", 5: "patched b5"})
	save := func(name, patch string) {
		writeFile(t, f.patches, name, patch)
	}
	save("01-first.patch", diffPatch(t,
		map[string]string{"src/a.c": f.a, "src/b.c": f.b},
		map[string]string{"src/a.c": a1, "src/b.c": b1}))
	save("02-second.patch", diffPatch(t,
		map[string]string{"src/a.c": a1},
		map[string]string{"src/a.c": lines(40, map[int]string{10: "patched twice 10"})}))
	// Hunk 1 (line 3) matches; hunk 2 was made against a line 29 that the
	// commit does not have.
	base := lines(40, map[int]string{29: "drifted 29"})
	save("03-conflict.patch", diffPatch(t,
		map[string]string{"src/a.c": base},
		map[string]string{"src/a.c": lines(40, map[int]string{3: "new 3", 29: "drifted 29", 30: "new 30"})}))
	save("04-missing-file.patch", diffPatch(t,
		map[string]string{"src/gone.c": lines(5, nil)},
		map[string]string{"src/gone.c": lines(5, map[int]string{2: "x"})}))
	// Made against a file with three more lines on top: the hunk applies
	// three lines above where its header says.
	shifted := "extra 1\nextra 2\nextra 3\n" + f.a
	save("05-offset.patch", diffPatch(t,
		map[string]string{"src/a.c": shifted},
		map[string]string{"src/a.c": strings.Replace(shifted, "line 20\n", "offset 20\n", 1)}))
	save("06-new-file.patch", diffPatch(t,
		map[string]string{"src/a.c": f.a},
		map[string]string{"src/a.c": f.a, "src/new.c": "int new;\n"}))
	save("07-empty.patch", "")
	return f
}

func (f patchFixture) path(name string) string { return filepath.Join(f.patches, name) }

func TestCheckPatches(t *testing.T) {
	f := newPatchFixture(t)
	ctx := context.Background()
	tests := []struct {
		patches []string
		offsets int // hunks applied at an offset, over all patches
	}{
		{nil, 0},
		{[]string{"01-first.patch"}, 0},
		{[]string{"01-first.patch", "02-second.patch"}, 0},
		{[]string{"05-offset.patch"}, 1},
		{[]string{"01-first.patch", "02-second.patch", "06-new-file.patch"}, 0},
	}
	for _, tt := range tests {
		var paths []string
		for _, p := range tt.patches {
			paths = append(paths, f.path(p))
		}
		infos, err := CheckPatches(ctx, f.mirror, f.commit, paths)
		if err != nil {
			t.Errorf("CheckPatches(%q): %v", tt.patches, err)
			continue
		}
		if len(infos) != len(paths) {
			t.Fatalf("CheckPatches(%q): %d infos, want %d", tt.patches, len(infos), len(paths))
		}
		offsets := 0
		for i, info := range infos {
			sum, size, err := HashFile(paths[i])
			if err != nil {
				t.Fatal(err)
			}
			if info.Path != paths[i] || info.SHA256 != sum || info.Size != size {
				t.Errorf("CheckPatches(%q): info %d = %+v, want path %s sha256 %s size %d", tt.patches, i, info, paths[i], sum, size)
			}
			offsets += len(info.Offsets)
			for _, o := range info.Offsets {
				if !strings.HasPrefix(o, "src/a.c: hunk #1 succeeded at 17 (offset -3 lines") {
					t.Errorf("CheckPatches(%q): offset %q, want src/a.c hunk #1 at 17, offset -3", tt.patches, o)
				}
			}
		}
		if offsets != tt.offsets {
			t.Errorf("CheckPatches(%q): %d offsets, want %d", tt.patches, offsets, tt.offsets)
		}
	}
}

func TestCheckPatches_fail(t *testing.T) {
	f := newPatchFixture(t)
	ctx := context.Background()
	tests := []struct {
		patches    []string
		patch      string // the patch named by the error
		file       string
		hunkNumber int
		line       int
	}{
		// The second patch needs the first.
		{[]string{"02-second.patch"}, "02-second.patch", "src/a.c", 1, 7},
		// Order matters: the first patch no longer applies after the second.
		{[]string{"01-first.patch", "02-second.patch", "01-first.patch"}, "01-first.patch", "src/a.c", 1, 7},
		{[]string{"01-first.patch", "03-conflict.patch"}, "03-conflict.patch", "src/a.c", 2, 27},
		{[]string{"04-missing-file.patch"}, "04-missing-file.patch", "src/gone.c", 1, 1},
		{[]string{"06-new-file.patch", "06-new-file.patch"}, "06-new-file.patch", "src/new.c", 1, 0},
		{[]string{"07-empty.patch"}, "07-empty.patch", "", 0, 0},
	}
	for _, tt := range tests {
		var paths []string
		for _, p := range tt.patches {
			paths = append(paths, f.path(p))
		}
		_, err := CheckPatches(ctx, f.mirror, f.commit, paths)
		var pe *PatchError
		if !errors.As(err, &pe) {
			t.Errorf("CheckPatches(%q): got %v, want *PatchError", tt.patches, err)
			continue
		}
		if pe.Patch != f.path(tt.patch) || pe.File != tt.file || pe.HunkNumber != tt.hunkNumber || pe.Line != tt.line {
			t.Errorf("CheckPatches(%q): error for patch %s file %q hunk #%d line %d, want %s %q #%d line %d (%v)",
				tt.patches, filepath.Base(pe.Patch), pe.File, pe.HunkNumber, pe.Line, tt.patch, tt.file, tt.hunkNumber, tt.line, err)
		}
		msg := err.Error()
		for _, want := range []string{tt.patch, tt.file, f.commit[:12]} {
			if !strings.Contains(msg, want) {
				t.Errorf("CheckPatches(%q): error %q does not name %q", tt.patches, msg, want)
			}
		}
		if tt.hunkNumber > 0 && (!strings.HasPrefix(pe.Hunk, "@@ -") || !strings.Contains(msg, pe.Hunk)) {
			t.Errorf("CheckPatches(%q): hunk %q, want an @@ header named in %q", tt.patches, pe.Hunk, msg)
		}
		if pe.Position != len(tt.patches) {
			t.Errorf("CheckPatches(%q): position %d, want %d", tt.patches, pe.Position, len(tt.patches))
		}
		if pe.Detail == "" {
			t.Errorf("CheckPatches(%q): no detail from git", tt.patches)
		}
	}

	// A missing patch file is named, before any checkout.
	missing := f.path("99-missing.patch")
	_, err := CheckPatches(ctx, f.mirror, f.commit, []string{f.path("01-first.patch"), missing})
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), missing) {
		t.Errorf("CheckPatches with a missing patch: got %v, want fs.ErrNotExist naming %s", err, missing)
	}
	// A commit the mirror does not have.
	absent := strings.Repeat("ab", 20)
	if _, err := CheckPatches(ctx, f.mirror, absent, nil); err == nil || !strings.Contains(err.Error(), absent) {
		t.Errorf("CheckPatches at an absent commit: got %v, want an error naming it", err)
	}
	if _, err := CheckPatches(ctx, f.mirror, "main", nil); err == nil {
		t.Error("CheckPatches at a branch name: got no error, want one asking for a full sha")
	}
}

func TestCheckout(t *testing.T) {
	f := newPatchFixture(t)
	ctx := context.Background()
	dest := filepath.Join(t.TempDir(), "build", "src")
	patches := []string{f.path("01-first.patch"), f.path("02-second.patch")}
	if err := Checkout(ctx, f.mirror, f.commit, dest, patches); err != nil {
		t.Fatal(err)
	}
	check := func(name, want string) {
		t.Helper()
		got, err := os.ReadFile(filepath.Join(dest, name))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != want {
			t.Errorf("%s after Checkout:\ngot  %q\nwant %q", name, got, want)
		}
	}
	check("src/a.c", lines(40, map[int]string{10: "patched twice 10"}))
	check("src/b.c", lines(30, map[int]string{1: "/* b */", 5: "patched b5"}))
	if got := gitT(t, dest, "rev-parse", "HEAD"); got != f.commit {
		t.Errorf("HEAD of the checkout = %s, want %s", got, f.commit)
	}
	status := strings.Fields(gitT(t, dest, "status", "--porcelain"))
	if !slices.Equal(status, []string{"M", "src/a.c", "M", "src/b.c"}) {
		t.Errorf("status of the checkout = %q, want src/a.c and src/b.c modified", status)
	}

	// Into a non-empty directory: refused, and the directory is untouched.
	if err := Checkout(ctx, f.mirror, f.commit, dest, nil); err == nil {
		t.Error("Checkout into a non-empty directory: got no error")
	}
	check("src/a.c", lines(40, map[int]string{10: "patched twice 10"}))

	// A failing patch leaves nothing behind.
	bad := filepath.Join(t.TempDir(), "bad")
	err := Checkout(ctx, f.mirror, f.commit, bad, []string{f.path("03-conflict.patch")})
	var pe *PatchError
	if !errors.As(err, &pe) {
		t.Errorf("Checkout with a conflicting patch: got %v, want *PatchError", err)
	}
	if _, err := os.Stat(bad); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Checkout with a conflicting patch left %s behind (stat: %v)", bad, err)
	}

	// A commit that only a tag reaches is in the mirror too.
	tagged := filepath.Join(t.TempDir(), "tagged")
	if err := Checkout(ctx, f.mirror, f.tagOnly, tagged, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(tagged, "src", "c.c")); err != nil {
		t.Errorf("Checkout of the tag-only commit: %v", err)
	}
}
