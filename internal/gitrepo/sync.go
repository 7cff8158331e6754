package gitrepo

// Publishing records to a shared remote and gathering them back (issue
// 17). These use the git CLI, not go-git, for three reasons: go-git v5
// cannot merge two histories (its Merge is fast-forward only), and a sync
// is a merge; pushes and fetches must go through the user's own git set-up
// (ssh config, credential helpers, url.insteadOf), which only git itself
// honours; and a push that loses a race must be told apart from one that
// failed, which git's --porcelain output does.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/rigorbench/rigor/internal/redact"
)

// ResultsBranchPrefix is the prefix of the branches jobs push records to
// on the shared remote: rigor/results/<batch id>.
const ResultsBranchPrefix = "rigor/results/"

// ErrGitNotInstalled is returned when the git executable is not on PATH.
var ErrGitNotInstalled = errors.New("git is not installed")

// git runs git in dir with the extra environment env and returns its
// trimmed stdout; an error carries git's stderr.
func gitRun(ctx context.Context, dir string, env []string, args ...string) (string, error) {
	if _, err := exec.LookPath("git"); err != nil {
		return "", ErrGitNotInstalled
	}
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "LC_ALL=C")
	cmd.Env = append(cmd.Env, env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = strings.TrimSpace(stdout.String())
		}
		return strings.TrimSpace(stdout.String()), &GitError{Args: args, Msg: msg, Err: err}
	}
	return strings.TrimSpace(stdout.String()), nil
}

// identityEnv returns the environment that gives the git CLI's commits
// an author: author ("Name <email>") when set; else none when git has an
// identity of its own (config, EMAIL, GIT_AUTHOR_*), which `git var`
// says; else [DefaultAuthor], as [Repo.Commit] does. Without it a
// machine with no git identity (a fresh Slurm node, a newcomer's first
// clone) fails every commit with git's "Author identity unknown".
func identityEnv(ctx context.Context, dir, author string) ([]string, error) {
	if author == "" {
		_, errA := gitRun(ctx, dir, nil, "var", "GIT_AUTHOR_IDENT")
		_, errC := gitRun(ctx, dir, nil, "var", "GIT_COMMITTER_IDENT")
		if errA == nil && errC == nil {
			return nil, nil
		}
		author = DefaultAuthor
	}
	sig, ok := parseAuthor(author)
	if !ok {
		return nil, fmt.Errorf("author %q: want \"Name <email>\"", author)
	}
	return []string{"GIT_AUTHOR_NAME=" + sig.Name, "GIT_AUTHOR_EMAIL=" + sig.Email,
		"GIT_COMMITTER_NAME=" + sig.Name, "GIT_COMMITTER_EMAIL=" + sig.Email}, nil
}

// GitError is a git command that failed, with what git said.
type GitError struct {
	Args []string
	Msg  string
	Err  error
}

// Error is git's first lines with any credentials in URLs redacted: the
// message can end up in a record's error.
func (e *GitError) Error() string {
	return redact.String(fmt.Sprintf("git %s: %s", e.Args[0], firstLines(e.Msg, 3)))
}
func (e *GitError) Unwrap() error { return e.Err }

func firstLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, "; ")
}

// PublishOptions say where a job's records go.
type PublishOptions struct {
	// Remote is a git URL or remote name; Branch the branch there.
	Remote, Branch string
	// Base is the commit the branch starts from when it does not exist yet
	// (the commit the jobs ran).
	Base string
	// Paths are the files and directories to publish, relative to the
	// clone's root. They must be new: records never change.
	Paths []string
	// Message is the commit message; Author "Name <email>" its author and
	// committer.
	Message, Author string
	// Attempts bounds the tries when other jobs push at the same time
	// (default 30).
	Attempts int
}

// Publish commits opts.Paths of the clone at dir on top of the remote
// branch's tip (opts.Base when the branch does not exist) and pushes the
// commit, fetching and trying again when another push won the race. It
// never moves the clone's HEAD or touches its working tree, and never
// forces a push. It returns the pushed commit.
func Publish(ctx context.Context, dir string, opts PublishOptions) (string, error) {
	attempts := opts.Attempts
	if attempts <= 0 {
		attempts = 30
	}
	env, err := identityEnv(ctx, dir, opts.Author)
	if err != nil {
		return "", fmt.Errorf("publishing to %s: %w", opts.Branch, err)
	}
	// A private index, so the clone's own stays as it was (in the git
	// directory, wherever that is: a worktree's .git is a file).
	index, err := gitRun(ctx, dir, nil, "rev-parse", "--path-format=absolute", "--git-path", "rigor-publish-index")
	if err != nil {
		return "", fmt.Errorf("publishing to %s: %w", opts.Branch, err)
	}
	env = append(env, "GIT_INDEX_FILE="+index)
	tracking := "refs/rigor/publish-base"
	var lastErr error
	for i := 0; i < attempts; i++ {
		if i > 0 {
			// Back off with jitter so that racing jobs spread out.
			d := time.Duration(50+rand.IntN(100*min(i, 10))) * time.Millisecond
			select {
			case <-ctx.Done():
				return "", ctx.Err()
			case <-time.After(d):
			}
		}
		base := opts.Base
		if _, err := gitRun(ctx, dir, nil, "fetch", "--quiet", "--no-tags", opts.Remote, "+refs/heads/"+opts.Branch+":"+tracking); err == nil {
			if base, err = gitRun(ctx, dir, nil, "rev-parse", "--verify", tracking+"^{commit}"); err != nil {
				return "", fmt.Errorf("publishing to %s: %w", opts.Branch, err)
			}
		} else if !missingRef(err) {
			lastErr = err
			continue
		}
		commit, err := commitOnto(ctx, dir, env, base, opts)
		if err != nil {
			return "", fmt.Errorf("publishing to %s: %w", opts.Branch, err)
		}
		out, err := gitRun(ctx, dir, nil, "push", "--porcelain", "--quiet", opts.Remote, commit+":refs/heads/"+opts.Branch)
		if err == nil {
			return commit, nil
		}
		lastErr = err
		if !pushRace(out, err) {
			return "", fmt.Errorf("pushing to %s: %w", opts.Branch, err)
		}
	}
	return "", fmt.Errorf("pushing to %s: gave up after %d attempts: %w", opts.Branch, attempts, lastErr)
}

// commitOnto writes a commit whose tree is base's plus opts.Paths and
// whose parent is base. A path already in base is an error: records are
// new files.
func commitOnto(ctx context.Context, dir string, env []string, base string, opts PublishOptions) (string, error) {
	if _, err := gitRun(ctx, dir, env, "read-tree", base); err != nil {
		return "", err
	}
	for _, p := range opts.Paths {
		if out, _ := gitRun(ctx, dir, env, "ls-files", "--", p); out != "" {
			return "", fmt.Errorf("%s is already on the branch: records are never replaced", p)
		}
	}
	// -f: a results directory the module ignores (results/quickstart/) is
	// still published.
	if _, err := gitRun(ctx, dir, env, append([]string{"add", "-f", "--"}, opts.Paths...)...); err != nil {
		return "", err
	}
	tree, err := gitRun(ctx, dir, env, "write-tree")
	if err != nil {
		return "", err
	}
	return gitRun(ctx, dir, env, "commit-tree", tree, "-p", base, "-m", opts.Message)
}

// missingRef reports whether a fetch failed because the branch does not
// exist yet.
func missingRef(err error) bool {
	var ge *GitError
	return errors.As(err, &ge) && strings.Contains(ge.Msg, "couldn't find remote ref")
}

// pushRace reports whether a push failed because another push moved or
// created the branch first (or held its lock), rather than for a reason
// retrying cannot fix.
func pushRace(out string, err error) bool {
	var ge *GitError
	msg := out
	if errors.As(err, &ge) {
		msg += "\n" + ge.Msg
	}
	for _, s := range []string{"[rejected]", "non-fast-forward", "fetch first", "cannot lock ref", "failed to update ref", "reference already exists", "stale info", "Unable to create", "index.lock"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// SyncOptions say what to gather.
type SyncOptions struct {
	// Remote is the remote name or URL the jobs pushed to.
	Remote string
	// Branches limits the sync to these results branches (full names,
	// rigor/results/<id>); empty means every rigor/results/* branch.
	Branches []string
	// Check says which of the files a results branch adds it may not
	// bring, and why. A branch with any is refused whole. Sync refuses
	// every branch when Check is nil: what a branch may bring is the
	// caller's to say (internal/results).
	Check func(files []AddedFile) []Refused
	// Author is the author of the merge commits, "Name <email>"; "" takes
	// git's own identity, else [DefaultAuthor] (as [Publish]).
	Author string
}

// AddedFile is a file a results branch adds.
type AddedFile struct {
	// Path is relative to the module, slash-separated.
	Path string
	// Mode is git's: "100644" and "100755" are regular files, "120000" a
	// symlink, "160000" a submodule.
	Mode string
	root string
	blob string
}

// Regular reports whether the file is a regular file (not a symlink or
// a submodule).
func (f AddedFile) Regular() bool { return f.Mode == "100644" || f.Mode == "100755" }

// Read returns the file's bytes as the branch holds them, up to max
// bytes; a larger file is an error.
func (f AddedFile) Read(ctx context.Context, max int64) ([]byte, error) {
	size, err := gitRun(ctx, f.root, nil, "cat-file", "-s", f.blob)
	if err != nil {
		return nil, err
	}
	if n, err := strconv.ParseInt(size, 10, 64); err != nil || n > max {
		return nil, fmt.Errorf("%s bytes, more than %d", size, max)
	}
	cmd := exec.CommandContext(ctx, "git", "cat-file", "blob", f.blob)
	cmd.Dir = f.root
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "LC_ALL=C")
	return cmd.Output()
}

// Refused is a file a results branch may not bring, and why.
type Refused struct {
	Path, Reason string
}

// ForeignError is a results branch that brings files other than records:
// nothing is merged.
type ForeignError struct {
	Branch  string
	Refused []Refused
}

func (e *ForeignError) Error() string {
	parts := make([]string, len(e.Refused))
	for i, r := range e.Refused {
		parts[i] = r.Path + " (" + r.Reason + ")"
	}
	return fmt.Sprintf("%s brings files a results branch may not: %s; nothing was merged", e.Branch, strings.Join(parts, "; "))
}

// Synced is one results branch merged, or found already merged.
type Synced struct {
	Branch string `json:"branch"`
	Commit string `json:"commit"`
	// Added lists the files the merge brought in (records and raw output),
	// relative to the module; empty when the branch was already merged.
	Added []string `json:"added,omitempty"`

	merge bool // not merged yet
}

// ConflictError is a results branch that changes or replaces a file the
// working branch has: records are never overwritten, so nothing is merged.
type ConflictError struct {
	Branch string
	Paths  []string
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("%s conflicts with this branch: %s (records are never replaced; nothing was merged)", e.Branch, strings.Join(e.Paths, ", "))
}

// Sync fetches the results branches from opts.Remote and merges each into
// the checked-out branch of the repository at root, in the order of their
// names. Every branch is examined before any is merged: a branch that
// would change or delete a file, or add one that exists here with other
// content, is a [*ConflictError]; one that adds a file opts.Check refuses
// is a [*ForeignError]; either way nothing is merged.
func Sync(ctx context.Context, root string, opts SyncOptions) ([]Synced, error) {
	remote := opts.Remote
	if remote == "" {
		remote = "origin"
	}
	if _, err := gitRun(ctx, root, nil, "rev-parse", "--verify", "HEAD^{commit}"); err != nil {
		return nil, fmt.Errorf("syncing results: the module has no commit to merge into: %w", err)
	}
	local := "refs/rigor/sync/"
	if _, err := gitRun(ctx, root, nil, "fetch", "--quiet", "--no-tags", "--prune", remote,
		"+refs/heads/"+ResultsBranchPrefix+"*:"+local+"*"); err != nil {
		return nil, fmt.Errorf("fetching results from %s: %w", remote, err)
	}
	refs, err := gitRun(ctx, root, nil, "for-each-ref", "--format=%(refname)", local)
	if err != nil {
		return nil, err
	}
	want := map[string]bool{}
	for _, b := range opts.Branches {
		want[b] = true
	}
	var out []Synced
	for _, ref := range strings.Fields(refs) {
		branch := ResultsBranchPrefix + strings.TrimPrefix(ref, local)
		if len(want) > 0 && !want[branch] {
			continue
		}
		s, err := examineResults(ctx, root, ref, branch, opts.Check)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	// A branch based on a commit that holds another branch's records (the
	// submitting clone had merged them before it submitted) brings them
	// again: each file counts once, with the first branch that brings it.
	seen := map[string]bool{}
	for i := range out {
		kept := out[i].Added[:0]
		for _, a := range out[i].Added {
			if !seen[a] {
				seen[a] = true
				kept = append(kept, a)
			}
		}
		out[i].Added = kept
	}
	env, err := identityEnv(ctx, root, opts.Author)
	if err != nil {
		return out, err
	}
	for _, s := range out {
		if !s.merge {
			continue // already merged
		}
		msg := "rigor results sync: merge " + s.Branch
		if _, err := gitRun(ctx, root, env, "merge", "--quiet", "--no-edit", "-m", msg, s.Commit); err != nil {
			gitRun(ctx, root, nil, "merge", "--abort")
			return out, fmt.Errorf("merging %s: %w", s.Branch, err)
		}
	}
	return out, nil
}

// headEntry returns the mode and blob of path (relative to the top of the
// repository) in HEAD, or "" when HEAD has no such file.
func headEntry(ctx context.Context, root, path string) (mode, blob string, err error) {
	out, err := gitRun(ctx, root, nil, "ls-tree", "--full-tree", "-z", "HEAD", "--", path)
	if err != nil {
		return "", "", err
	}
	meta, name, ok := strings.Cut(strings.TrimSuffix(out, "\x00"), "\t")
	f := strings.Fields(meta)
	if !ok || name != path || len(f) != 3 || f[1] != "blob" {
		return "", "", nil
	}
	return f[0], f[2], nil
}

// examineResults returns what merging a results branch would add, or why
// it must not be merged.
func examineResults(ctx context.Context, root, ref, branch string, check func([]AddedFile) []Refused) (Synced, error) {
	commit, err := gitRun(ctx, root, nil, "rev-parse", ref)
	if err != nil {
		return Synced{}, err
	}
	s := Synced{Branch: branch, Commit: commit}
	if _, err := gitRun(ctx, root, nil, "merge-base", "--is-ancestor", commit, "HEAD"); err == nil {
		return s, nil // already merged
	}
	base, err := gitRun(ctx, root, nil, "merge-base", "HEAD", commit)
	if err != nil {
		return s, fmt.Errorf("merging %s: it shares no history with this branch: %w", branch, err)
	}
	// --raw: each change as ":oldmode newmode oldblob newblob status",
	// then the path.
	changes, err := gitRun(ctx, root, nil, "diff", "--raw", "--no-abbrev", "--no-renames", "-z", base, commit)
	if err != nil {
		return s, err
	}
	var conflicts []string
	var added []AddedFile
	f := strings.Split(changes, "\x00")
	for i := 0; i+1 < len(f); i += 2 {
		meta, path := strings.Fields(strings.TrimPrefix(f[i], ":")), f[i+1]
		if len(meta) != 5 {
			return s, fmt.Errorf("merging %s: cannot read git diff's line %q", branch, f[i])
		}
		status := meta[4]
		// A file this branch already holds as the results branch has
		// it (same bytes, same mode; or absent on both for a deletion)
		// is no conflict and brings nothing: a second clone whose
		// history has the batch's commit under another hash, or a
		// record the submitting side committed and pushed both.
		hereMode, hereBlob, err := headEntry(ctx, root, path)
		if err != nil {
			return s, err
		}
		if status == "D" && hereBlob == "" || status != "D" && hereBlob == meta[3] && hereMode == meta[1] {
			continue
		}
		if status != "A" {
			conflicts = append(conflicts, path+" ("+map[string]string{"M": "changed", "D": "deleted", "T": "changed"}[status]+")")
			continue
		}
		added = append(added, AddedFile{Path: path, Mode: meta[1], root: root, blob: meta[3]})
		// Added there: it must be absent here, or the same bytes.
		if hereBlob == "" {
			if _, serr := os.Lstat(root + "/" + path); serr == nil {
				conflicts = append(conflicts, path+" (an uncommitted file here)")
				continue
			}
			s.Added = append(s.Added, path)
			continue
		}
		conflicts = append(conflicts, path+" (differs)")
	}
	if len(conflicts) > 0 {
		return s, &ConflictError{Branch: branch, Paths: conflicts}
	}
	var refused []Refused
	if check == nil {
		for _, a := range added {
			refused = append(refused, Refused{Path: a.Path, Reason: "nothing says what a results branch may bring"})
		}
	} else {
		refused = check(added)
	}
	if len(refused) > 0 {
		return s, &ForeignError{Branch: branch, Refused: refused}
	}
	s.merge = true
	return s, nil
}

// FetchBranch fetches branch of remote into ref of the repository at dir
// and returns its tip; found is false when the remote has no such branch.
func FetchBranch(ctx context.Context, dir, remote, branch, ref string) (tip string, found bool, err error) {
	if _, err := gitRun(ctx, dir, nil, "fetch", "--quiet", "--no-tags", remote, "+refs/heads/"+branch+":"+ref); err != nil {
		if missingRef(err) {
			return "", false, nil
		}
		return "", false, err
	}
	tip, err = gitRun(ctx, dir, nil, "rev-parse", "--verify", ref+"^{commit}")
	return tip, err == nil, err
}

// AddedSince lists the files under dir/under (slash-separated, relative to
// the top of the repository) that commit has and base has not.
func AddedSince(ctx context.Context, dir, base, commit, under string) ([]string, error) {
	out, err := gitRun(ctx, dir, nil, "diff", "--name-only", "--no-renames", "--diff-filter=A", "-z", base, commit, "--", under)
	if err != nil {
		return nil, err
	}
	var files []string
	for _, f := range strings.Split(out, "\x00") {
		if f != "" {
			files = append(files, f)
		}
	}
	return files, nil
}

// ReadFile returns path (relative to the top of the repository) as commit
// holds it.
func ReadFile(ctx context.Context, dir, commit, path string) ([]byte, error) {
	out, err := gitRun(ctx, dir, nil, "cat-file", "blob", commit+":"+path)
	return []byte(out), err
}

// PushCommit pushes commit to ref of remote (a full ref name), refusing
// to move a ref that holds another commit.
func PushCommit(ctx context.Context, dir, remote, commit, ref string) error {
	_, err := gitRun(ctx, dir, nil, "push", "--quiet", remote, commit+":"+ref)
	return err
}

// PushFile pushes a commit holding one file, name with data, to ref of
// remote (a full ref name): a small description kept on the remote beside
// the branches (a Slurm batch, refs/rigor/batches/<id>). The commit is
// made in the repository at dir without touching its index or branches.
func PushFile(ctx context.Context, dir, remote, ref, name string, data []byte, author string) error {
	cmd := exec.CommandContext(ctx, "git", "hash-object", "-w", "--stdin")
	cmd.Dir = dir
	cmd.Stdin = bytes.NewReader(data)
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("git hash-object: %w", err)
	}
	blob := strings.TrimSpace(string(out))
	cmd = exec.CommandContext(ctx, "git", "mktree")
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader("100644 blob " + blob + "\t" + name + "\n")
	out, err = cmd.Output()
	if err != nil {
		return fmt.Errorf("git mktree: %w", err)
	}
	env, err := identityEnv(ctx, dir, author)
	if err != nil {
		return err
	}
	commit, err := gitRun(ctx, dir, env, "commit-tree", strings.TrimSpace(string(out)), "-m", name)
	if err != nil {
		return err
	}
	_, err = gitRun(ctx, dir, nil, "push", "--quiet", remote, "+"+commit+":"+ref)
	return err
}

// FetchFiles fetches the refs under prefix (a full ref name ending in /)
// of remote into the same names here, removing the refs under prefix here
// that remote no longer has, and returns, for each ref's last name
// component that want accepts (every one when want is nil), the file name
// its commit holds.
func FetchFiles(ctx context.Context, dir, remote, prefix, name string, want func(string) bool) (map[string][]byte, error) {
	if _, err := gitRun(ctx, dir, nil, "fetch", "--quiet", "--no-tags", "--prune", remote, "+"+prefix+"*:"+prefix+"*"); err != nil {
		return nil, err
	}
	refs, err := gitRun(ctx, dir, nil, "for-each-ref", "--format=%(refname)", prefix)
	if err != nil {
		return nil, err
	}
	out := map[string][]byte{}
	for _, ref := range strings.Fields(refs) {
		if want != nil && !want(strings.TrimPrefix(ref, prefix)) {
			continue
		}
		data, err := ReadFile(ctx, dir, ref, name)
		if err != nil {
			continue
		}
		out[strings.TrimPrefix(ref, prefix)] = data
	}
	return out, nil
}

// FetchRefFiles fetches refs of remote (full names) into the same names
// here, in one fetch, and returns the file name each one's commit holds,
// by ref; a commit without it is left out.
func FetchRefFiles(ctx context.Context, dir, remote string, refs []string, name string) (map[string][]byte, error) {
	out := map[string][]byte{}
	if len(refs) == 0 {
		return out, nil
	}
	args := []string{"fetch", "--quiet", "--no-tags", remote}
	for _, r := range refs {
		args = append(args, "+"+r+":"+r)
	}
	if _, err := gitRun(ctx, dir, nil, args...); err != nil {
		return nil, err
	}
	for _, r := range refs {
		if data, err := ReadFile(ctx, dir, r, name); err == nil {
			out[r] = data
		}
	}
	return out, nil
}

// FetchRef fetches ref of remote into the same name here; found is false
// when remote has no such ref.
func FetchRef(ctx context.Context, dir, remote, ref string) (found bool, err error) {
	if _, err := gitRun(ctx, dir, nil, "fetch", "--quiet", "--no-tags", remote, "+"+ref+":"+ref); err != nil {
		if missingRef(err) {
			return false, nil
		}
		return false, err
	}
	return true, nil
}

// HasCommit reports whether the repository at dir has commit.
func HasCommit(ctx context.Context, dir, commit string) bool {
	_, err := gitRun(ctx, dir, nil, "cat-file", "-e", commit+"^{commit}")
	return err == nil
}

// IsAncestor reports whether commit a is an ancestor of commit b (or b).
func IsAncestor(ctx context.Context, dir, a, b string) (bool, error) {
	_, err := gitRun(ctx, dir, nil, "merge-base", "--is-ancestor", a, b)
	var ge *GitError
	if errors.As(err, &ge) {
		var ee *exec.ExitError
		if errors.As(ge.Err, &ee) && ee.ExitCode() == 1 {
			return false, nil
		}
	}
	return err == nil, err
}

// InHead returns the paths (relative to the top of the repository) that
// HEAD of the repository at dir does not hold.
func InHead(ctx context.Context, dir string, paths []string) (missing []string, err error) {
	if len(paths) == 0 {
		return nil, nil
	}
	out, err := gitRun(ctx, dir, nil, append([]string{"ls-tree", "--full-tree", "--name-only", "-z", "HEAD", "--"}, paths...)...)
	if err != nil {
		return nil, err
	}
	have := map[string]bool{}
	for _, p := range strings.Split(out, "\x00") {
		have[p] = true
	}
	for _, p := range paths {
		if !have[p] {
			missing = append(missing, p)
		}
	}
	return missing, nil
}

// RemoteRefs lists the refs of remote under the prefixes (full ref names
// ending in /), each with the commit it points to.
func RemoteRefs(ctx context.Context, dir, remote string, prefixes ...string) (map[string]string, error) {
	args := []string{"ls-remote", "--refs", remote}
	for _, p := range prefixes {
		args = append(args, p+"*")
	}
	out, err := gitRun(ctx, dir, nil, args...)
	if err != nil {
		return nil, err
	}
	refs := map[string]string{}
	for _, l := range strings.Split(out, "\n") {
		oid, ref, ok := strings.Cut(l, "\t")
		if !ok {
			continue
		}
		for _, p := range prefixes {
			if strings.HasPrefix(ref, p) {
				refs[ref] = oid
			}
		}
	}
	return refs, nil
}

// DeleteRemoteRefs deletes refs of remote (full names, each with the
// commit it was seen at) in one push, each only while it still points
// there: a ref that moved since is kept, and is an error. A ref already
// gone is none. The same refs here go too.
func DeleteRemoteRefs(ctx context.Context, dir, remote string, refs map[string]string) error {
	if len(refs) == 0 {
		return nil
	}
	args := []string{"push", "--porcelain", "--quiet"}
	var specs []string
	for ref, oid := range refs {
		args = append(args, "--force-with-lease="+ref+":"+oid)
		specs = append(specs, ":"+ref)
	}
	_, pushErr := gitRun(ctx, dir, nil, append(append(args, remote), specs...)...)
	if pushErr != nil {
		// Which are left? A ref another clone deleted first is gone all
		// the same.
		now, err := RemoteRefs(ctx, dir, remote, "refs/")
		if err != nil {
			return fmt.Errorf("deleting refs of %s: %w", redact.String(remote), pushErr)
		}
		var left []string
		for ref := range refs {
			if _, ok := now[ref]; ok {
				left = append(left, ref)
			}
		}
		if len(left) > 0 {
			sort.Strings(left)
			return fmt.Errorf("deleting %s from %s: %w", strings.Join(left, ", "), redact.String(remote), pushErr)
		}
	}
	return DeleteLocalRefs(ctx, dir, refs)
}

// DeleteLocalRefs deletes refs (full names; the values are not read) of
// the repository at dir, those it has.
func DeleteLocalRefs(ctx context.Context, dir string, refs map[string]string) error {
	if len(refs) == 0 {
		return nil
	}
	var lines []string
	for ref := range refs {
		lines = append(lines, "delete "+ref+"\n")
	}
	cmd := exec.CommandContext(ctx, "git", "update-ref", "--stdin")
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader(strings.Join(lines, ""))
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("git update-ref: %v: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}
