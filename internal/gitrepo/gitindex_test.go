package gitrepo

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing/format/index"
)

// TestSpliceIndex checks the splice against go-git's own decode and
// encode of the same change.
func TestSpliceIndex(t *testing.T) {
	var old index.Index
	old.Version = 2
	for _, n := range []string{"a", "b/c", "b/e", "long/" + strings.Repeat("n", 5000), "z"} {
		old.Entries = append(old.Entries, &index.Entry{Name: n, Size: uint32(len(n))})
	}
	var buf bytes.Buffer
	if err := index.NewEncoder(&buf).Encode(&old); err != nil {
		t.Fatal(err)
	}
	news := []*index.Entry{{Name: "b/e", Size: 99}, {Name: "b/d", Size: 1}, {Name: "zz", Size: 2}, {Name: "0", Size: 3}}
	var out bytes.Buffer
	if err := spliceIndex(&out, buf.Bytes(), news); err != nil {
		t.Fatal(err)
	}
	var got index.Index
	if err := index.NewDecoder(&out).Decode(&got); err != nil {
		t.Fatalf("decoding the spliced index: %v", err)
	}
	var names []string
	for _, e := range got.Entries {
		names = append(names, e.Name+":"+string(rune('0'+e.Size%10)))
	}
	want := []string{"0:3", "a:1", "b/c:3", "b/d:1", "b/e:9", "long/" + strings.Repeat("n", 5000) + ":5", "z:1", "zz:2"}
	if strings.Join(names, ",") != strings.Join(want, ",") {
		t.Errorf("spliced entries:\n%v\nwant\n%v", names, want)
	}
	v4 := buf.Bytes()
	v4[7] = 4
	if err := spliceIndex(&out, v4, news); err != errSpliceUnsupported {
		t.Errorf("version 4: %v, want errSpliceUnsupported", err)
	}
}

// TestCommit_indexFormats commits a new record and a changed one
// into repositories whose index git wrote in each format it uses, with
// entries before, between and after the committed paths, an entry with
// extended flags and an untracked cache: git must read the index rigor
// leaves, and see the tree clean.
func TestCommit_indexFormats(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup []string
	}{
		{"v2", nil},
		{"v3 skip-worktree", []string{"update-index --skip-worktree a/first.txt"}},
		{"v4", []string{"update-index --index-version 4"}},
		{"untracked cache", []string{"config core.untrackedCache true", "update-index --untracked-cache", "status"}},
		{"split by git", []string{"config core.splitIndex true", "update-index --split-index"}},
		{"split asked", []string{"config core.splitIndex true"}},
		// A refreshed entry of the shared index is replaced in the split
		// one (an entry with no name, marked in the replace bitmap).
		{"split with a replaced entry", []string{"config core.splitIndex true", "update-index --split-index",
			"touch a/first.txt z/last.txt", "update-index --refresh"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := newRepo(t)
			for _, f := range []string{"a/first.txt", "results/x/zz.txt", "results/y/a.txt", "z/last.txt"} {
				writeFile(t, filepath.Join(dir, filepath.FromSlash(f)), f+"\n")
			}
			g, err := Open(dir, filepath.Join(dir, "results"))
			if err != nil {
				t.Fatal(err)
			}
			g.Author = "Rig Bot <bot@example.com>"
			oldPath := filepath.Join(dir, "results", "x", "20260508T032753Z-0001.json")
			writeFile(t, oldPath, `{"id": "20260508T032753Z-0001"}`+"\n")
			gitCLI(t, dir, "add", ".")
			gitCLI(t, dir, "commit", "-q", "-m", "files")
			for _, c := range tc.setup {
				if f := strings.Fields(c); f[0] == "touch" {
					later := time.Now().Add(time.Minute)
					for _, p := range f[1:] {
						if err := os.Chtimes(filepath.Join(dir, p), later, later); err != nil {
							t.Fatal(err)
						}
					}
					continue
				}
				gitCLI(t, dir, strings.Fields(c)...)
			}
			// A record edited by hand and a new one.
			data, _ := os.ReadFile(oldPath)
			writeFile(t, oldPath, string(data)+"\n")
			rec := filepath.Join(dir, "results", "x", "20260508T040000Z-0002.json")
			writeFile(t, rec, `{"id": "20260508T040000Z-0002"}`+"\n")
			raw := filepath.Join(dir, "results", "x", "20260508T040000Z-0002")
			writeFile(t, filepath.Join(raw, "stdout"), "[]\n")
			if _, err := g.Commit(context.Background(), []string{oldPath, rec, raw}, "results"); err != nil {
				t.Fatal(err)
			}
			// And a second commit into what the first left.
			rec3 := filepath.Join(dir, "results", "y", "20260508T050000Z-0003.json")
			writeFile(t, rec3, `{"id": "20260508T050000Z-0003"}`+"\n")
			if _, err := g.Commit(context.Background(), []string{rec3}, "results 2"); err != nil {
				t.Fatal(err)
			}
			data, err = os.ReadFile(filepath.Join(dir, ".git", "index"))
			if err != nil {
				t.Fatal(err)
			}
			if _, split := linkedBase(data); split != strings.HasPrefix(tc.name, "split") {
				t.Errorf("split index after the commits: %v", split)
			}
			gitCLI(t, dir, "fsck", "--strict", "--no-progress")
			if st := gitCLI(t, dir, "status", "--porcelain", "--untracked-files=all"); st != "" {
				t.Errorf("git status after the commit:\n%s", st)
			}
			ls := gitCLI(t, dir, "ls-files", "-s")
			for _, p := range []string{"a/first.txt", "results/x/20260508T032753Z-0001.json", "results/x/20260508T040000Z-0002.json",
				"results/x/20260508T040000Z-0002/stdout", "results/x/zz.txt", "results/y/20260508T050000Z-0003.json", "z/last.txt"} {
				if strings.Count(ls, "\t"+p+"\n") != 1 {
					t.Errorf("git ls-files -s: %s listed %d times:\n%s", p, strings.Count(ls, "\t"+p+"\n"), ls)
				}
			}
			if tc.name == "v3 skip-worktree" {
				if v := gitCLI(t, dir, "ls-files", "-v", "a/first.txt"); !strings.HasPrefix(v, "S ") {
					t.Errorf("skip-worktree bit lost: %q", v)
				}
			}
		})
	}
}
