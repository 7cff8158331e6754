package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/rigorbench/rigor/internal/gitrepo"
	"github.com/rigorbench/rigor/internal/results"
	"github.com/rigorbench/rigor/internal/slurm"
	"github.com/rigorbench/rigor/internal/spec"
)

type resultsSyncCmd struct {
	Remote string `help:"The git remote the jobs pushed to (default: slurm.cue's remote, else origin)."`
	JSON   bool   `help:"Print the branches merged and the files they brought, as JSON."`
}

func (resultsSyncCmd) Help() string {
	return `Fetches the results branches (rigor/results/<batch>) that Slurm jobs pushed
to the module's remote and merges each into the checked-out branch. Records
are new files, so the merges do not conflict; a branch that would change,
delete or replace a file here is an error and is not merged (records are
never overwritten). A branch may bring only records: regular files under
results/<experiment>/ for the experiments this module has, each named by its
run id and holding a record of that experiment and run, and the raw outputs
those records list. Anything else (an experiment or schema file, a Makefile,
.gitattributes, a symlink anywhere) is refused, naming the path. Every
branch is checked before any is merged, so a refused branch merges nothing.
Syncing again merges only what is new.

A Slurm batch whose every job has a record on its results branch needs its
submitted commit (refs/rigor/submit/<batch>) no more: sync removes that ref
from the remote (the results branch holds the commit). Results branches are
never removed; 'rigor jobs --prune' removes a finished batch's own ref.

Examples:
  rigor results sync
  rigor results sync --remote shared`
}

func (c *resultsSyncCmd) Run(e *env) error {
	root, err := spec.FindRoot(e.wd)
	if err != nil {
		return err
	}
	remote := c.Remote
	if remote == "" {
		cfg, err := slurm.LoadConfig(root)
		if err != nil {
			return err
		}
		remote = firstNonEmpty(cfg.Remote, "origin")
	}
	// A branch may bring records of the experiments this module has.
	set, err := e.loadSet(nil)
	if err != nil {
		return err
	}
	ids := map[string]bool{}
	for _, x := range set.Experiments {
		ids[x.ID] = true
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	synced, err := gitrepo.Sync(ctx, root, gitrepo.SyncOptions{Remote: remote, Check: results.SyncCheck(ctx, ids), Author: e.cfg().GitAuthor})
	report := func() {
		added := 0
		for _, s := range synced {
			added += len(s.Added)
		}
		if c.JSON {
			if synced == nil {
				synced = []gitrepo.Synced{}
			}
			e.printJSON(synced)
			return
		}
		tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
		for _, s := range synced {
			what := "already merged"
			if n := records(s.Added); len(s.Added) > 0 {
				what = fmt.Sprintf("merged %d %s", n, plural(n, "record", "records"))
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\n", s.Branch, gitrepo.ShortHash(s.Commit), what)
		}
		tw.Flush()
		fmt.Fprintf(e.stderr, "rigor: %d results %s from %s, %d new %s\n", len(synced), plural(len(synced), "branch", "branches"), remote, records(allAdded(synced)), plural(records(allAdded(synced)), "record", "records"))
	}
	if err != nil {
		report()
		var ce *gitrepo.ConflictError
		if errors.As(err, &ce) {
			return withHint(err, "a record's path names its run id, so two different records never share one: look at the branch with 'git log "+remote+"/"+ce.Branch+"' and remove or rename the file on one side")
		}
		var fe *gitrepo.ForeignError
		if errors.As(err, &fe) {
			return withHint(err, "a results branch holds only the records its jobs wrote: look at it with 'git log -p --stat refs/rigor/sync/"+strings.TrimPrefix(fe.Branch, gitrepo.ResultsBranchPrefix)+"', and delete it if it is not one ('git push "+remote+" --delete "+fe.Branch+"')")
		}
		if errors.Is(err, gitrepo.ErrGitNotInstalled) {
			return withHint(err, "install git")
		}
		var ge *gitrepo.GitError
		if errors.As(err, &ge) && ge.Args[0] == "fetch" {
			return withHint(err, "the jobs push to the remote "+remote+" ('git remote -v' lists the module's remotes; --remote NAME picks another)")
		}
		return err
	}
	report()
	pruneSubmitted(ctx, e, root, remote)
	return nil
}

// pruneSubmitted removes from the remote the submit refs of the batches
// whose every job has a record on its results branch (slurm.Prune): no job
// fetches them again, and the branch holds the commit. What goes wrong is
// a warning: the records are merged.
func pruneSubmitted(ctx context.Context, e *env, root, remote string) {
	batches, errs := slurm.Batches(root)
	e.warn(errs)
	pruned, err := slurm.Prune(ctx, slurm.PruneOptions{Root: root, Remote: remote, Batches: batches, SubmitOnly: true})
	if err != nil {
		e.warn([]error{fmt.Errorf("the refs of finished Slurm batches are kept on %s: %w", remote, err)})
	}
	removed := 0
	for _, p := range pruned {
		removed += len(p.Removed)
	}
	if removed > 0 {
		fmt.Fprintf(e.stderr, "rigor: removed %d %s of finished Slurm batches from %s (%s…; their results branches hold the commits)\n", removed, plural(removed, "submit ref", "submit refs"), remote, slurm.SubmitRefPrefix)
		fmt.Fprintf(e.stderr, "rigor: hint: 'rigor jobs --prune' removes their batches (%s…) too once their records are merged here; other clones' 'rigor jobs' no longer list them then\n", slurm.BatchRefPrefix)
	}
}

func allAdded(s []gitrepo.Synced) []string {
	var out []string
	for _, x := range s {
		out = append(out, x.Added...)
	}
	return out
}

// records counts the record files (results/<exp>/<id>.json) among paths.
func records(paths []string) int {
	n := 0
	for _, p := range paths {
		if strings.HasSuffix(p, ".json") && strings.Count(strings.TrimPrefix(p, results.Dir+"/"), "/") >= 1 && !strings.Contains(strings.TrimSuffix(p[strings.LastIndex(p, "/")+1:], ".json"), "/") && results.IsRunID(strings.TrimSuffix(p[strings.LastIndex(p, "/")+1:], ".json")) {
			n++
		}
	}
	return n
}
