package slurm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/rigorbench/rigor/internal/gitrepo"
	"github.com/rigorbench/rigor/internal/results"
	"github.com/rigorbench/rigor/internal/run"
	"github.com/rigorbench/rigor/internal/spec"
)

// Inputs are the module paths whose committed state the jobs run: they
// must be committed, since each job clones the module at HEAD.
var Inputs = []string{spec.ExperimentsDir, "lockfiles", "cue.mod", "patches", ConfigFile}

// HintError is an error of [Submit] with what the user can do about it.
type HintError struct {
	Err  error
	Hint string
}

func (e *HintError) Error() string { return e.Err.Error() }
func (e *HintError) Unwrap() error { return e.Err }

// SubmitOptions are one submission: every point of an experiment, Rounds
// times, as an array with one task per point and round.
type SubmitOptions struct {
	// Root is the module's root.
	Root       string
	Experiment string
	Points     []string
	Rounds     int
	// OrderSeed shuffles each round's order (run.Order); nil picks one.
	OrderSeed *uint64
	Config    *Config
	Request   Request
	// Partition, Account and Time override the Config's; SbatchArgs come
	// after the Config's, so they win.
	Partition, Account, Time string
	SbatchArgs               []string
	// Remote is the git remote named on the command line ("" for the
	// Config's, else origin).
	Remote string
	// KeepOutput keeps the output of jobs that succeeded on their nodes
	// ([Batch.KeepOutput]).
	KeepOutput bool
	// Author is the author of the jobs' commits ("Name <email>", from
	// RIGOR_GIT_AUTHOR); "" takes git config, else [gitrepo.DefaultAuthor].
	Author string
}

// Submitted is a submission Slurm took.
type Submitted struct {
	Batch *Batch
	// Estimate is sbatch --test-only's answer; RemoteName the git remote
	// the records go to.
	Estimate, RemoteName string
	// Warning is what went wrong without stopping the submission.
	Warning string
}

// Submit checks that the jobs can clone what is committed and push their
// records, asks Slurm whether it can run the jobs (sbatch --test-only),
// keeps the batch in the module's [StateDir] and submits it. Errors the
// user can act on are *[HintError]; nothing is submitted on an error.
func Submit(ctx context.Context, o SubmitOptions) (*Submitted, error) {
	m, err := checkModule(ctx, o.Root, firstNonEmpty(o.Remote, o.Config.Remote, "origin"), o.Author)
	if err != nil {
		return nil, err
	}
	b := &Batch{
		ID: NewBatchID(time.Now()), Experiment: o.Experiment, Submitted: time.Now().UTC().Truncate(time.Second),
		Module: o.Root, Commit: m.commit, Remote: m.url, Rigor: firstNonEmpty(o.Config.Rigor, "rigor"), Author: m.author,
		KeepOutput: o.KeepOutput,
	}
	b.Branch = gitrepo.ResultsBranchPrefix + b.ID
	b.Dir = BatchDir(o.Root, b.ID)
	// One submission is one invocation: its rounds are shuffled as a local
	// run's (run.Order), and each task keeps its round and place.
	b.Invocation, b.Rounds = results.NewRunID(b.Submitted), max(o.Rounds, 1)
	if o.OrderSeed != nil {
		b.RoundsSeed = *o.OrderSeed
	} else if b.Rounds > 1 {
		// Below 2^53, as a local run's: JSON readers hold numbers as doubles.
		b.RoundsSeed = mrand.Uint64N(1 << 53)
	}
	for r := 1; r <= b.Rounds; r++ {
		for pos, pi := range run.Order(b.RoundsSeed, r, b.Rounds, len(o.Points)) {
			t := Task{Index: len(b.Tasks), Point: o.Points[pi], Round: r}
			if b.Rounds > 1 {
				t.Order = pos + 1
			}
			b.Tasks = append(b.Tasks, t)
		}
	}
	script := &Script{
		Name:      "rigor:" + o.Experiment,
		Partition: firstNonEmpty(o.Partition, o.Config.Partition),
		Account:   firstNonEmpty(o.Account, o.Config.Account),
		Time:      firstNonEmpty(o.Time, o.Config.Time),
		Tasks:     len(b.Tasks),
		Output:    b.OutputPattern(),
		Workdir:   NodeDir,
		Request:   o.Request,
		Extra:     append(append([]string(nil), o.Config.SbatchArgs...), o.SbatchArgs...),
	}
	if o.Config.Rigor == "" {
		if _, err := exec.LookPath("rigor"); err != nil {
			return nil, &HintError{Err: errors.New("rigor is not on this machine's PATH: the jobs run rigor from their PATH"),
				Hint: "put rigor on the PATH (here and on the nodes), or name its path on the nodes in " + ConfigFile + ": rigor: \"/opt/rigor/bin/rigor\""}
		}
	}
	// The job carries its batch: the nodes need not see this module.
	desc, err := json.Marshal(b)
	if err != nil {
		return nil, err
	}
	script.Command = []string{b.Rigor, "jobs", "task", string(desc)}
	if err := script.Check(); err != nil {
		return nil, &HintError{Err: err, Hint: "pass sbatch options whole, e.g. --sbatch-arg=--qos=bench"}
	}
	// Nothing Slurm cannot run is submitted: ask first.
	estimate, err := (&Client{}).TestOnly(ctx, script)
	if err != nil {
		return nil, err
	}
	// The jobs fetch the module from the remote at this commit, which
	// may exist only here: push it first.
	if err := gitrepo.PushCommit(ctx, o.Root, m.url, m.commit, b.SubmitRef()); err != nil {
		return nil, &HintError{Err: fmt.Errorf("nothing was submitted: pushing the commit the jobs run to %s: %w", m.remote, err),
			Hint: "the jobs fetch the module from the remote " + m.remote + " (" + b.SubmitRef() + "): check that this machine can push there"}
	}
	b.Args = script.Args()
	if err := b.Create(o.Root); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(b.Dir, "job.sh"), []byte(script.Render()), 0o644); err != nil {
		return nil, fmt.Errorf("writing the batch script: %w", err)
	}
	id, err := (&Client{}).Submit(ctx, script)
	if err != nil {
		os.RemoveAll(b.Dir)
		return nil, err
	}
	b.JobID = id
	if err := b.Save(); err != nil {
		return nil, fmt.Errorf("the jobs are submitted (Slurm job %s) but their batch was not saved: %w", id, err)
	}
	sub := &Submitted{Batch: b, Estimate: estimate, RemoteName: m.remote}
	// The batch on the remote too, so that rigor jobs works from any
	// clone.
	if data, err := json.MarshalIndent(b, "", "  "); err == nil {
		err = gitrepo.PushFile(ctx, o.Root, m.url, BatchRefPrefix+b.ID, "batch.json", append(data, '\n'), m.author)
		if err != nil {
			sub.Warning = fmt.Sprintf("the batch was not pushed to %s (%v): 'rigor jobs' shows it from this clone only", BatchRefPrefix+b.ID, err)
		}
	}
	return sub, nil
}

// module is what the jobs need of the module's git repository.
type module struct {
	commit, remote, url, author string
}

// checkModule checks that the jobs can clone what is committed and push
// their records: the module is a git repository, its inputs are
// committed, and the remote exists. It returns HEAD, the remote's name and
// URL, and the author of the jobs' commits.
func checkModule(ctx context.Context, root, remote, author string) (*module, error) {
	git := func(args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, "git", args...)
		cmd.Dir = root
		out, err := cmd.Output()
		return strings.TrimSpace(string(out)), err
	}
	if _, err := exec.LookPath("git"); err != nil {
		return nil, &HintError{Err: errors.New("--slurm needs git: each job clones the module and pushes its record"), Hint: "install git"}
	}
	m := &module{remote: remote, author: author}
	var err error
	m.commit, err = git("rev-parse", "--verify", "HEAD^{commit}")
	if err != nil {
		return nil, &HintError{Err: errors.New("the module is not a git repository with a commit: each Slurm job clones the module at HEAD"), Hint: "git init, then commit the experiments and lockfiles"}
	}
	dirty, _ := git(append([]string{"status", "--porcelain", "--"}, Inputs...)...)
	if dirty != "" {
		files := strings.Split(dirty, "\n")
		for i, f := range files {
			files[i] = strings.TrimSpace(f)
		}
		return nil, &HintError{Err: fmt.Errorf("uncommitted changes the jobs would not see: %s", strings.Join(files, ", ")),
			Hint: "each job clones the module at HEAD: commit them (git commit -a) and submit again"}
	}
	m.url, err = git("remote", "get-url", remote)
	if err != nil || m.url == "" {
		return nil, &HintError{Err: fmt.Errorf("the module has no git remote %q: the jobs push their records to it", remote),
			Hint: "git remote add " + remote + " URL (a bare repository on storage the nodes share will do), or --remote NAME"}
	}
	if !strings.Contains(m.url, "://") && !strings.Contains(m.url, "@") && !filepath.IsAbs(m.url) {
		m.url = filepath.Join(root, m.url) // a relative path is relative to the module
	}
	if m.author == "" {
		n, _ := git("config", "user.name")
		e, _ := git("config", "user.email")
		if n != "" && e != "" {
			m.author = n + " <" + e + ">"
		} else {
			m.author = gitrepo.DefaultAuthor
		}
	}
	return m, nil
}

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}
