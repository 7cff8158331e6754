package gitsrc

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// PatchInfo describes one patch that applies at a commit.
type PatchInfo struct {
	Path   string // the patch file, as given
	SHA256 string // hex sha256 of the file's bytes, the bytes that were applied
	Size   int64  // the file's size in bytes
	// Offsets lists the hunks git applied at another line than their header
	// names, e.g. "src/llama.cpp: hunk #2 succeeded at 130 (offset 3 lines)".
	// The context matched exactly; only the position moved.
	Offsets []string
}

// HashFile returns the hex sha256 and the size of the file at path.
func HashFile(path string) (string, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", 0, fmt.Errorf("hashing %s: %w", path, err)
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return "", 0, fmt.Errorf("hashing %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}

// patchData is a patch file read once: hashed and applied from the same bytes.
type patchData struct {
	path string
	data []byte
}

func readPatches(patches []string) ([]patchData, []PatchInfo, error) {
	pd := make([]patchData, len(patches))
	infos := make([]PatchInfo, len(patches))
	for i, p := range patches {
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, nil, fmt.Errorf("reading patch %s: %w", p, err)
		}
		sum := sha256.Sum256(data)
		pd[i] = patchData{path: p, data: data}
		infos[i] = PatchInfo{Path: p, SHA256: hex.EncodeToString(sum[:]), Size: int64(len(data))}
	}
	return pd, infos, nil
}

// CheckPatches hashes each patch and proves that the patches apply strictly,
// in order, at commit: each one on the tree of commit with the patches before
// it applied. The tree is a scratch checkout made from the bare mirror (see
// [EnsureMirror]) in a temporary directory, removed afterwards.
//
// A patch that does not apply is a [*PatchError]; a missing patch file is an
// error naming it (wrapping [io/fs.ErrNotExist]); a commit missing from the
// mirror is an error naming both.
func CheckPatches(ctx context.Context, mirror, commit string, patches []string) ([]PatchInfo, error) {
	pd, infos, err := readPatches(patches)
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "rigor-patches-")
	if err != nil {
		return nil, fmt.Errorf("checking patches: %w", err)
	}
	defer os.RemoveAll(tmp)
	if err := build(ctx, mirror, commit, filepath.Join(tmp, "src"), pd, infos); err != nil {
		return nil, err
	}
	return infos, nil
}

// Checkout makes dest a clean tree of commit from the bare mirror with the
// patches applied strictly, in order, as [CheckPatches] checks them. The tree
// is a git repository at commit (detached HEAD, so that build scripts that ask
// git for the commit get it) whose objects come from the mirror through git's
// alternates: the mirror must outlive it. The patches are left uncommitted.
//
// dest must not exist or be an empty directory. On error nothing is left at
// dest.
func Checkout(ctx context.Context, mirror, commit, dest string, patches []string) error {
	pd, infos, err := readPatches(patches)
	if err != nil {
		return err
	}
	if entries, err := os.ReadDir(dest); err == nil && len(entries) > 0 {
		return fmt.Errorf("checking out %s into %s: directory is not empty", shortSHA(commit), dest)
	}
	if err := build(ctx, mirror, commit, dest, pd, infos); err != nil {
		os.RemoveAll(dest)
		return err
	}
	return nil
}

// build checks commit out of mirror into dir and applies the patches,
// recording each one's offsets in infos.
func build(ctx context.Context, mirror, commit, dir string, pd []patchData, infos []PatchInfo) error {
	if err := checkoutTree(ctx, mirror, commit, dir); err != nil {
		return err
	}
	for i, p := range pd {
		offsets, err := applyPatch(ctx, dir, commit, p)
		if pe, ok := err.(*PatchError); ok {
			pe.Position = i + 1
		}
		if err != nil {
			return err
		}
		infos[i].Offsets = offsets
	}
	return nil
}

// checkoutTree makes dir a git repository whose object store borrows the
// mirror's (objects/info/alternates, as `git clone --shared` does) and checks
// commit out in it with a detached HEAD.
func checkoutTree(ctx context.Context, mirror, commit, dir string) error {
	if len(commit) != 40 || !isHex(commit) {
		return fmt.Errorf("checking out %q: not a full 40-hex commit sha", commit)
	}
	commit = strings.ToLower(commit)
	mirror, err := filepath.Abs(mirror)
	if err != nil {
		return fmt.Errorf("checking out %s: %w", shortSHA(commit), err)
	}
	if !mirrorExists(mirror) {
		return fmt.Errorf("checking out %s: no git mirror at %s", shortSHA(commit), mirror)
	}
	ok, err := mirrorHasCommit(ctx, mirror, commit)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("checking out %s: commit not in mirror %s", commit, mirror)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("checking out %s: %w", shortSHA(commit), err)
	}
	if _, err := runGit(ctx, dir, nil, "init", "--quiet", "--initial-branch=rigor-unborn", "."); err != nil {
		return fmt.Errorf("checking out %s: %w", shortSHA(commit), err)
	}
	alt := filepath.Join(dir, ".git", "objects", "info", "alternates")
	if err := os.WriteFile(alt, []byte(filepath.Join(mirror, "objects")+"\n"), 0o644); err != nil {
		return fmt.Errorf("checking out %s: %w", shortSHA(commit), err)
	}
	// Hold a shared lock so that no fetch rewrites the mirror while git reads it.
	lk, err := lockMirror(ctx, mirror, false)
	if err != nil {
		return err
	}
	defer lk.Unlock()
	if _, err := runGit(ctx, dir, nil, "-c", "advice.detachedHead=false", "checkout", "--quiet", "--detach", commit); err != nil {
		return fmt.Errorf("checking out %s from %s: %w", shortSHA(commit), mirror, err)
	}
	return nil
}

// applyPatch applies p in dir with `git apply`: first --check, which changes
// nothing, then for real. Without -C or --3way, git apply requires every
// context line to match exactly (no fuzz); it does accept a hunk at an offset,
// which applyPatch returns.
func applyPatch(ctx context.Context, dir, commit string, p patchData) ([]string, error) {
	apply := func(args ...string) (string, error) {
		args = append(append([]string{"apply"}, args...), "--whitespace=nowarn", "-")
		stderr, err := runGit(ctx, dir, strings.NewReader(string(p.data)), args...)
		switch {
		case err == nil:
			return stderr, nil
		case isGitFailure(err):
			return "", newPatchError(p, commit, stderr)
		default:
			return "", fmt.Errorf("applying patch %s: %w", p.path, err)
		}
	}
	if _, err := apply("--check"); err != nil {
		return nil, err
	}
	stderr, err := apply("--verbose")
	if err != nil {
		return nil, err
	}
	return parseOffsets(stderr), nil
}

// newPatchError describes the failure of patch p from git apply's stderr and
// the patch's hunks.
func newPatchError(p patchData, commit, stderr string) *PatchError {
	e := &PatchError{Patch: p.path, Commit: commit}
	fails := parseApplyErrors(stderr)
	var details []string
	for _, f := range fails {
		details = append(details, f.Msg)
	}
	e.Detail = strings.Join(details, "\n")
	if e.Detail == "" {
		e.Detail = strings.TrimSpace(stderr)
	}
	for _, f := range fails {
		if f.File != "" {
			e.File = f.File
			break
		}
	}
	if e.File == "" {
		return e
	}
	for _, f := range fails {
		if f.File == e.File && f.Line > 0 {
			e.Line = f.Line
			break
		}
	}
	if h, ok := findHunk(parseHunks(p.data), e.File, e.Line); ok {
		e.Hunk, e.HunkNumber = h.Header, h.Number
		if e.Line == 0 {
			e.Line = h.OldStart
		}
	}
	return e
}
