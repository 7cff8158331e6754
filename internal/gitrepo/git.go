package gitrepo

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/index"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/filesystem"

	"github.com/rigorbench/rigor/internal/redact"
)

// AuthorEnv names the environment variable that sets the author of the
// commits rigor makes, as "Name <email>" (internal/cli reads it into
// [Repo.Author]). Without it the author comes from git config (user.name,
// user.email), else [DefaultAuthor].
const AuthorEnv = "RIGOR_GIT_AUTHOR"

// DefaultAuthor is the commit author when neither RIGOR_GIT_AUTHOR nor git
// config names one.
const DefaultAuthor = "rigor <rigor@localhost>"

// ErrNotRepository is wrapped when the results directory is not inside a
// git repository.
var ErrNotRepository = errors.New("not inside a git repository")

// ErrNothingToCommit is wrapped by [Repo.Commit] when the paths are
// already committed as they are.
var ErrNothingToCommit = errors.New("nothing to commit")

// CommitError is returned by [Repo.Commit] when the commit failed. The
// files were written before and are still there: nothing is lost, the
// commit can be made later with git.
type CommitError struct {
	Paths []string
	Err   error
}

func (e *CommitError) Error() string {
	what := "the record is"
	if len(e.Paths) != 1 {
		what = "the files are"
	}
	return fmt.Sprintf("committing %s: %v (%s kept, uncommitted)", strings.Join(e.Paths, ", "), e.Err, what)
}

func (e *CommitError) Unwrap() error { return e.Err }

// Repo is an opened git repository: the one that holds a module's
// records.
type Repo struct {
	r        *git.Repository
	worktree string // the working tree's root
	gitDir   string // HEAD, index, locks
	common   string // refs and objects (differs from gitDir in a linked worktree)

	// Author is the author of the commits, "Name <email>" (the value of
	// RIGOR_GIT_AUTHOR); "" takes git config, else [DefaultAuthor].
	Author string
	// Scrubber knows the secrets of rigor's environment: they are
	// replaced in commit messages (nil: [redact.String] alone).
	Scrubber *redact.Scrubber
}

// Open opens the git repository that holds root (found upwards, as git
// does, linked worktrees included). name is what errors call the place
// (the results directory). Outside a repository the error wraps
// [ErrNotRepository].
func Open(root, name string) (*Repo, error) {
	r, err := git.PlainOpenWithOptions(root, &git.PlainOpenOptions{DetectDotGit: true, EnableDotGitCommonDir: true})
	if errors.Is(err, git.ErrRepositoryNotExists) {
		return nil, fmt.Errorf("%s: %w", name, ErrNotRepository)
	}
	if err != nil {
		return nil, fmt.Errorf("opening the git repository of %s: %w", name, err)
	}
	wt, err := r.Worktree()
	if err != nil {
		return nil, fmt.Errorf("opening the git repository of %s: %w", name, err)
	}
	st, ok := r.Storer.(*filesystem.Storage)
	if !ok {
		return nil, fmt.Errorf("opening the git repository of %s: unexpected storage %T", name, r.Storer)
	}
	gitDir := st.Filesystem().Root()
	common := gitDir
	if b, err := os.ReadFile(filepath.Join(gitDir, "commondir")); err == nil {
		c := strings.TrimSpace(string(b))
		if !filepath.IsAbs(c) {
			c = filepath.Join(gitDir, c)
		}
		common = filepath.Clean(c)
	}
	top, err := filepath.EvalSymlinks(wt.Filesystem.Root())
	if err != nil {
		top = wt.Filesystem.Root()
	}
	return &Repo{r: r, worktree: top, gitDir: gitDir, common: common}, nil
}

// Rel returns p relative to the working tree, slash-separated.
func (g *Repo) Rel(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	if dir, err := filepath.EvalSymlinks(filepath.Dir(abs)); err == nil {
		abs = filepath.Join(dir, filepath.Base(abs))
	}
	r, err := filepath.Rel(g.worktree, abs)
	if err != nil || !filepath.IsLocal(r) {
		return "", fmt.Errorf("%s is outside the repository %s", p, g.worktree)
	}
	return filepath.ToSlash(r), nil
}

// Commit commits the given files (directories stand for the files under
// them) in the git repository that holds the store, and returns the new
// commit's hash. Only those paths are added: no status scan of the working
// tree, so a repository with many results stays fast, and what else the
// user staged stays staged and uncommitted (git commit --only). The index
// is updated as git would, so that `git status` is clean for the paths.
//
// Two processes never race: Commit holds an flock on .git/rigor.lock for
// its whole duration (waiting for another rigor, until ctx ends), and
// git's own .git/index.lock while it updates the index and the branch, as
// the git CLI does. The author comes from [Repo.Author], git config, or
// [DefaultAuthor].
//
// Any failure after the files were written is a *[CommitError]: the files
// are kept. A store outside a git repository wraps [ErrNotRepository].
//
// The message is redacted ([redact.String]): a commit is forever.
func (g *Repo) Commit(ctx context.Context, paths []string, msg string) (string, error) {
	hash, err := g.commit(ctx, paths, g.Scrubber.String(msg))
	if err != nil {
		return "", &CommitError{Paths: paths, Err: err}
	}
	return hash, nil
}

func (g *Repo) commit(ctx context.Context, paths []string, msg string) (string, error) {
	if len(paths) == 0 {
		return "", errors.New("no paths to commit")
	}
	author, err := g.author()
	if err != nil {
		return "", err
	}
	unlock, err := lockFile(ctx, filepath.Join(g.gitDir, "rigor.lock"))
	if err != nil {
		return "", err
	}
	defer unlock()
	indexLock, err := createLock(ctx, filepath.Join(g.gitDir, "index"))
	if err != nil {
		return "", err
	}
	defer indexLock.abort()

	// The files to add, as paths in the tree, with their blobs written.
	files, err := g.expand(paths)
	if err != nil {
		return "", err
	}
	changes := map[string]plumbing.Hash{}
	var entries []*index.Entry
	for _, f := range files {
		e, err := g.addBlob(f)
		if err != nil {
			return "", err
		}
		changes[e.Name] = e.Hash
		entries = append(entries, e)
	}

	// HEAD: the branch to advance and its commit, if any.
	branch, parent, err := g.head()
	if err != nil {
		return "", err
	}
	var base *object.Tree
	var parents []plumbing.Hash
	if !parent.IsZero() {
		c, err := g.r.CommitObject(parent)
		if err != nil {
			return "", fmt.Errorf("reading HEAD commit %s: %w", parent, err)
		}
		if base, err = c.Tree(); err != nil {
			return "", fmt.Errorf("reading the tree of HEAD %s: %w", parent, err)
		}
		parents = []plumbing.Hash{parent}
	}
	treeHash, err := g.writeTree(base, changes)
	if err != nil {
		return "", err
	}
	if base != nil && treeHash == base.Hash {
		return "", fmt.Errorf("%w: the paths are committed as they are", ErrNothingToCommit)
	}
	if err := ctx.Err(); err != nil {
		return "", err
	}
	now := time.Now()
	author.When = now
	commit := &object.Commit{Author: author, Committer: author, Message: ensureNewline(msg), TreeHash: treeHash, ParentHashes: parents}
	obj := g.r.Storer.NewEncodedObject()
	if err := commit.Encode(obj); err != nil {
		return "", fmt.Errorf("encoding the commit: %w", err)
	}
	hash, err := g.r.Storer.SetEncodedObject(obj)
	if err != nil {
		return "", fmt.Errorf("writing the commit: %w", err)
	}
	if err := g.updateRef(ctx, branch, parent, hash, author, msg); err != nil {
		return "", err
	}
	if err := g.writeIndex(indexLock, entries); err != nil {
		return hash.String(), fmt.Errorf("commit %s made, but updating the index failed (run 'git reset' to resync it): %w", hash, err)
	}
	return hash.String(), nil
}

// ShortHash is a commit hash cut to 12 characters, as rigor prints them.
func ShortHash(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

func ensureNewline(s string) string {
	if !strings.HasSuffix(s, "\n") {
		return s + "\n"
	}
	return s
}

// author returns the commit signature from [Repo.Author], git config,
// or the default.
func (g *Repo) author() (object.Signature, error) {
	if v := strings.TrimSpace(g.Author); v != "" {
		sig, ok := parseAuthor(v)
		if !ok {
			return sig, fmt.Errorf("%s=%q: want \"Name <email>\"", AuthorEnv, v)
		}
		return sig, nil
	}
	if cfg, err := g.r.ConfigScoped(config.GlobalScope); err == nil {
		name, email := cfg.User.Name, cfg.User.Email
		if cfg.Author.Name != "" {
			name = cfg.Author.Name
		}
		if cfg.Author.Email != "" {
			email = cfg.Author.Email
		}
		if name != "" && email != "" {
			return object.Signature{Name: name, Email: email}, nil
		}
	}
	sig, _ := parseAuthor(DefaultAuthor)
	return sig, nil
}

func parseAuthor(s string) (object.Signature, bool) {
	i, j := strings.LastIndexByte(s, '<'), strings.LastIndexByte(s, '>')
	if i <= 0 || j < i || j != len(s)-1 {
		return object.Signature{}, false
	}
	name, email := strings.TrimSpace(s[:i]), strings.TrimSpace(s[i+1:j])
	if name == "" || email == "" || strings.ContainsAny(name+email, "<>\n") {
		return object.Signature{}, false
	}
	return object.Signature{Name: name, Email: email}, true
}

// expand turns the paths into regular files relative to the working tree,
// walking directories.
func (g *Repo) expand(paths []string) ([]string, error) {
	seen := map[string]bool{}
	var out []string
	add := func(p string) error {
		r, err := g.Rel(p)
		if err != nil {
			return err
		}
		if r == ".git" || strings.HasPrefix(r, ".git/") {
			return fmt.Errorf("%s is inside .git", p)
		}
		if !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
		return nil
	}
	for _, p := range paths {
		fi, err := os.Lstat(p)
		if err != nil {
			return nil, fmt.Errorf("adding %s: %w", p, err)
		}
		if !fi.IsDir() {
			if err := add(p); err != nil {
				return nil, err
			}
			continue
		}
		err = filepath.WalkDir(p, func(q string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if d.Name() == ".git" {
					return fs.SkipDir
				}
				return nil
			}
			return add(q)
		})
		if err != nil {
			return nil, fmt.Errorf("adding %s: %w", p, err)
		}
	}
	sort.Strings(out)
	return out, nil
}

// addBlob writes the file's blob object and returns its index entry.
func (g *Repo) addBlob(rel string) (*index.Entry, error) {
	p := filepath.Join(g.worktree, filepath.FromSlash(rel))
	fi, err := os.Lstat(p)
	if err != nil {
		return nil, fmt.Errorf("adding %s: %w", rel, err)
	}
	var data []byte
	mode := filemode.Regular
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		target, err := os.Readlink(p)
		if err != nil {
			return nil, fmt.Errorf("adding %s: %w", rel, err)
		}
		data, mode = []byte(target), filemode.Symlink
	case fi.Mode().IsRegular():
		if data, err = os.ReadFile(p); err != nil {
			return nil, fmt.Errorf("adding %s: %w", rel, err)
		}
		if fi.Mode()&0o111 != 0 {
			mode = filemode.Executable
		}
	default:
		return nil, fmt.Errorf("adding %s: not a regular file", rel)
	}
	obj := g.r.Storer.NewEncodedObject()
	obj.SetType(plumbing.BlobObject)
	obj.SetSize(int64(len(data)))
	w, err := obj.Writer()
	if err != nil {
		return nil, err
	}
	if _, err := w.Write(data); err != nil {
		return nil, err
	}
	w.Close()
	hash := obj.Hash()
	if err := g.store(obj); err != nil {
		return nil, fmt.Errorf("adding %s: writing blob: %w", rel, err)
	}
	e := &index.Entry{Name: rel, Hash: hash, Mode: mode, ModifiedAt: fi.ModTime(), Size: uint32(fi.Size())}
	fillStat(e, fi)
	return e, nil
}

// head returns the branch HEAD points to ("" when detached) and its
// commit (zero when the branch has none yet).
func (g *Repo) head() (plumbing.ReferenceName, plumbing.Hash, error) {
	h, err := g.r.Reference(plumbing.HEAD, false)
	if err != nil {
		return "", plumbing.ZeroHash, fmt.Errorf("reading HEAD: %w", err)
	}
	if h.Type() == plumbing.HashReference {
		return "", h.Hash(), nil
	}
	name := h.Target()
	ref, err := g.r.Reference(name, true)
	if errors.Is(err, plumbing.ErrReferenceNotFound) {
		return name, plumbing.ZeroHash, nil
	}
	if err != nil {
		return "", plumbing.ZeroHash, fmt.Errorf("reading %s: %w", name, err)
	}
	return name, ref.Hash(), nil
}

// writeTree writes the trees of base with the changes (path → blob)
// applied and returns the root tree's hash. Only the trees on the changed
// paths are rewritten.
func (g *Repo) writeTree(base *object.Tree, changes map[string]plumbing.Hash) (plumbing.Hash, error) {
	byName := map[string]object.TreeEntry{}
	if base != nil {
		for _, e := range base.Entries {
			byName[e.Name] = e
		}
	}
	sub := map[string]map[string]plumbing.Hash{}
	for p, h := range changes {
		first, rest, nested := strings.Cut(p, "/")
		if !nested {
			mode := filemode.Regular
			if old, ok := byName[first]; ok && (old.Mode == filemode.Executable || old.Mode == filemode.Symlink) {
				mode = old.Mode
			}
			byName[first] = object.TreeEntry{Name: first, Mode: mode, Hash: h}
			continue
		}
		if sub[first] == nil {
			sub[first] = map[string]plumbing.Hash{}
		}
		sub[first][rest] = h
	}
	for name, ch := range sub {
		var t *object.Tree
		if old, ok := byName[name]; ok && old.Mode == filemode.Dir {
			var err error
			if t, err = g.r.TreeObject(old.Hash); err != nil {
				return plumbing.ZeroHash, fmt.Errorf("reading tree %s: %w", name, err)
			}
		}
		h, err := g.writeTree(t, ch)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		byName[name] = object.TreeEntry{Name: name, Mode: filemode.Dir, Hash: h}
	}
	tree := &object.Tree{Entries: make([]object.TreeEntry, 0, len(byName))}
	for _, e := range byName {
		tree.Entries = append(tree.Entries, e)
	}
	// Git orders entries by name, a tree's name compared as if it ended
	// in '/'.
	key := func(e object.TreeEntry) string {
		if e.Mode == filemode.Dir {
			return e.Name + "/"
		}
		return e.Name
	}
	sort.Slice(tree.Entries, func(i, j int) bool { return key(tree.Entries[i]) < key(tree.Entries[j]) })
	obj := g.r.Storer.NewEncodedObject()
	if err := tree.Encode(obj); err != nil {
		return plumbing.ZeroHash, err
	}
	if err := g.store(obj); err != nil {
		return plumbing.ZeroHash, fmt.Errorf("writing tree: %w", err)
	}
	return obj.Hash(), nil
}

// store writes an object unless it is there as a loose object. Only the
// loose object is looked for: asking the storage would load every pack's
// index (megabytes in a year-old repository) to find what a new record's
// blob or tree never is. An object a pack holds is written loose again,
// a duplicate git's gc drops.
func (g *Repo) store(obj plumbing.EncodedObject) error {
	h := obj.Hash().String()
	if _, err := os.Stat(filepath.Join(g.common, "objects", h[:2], h[2:])); err == nil {
		return nil
	}
	_, err := g.r.Storer.SetEncodedObject(obj)
	return err
}

// updateRef points the branch (or a detached HEAD) at the new commit, the
// way git does: under <ref>.lock, checking that it still holds the parent,
// and appends to the reflogs that exist.
func (g *Repo) updateRef(ctx context.Context, branch plumbing.ReferenceName, parent, hash plumbing.Hash, who object.Signature, msg string) error {
	name := string(branch)
	dir := g.common
	if branch == "" {
		name, dir = "HEAD", g.gitDir
	}
	refPath := filepath.Join(dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(refPath), 0o755); err != nil {
		return fmt.Errorf("updating %s: %w", name, err)
	}
	l, err := createLock(ctx, refPath)
	if err != nil {
		return err
	}
	defer l.abort()
	// Check the branch did not move since HEAD was read.
	var cur plumbing.Hash
	if branch == "" {
		_, cur, err = g.head()
	} else if ref, rerr := g.r.Storer.Reference(branch); rerr == nil {
		cur = ref.Hash()
	} else if !errors.Is(rerr, plumbing.ErrReferenceNotFound) {
		err = rerr
	}
	if err != nil {
		return fmt.Errorf("updating %s: %w", name, err)
	}
	if cur != parent {
		return fmt.Errorf("updating %s: it moved from %s to %s meanwhile", name, parent, cur)
	}
	if _, err := l.f.WriteString(hash.String() + "\n"); err != nil {
		return fmt.Errorf("updating %s: %w", name, err)
	}
	if err := l.commit(); err != nil {
		return fmt.Errorf("updating %s: %w", name, err)
	}
	g.appendReflogs(name, parent, hash, who, msg)
	return nil
}

// appendReflogs adds the reflog lines git would, to the logs that exist;
// a reflog is a convenience, its failure is not the commit's.
func (g *Repo) appendReflogs(name string, old, hash plumbing.Hash, who object.Signature, msg string) {
	subject, _, _ := strings.Cut(msg, "\n")
	what := "commit: "
	if old.IsZero() {
		what = "commit (initial): "
	}
	line := fmt.Sprintf("%s %s %s <%s> %d %s\t%s%s\n", old, hash, who.Name, who.Email, who.When.Unix(), who.When.Format("-0700"), what, subject)
	type log struct{ root, path string }
	logs := []log{{g.gitDir, filepath.Join(g.gitDir, "logs", "HEAD")}}
	if name != "HEAD" {
		logs = append(logs, log{g.common, filepath.Join(g.common, "logs", filepath.FromSlash(name))})
	}
	for _, l := range logs {
		if _, err := os.Stat(filepath.Join(l.root, "logs")); err != nil {
			continue // reflogs are off
		}
		if os.MkdirAll(filepath.Dir(l.path), 0o755) != nil {
			continue
		}
		f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			continue
		}
		f.WriteString(line)
		f.Close()
	}
}

// writeIndex replaces the index entries of the committed paths and writes
// the index through its lock file. The other entries are copied as bytes
// ([spliceIndex]); an index in a format that cannot be spliced is decoded
// and encoded whole.
//
// A split index (git's core.splitIndex) is written as git writes one: the
// shared index, holding most entries, is left as it is, and the small
// file .git/index is rewritten with the committed entries added. A
// repository that asks for a split index but has none yet gets one from
// its current index (linked, not copied). Either way a commit then costs
// nothing proportional to the number of tracked files.
func (g *Repo) writeIndex(l *lock, entries []*index.Entry) error {
	data, err := os.ReadFile(filepath.Join(g.gitDir, "index"))
	if err == nil {
		if base, ok := linkedBase(data); ok {
			// Already split: the shared index is kept, and freshened
			// as git does so that its expiry does not remove it.
			now := time.Now()
			os.Chtimes(filepath.Join(g.gitDir, "sharedindex."+hex.EncodeToString(base)), now, now)
			err = spliceIndex(l.f, data, entries)
		} else if g.wantsSplitIndex() && splittable(data) {
			err = g.splitIndex(l.f, data, entries)
		} else {
			err = spliceIndex(l.f, data, entries)
		}
		if err == nil {
			return l.commitNoSync()
		}
		if !errors.Is(err, errSpliceUnsupported) {
			return fmt.Errorf("updating .git/index: %w", err)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return g.rewriteIndex(l, entries)
}

// wantsSplitIndex reports whether git config sets core.splitIndex.
func (g *Repo) wantsSplitIndex() bool {
	cfg, err := g.r.ConfigScoped(config.GlobalScope)
	if err != nil {
		return false
	}
	switch strings.ToLower(cfg.Raw.Section("core").Option("splitIndex")) {
	case "true", "yes", "on", "1":
		return true
	}
	return false
}

// splitIndex writes a split index whose shared index is the current
// index: .git/sharedindex.<its checksum> is a hard link to it (a copy
// where links fail), and the new .git/index holds only the entries.
func (g *Repo) splitIndex(w io.Writer, data []byte, entries []*index.Entry) error {
	sum := data[len(data)-20:]
	shared := filepath.Join(g.gitDir, "sharedindex."+hex.EncodeToString(sum))
	if _, err := os.Stat(shared); errors.Is(err, fs.ErrNotExist) {
		if err := os.Link(filepath.Join(g.gitDir, "index"), shared); err != nil {
			if err := os.WriteFile(shared, data, 0o644); err != nil {
				return fmt.Errorf("writing the shared index: %w", err)
			}
		}
	}
	return writeSplitIndex(w, sum, entries)
}

// rewriteIndex is writeIndex by decoding and encoding the whole index.
func (g *Repo) rewriteIndex(l *lock, entries []*index.Entry) error {
	idx := &index.Index{Version: 2}
	f, err := os.Open(filepath.Join(g.gitDir, "index"))
	switch {
	case err == nil:
		err = index.NewDecoder(bufio.NewReader(f)).Decode(idx)
		f.Close()
		if err != nil {
			return fmt.Errorf("reading .git/index: %w", err)
		}
	case !errors.Is(err, fs.ErrNotExist):
		return err
	}
	if idx.Version > index.EncodeVersionSupported {
		return fmt.Errorf(".git/index: version %d is not supported", idx.Version)
	}
	replace := map[string]*index.Entry{}
	for _, e := range entries {
		replace[e.Name] = e
	}
	kept := idx.Entries[:0]
	for _, e := range idx.Entries {
		if _, ok := replace[e.Name]; ok {
			continue // including the conflict stages of a path
		}
		kept = append(kept, e)
	}
	idx.Entries = append(kept, entries...)
	sort.SliceStable(idx.Entries, func(i, j int) bool {
		a, b := idx.Entries[i], idx.Entries[j]
		if a.Name != b.Name {
			return a.Name < b.Name
		}
		return a.Stage < b.Stage
	})
	// The cache tree no longer matches; git rebuilds it when it needs it.
	idx.Cache = nil
	var buf bytes.Buffer
	if err := index.NewEncoder(&buf).Encode(idx); err != nil {
		return fmt.Errorf("encoding .git/index: %w", err)
	}
	if _, err := l.f.Write(buf.Bytes()); err != nil {
		return err
	}
	return l.commitNoSync()
}

// lock is git's lock-file convention: <path>.lock created exclusively,
// written, then renamed over <path>.
type lock struct {
	path string
	f    *os.File
	done bool
}

// lockWait is how long createLock waits for another process's lock file
// before giving up.
var lockWait = 10 * time.Second

func createLock(ctx context.Context, path string) (*lock, error) {
	deadline := time.Now().Add(lockWait)
	for {
		f, err := os.OpenFile(path+".lock", os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
		if err == nil {
			return &lock{path: path, f: f}, nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("locking %s: %w", path, err)
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%s.lock exists: another git process is running in this repository, or one crashed (remove the file if no git process is running)", path)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(25 * time.Millisecond):
		}
	}
}

func (l *lock) commit() error {
	if err := l.f.Sync(); err != nil {
		return err
	}
	return l.commitNoSync()
}

// commitNoSync renames the lock file over the target without syncing it
// first: for .git/index, which git itself does not sync (core.fsync's
// default leaves out derived metadata) and which `git reset` rebuilds. At
// 100,000 records it is 33 MB, and the sync was most of a commit's time.
func (l *lock) commitNoSync() error {
	if err := l.f.Close(); err != nil {
		return err
	}
	if err := os.Rename(l.path+".lock", l.path); err != nil {
		return err
	}
	l.done = true
	return nil
}

func (l *lock) abort() {
	if l.done {
		return
	}
	l.f.Close()
	os.Remove(l.path + ".lock")
	l.done = true
}

// Revision is the tree of one commit of the repository, read through
// go-git: no checkout, the working tree is not touched.
type Revision struct {
	g    *Repo
	rev  string
	tree *object.Tree
}

// At resolves a revision (HEAD~3, a branch, a tag, a commit hash).
func (g *Repo) At(ctx context.Context, rev string) (*Revision, error) {
	h, err := g.r.ResolveRevision(plumbing.Revision(rev))
	if err != nil {
		return nil, fmt.Errorf("resolving revision %q: %w", rev, err)
	}
	c, err := g.r.CommitObject(*h)
	if err != nil {
		return nil, fmt.Errorf("revision %q: %w", rev, err)
	}
	t, err := c.Tree()
	if err != nil {
		return nil, fmt.Errorf("revision %q: %w", rev, err)
	}
	return &Revision{g: g, rev: rev, tree: t}, ctx.Err()
}

// File is a regular file of a revision: its path in the tree and its blob.
type File struct {
	Path string
	hash plumbing.Hash
}

// Files returns the regular files directly in dir (a slash-separated path
// in the tree), in tree order. A dir the revision does not have wraps
// [fs.ErrNotExist].
func (v *Revision) Files(dir string) ([]File, error) {
	sub, err := v.tree.Tree(dir)
	if errors.Is(err, object.ErrDirectoryNotFound) {
		return nil, fmt.Errorf("%s at %s: %w", dir, v.rev, fs.ErrNotExist)
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s at %s: %w", dir, v.rev, err)
	}
	var out []File
	for _, e := range sub.Entries {
		if e.Mode.IsFile() {
			out = append(out, File{Path: path.Join(dir, e.Name), hash: e.Hash})
		}
	}
	return out, nil
}

// Find returns the regular files under dir, at any depth, whose name is
// base. A dir the revision does not have wraps [fs.ErrNotExist].
func (v *Revision) Find(dir, base string) ([]File, error) {
	root, err := v.tree.Tree(dir)
	if err != nil {
		return nil, fmt.Errorf("%s at %s: %w", dir, v.rev, fs.ErrNotExist)
	}
	var found []File
	walker := object.NewTreeWalker(root, true, nil)
	defer walker.Close()
	for {
		name, e, err := walker.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("finding %s at %s: %w", base, v.rev, err)
		}
		if e.Mode.IsFile() && path.Base(name) == base {
			found = append(found, File{Path: path.Join(dir, name), hash: e.Hash})
		}
	}
	return found, nil
}

// Lookup returns the file at a slash-separated path in the tree, or an
// error wrapping [fs.ErrNotExist] when the revision does not have it.
func (v *Revision) Lookup(rel string) (File, error) {
	f, err := v.tree.File(rel)
	if err != nil {
		return File{}, fmt.Errorf("%s at %s: %w", rel, v.rev, fs.ErrNotExist)
	}
	return File{Path: rel, hash: f.Hash}, nil
}

// Read returns a file's content.
func (v *Revision) Read(f File) ([]byte, error) {
	b, err := v.g.r.BlobObject(f.hash)
	if err != nil {
		return nil, err
	}
	rd, err := b.Reader()
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	return io.ReadAll(rd)
}

// HeadDetached reports whether the store's repository has a detached HEAD:
// a commit made there belongs to no branch, and the next checkout orphans
// it. Callers warn before or after committing ('git switch -c NAME' keeps
// the commits). A store outside a repository wraps [ErrNotRepository].
func (g *Repo) HeadDetached() (bool, error) {
	branch, _, err := g.head()
	if err != nil {
		return false, err
	}
	return branch == "", nil
}
