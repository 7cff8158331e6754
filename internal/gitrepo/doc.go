// Package gitrepo is the git plumbing behind a module's records: the
// one package that reads and writes the repository that holds them.
//
//   - [Open] finds the repository that holds a directory (linked
//     worktrees too); [Repo.Commit] commits given paths only, with no
//     status scan and the index kept as git keeps it (split, untracked
//     cache, skip-worktree), under an flock and git's index.lock;
//     [Repo.Uncommitted] and [Repo.HeadDetached] answer the run's
//     questions about the working tree.
//   - [Repo.At] reads a revision's files without a checkout.
//   - [Publish] and [Sync] move records between a Slurm job's clone, the
//     shared remote's rigor/results/<batch> branches and the module,
//     through the git CLI (which honours the user's ssh and credential
//     set-up, and merges).
//
// It knows nothing of records: internal/results decides which files are
// records and decodes them.
package gitrepo
