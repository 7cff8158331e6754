package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	cueerrors "cuelang.org/go/cue/errors"

	"github.com/rigorbench/rigor/internal/gitrepo"
	"github.com/rigorbench/rigor/internal/slurm"
	"github.com/rigorbench/rigor/internal/spec"
)

// slurmFlags are rigor run's options for handing the runs to Slurm
// (issue 17). They are embedded in runCmd.
type slurmFlags struct {
	Slurm     bool     `help:"Submit one Slurm job per point and round instead of running here; the jobs push their records to the module's remote ('rigor jobs', 'rigor results sync')." group:"Slurm"`
	Partition string   `help:"Slurm partition (default: slurm.cue's partition, else the cluster's default)." group:"Slurm" env:"RIGOR_SLURM_PARTITION"`
	Account   string   `help:"Slurm account to charge (default: slurm.cue's account)." group:"Slurm" env:"RIGOR_SLURM_ACCOUNT"`
	Time      string   `help:"Time limit of each job, as sbatch takes it (e.g. 30, 1:30:00; default: slurm.cue's time)." group:"Slurm" env:"RIGOR_SLURM_TIME"`
	SbatchArg []string `name:"sbatch-arg" sep:"none" placeholder:"OPTION" help:"Pass OPTION to sbatch as it is (repeatable), e.g. --sbatch-arg=--qos=bench." group:"Slurm"`
	Rounds    int      `default:"1" placeholder:"K" help:"Run every listed experiment or point K times, in rounds: each round runs each once, in an order shuffled per round (with --slurm: one job per point and round, rounds interleaved)."`
	Remote    string   `help:"The git remote the jobs push their records to (default: slurm.cue's remote, else origin)." group:"Slurm"`
}

// slurmInputs are the module paths whose committed state the jobs run:
// they must be committed, since each job clones the module at HEAD.
var slurmInputs = []string{spec.ExperimentsDir, "lockfiles", "cue.mod", "patches", slurm.ConfigFile}

func (c *runCmd) submitSlurm(e *env) error {
	if c.DryRun || c.IgnoreRequires || c.NoCommit || c.Offline || c.Timeout != 0 {
		return withHint(errors.New("--slurm takes --partition, --account, --time, --sbatch-arg, --rounds, --remote and --json; the other options of run apply to a run on this machine"),
			"set the experiment's timeoutSeconds, or pass a time limit with --time")
	}
	if c.Rounds < 1 {
		return fmt.Errorf("--rounds=%d: want 1 or more", c.Rounds)
	}
	if len(c.IDs) > 1 {
		return withHint(errors.New("--slurm submits one experiment or point at a time"), "submit each id on its own")
	}
	set, x, points, _, err := e.lockedExperiment(c.IDs[0], true)
	if err != nil {
		return err
	}
	root := set.Root
	cfg, err := slurm.LoadConfig(root)
	if err != nil {
		var ce *slurm.ConfigError
		if errors.As(err, &ce) {
			fmt.Fprintf(e.stderr, "rigor: error: %s does not fit its schema:\n", slurm.ConfigFile)
			cueerrors.Print(e.stderr, ce.Err, &cueerrors.Config{Cwd: e.wd, ToSlash: true})
			return withHint(quietError{code: 1}, "README.md (Slurm) shows what slurm.cue holds")
		}
		return err
	}
	req, err := slurm.FromRequires(x.Requires, cfg)
	if err != nil {
		var ue *slurm.UnmetError
		if errors.As(err, &ue) {
			return withHint(fmt.Errorf("%s: %w", spec.FormatPos(ue.Pos, e.wd), err),
				"nothing was submitted; declare the feature of the nodes that have it in "+slurm.ConfigFile+" (features: NAME: {gpu: name: ...}), or change #requires")
		}
		return err
	}
	for _, n := range req.NodeOnly {
		fmt.Fprintf(e.stderr, "rigor: warning: #requires.%s is not mapped to a Slurm feature in %s: each job checks it on its node (and records a failed run where it is not met)\n", n, slurm.ConfigFile)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	commit, remoteName, remoteURL, author, err := slurmGit(ctx, root, c.Remote, cfg.Remote)
	if err != nil {
		return err
	}
	rigorPath, err := selfPath()
	if err != nil {
		return err
	}

	b := &slurm.Batch{
		ID: slurm.NewBatchID(time.Now()), Experiment: x.ID, Submitted: time.Now().UTC().Truncate(time.Second),
		Module: root, Commit: commit, Remote: remoteURL, Rigor: rigorPath, Author: author,
	}
	b.Branch = gitrepo.ResultsBranchPrefix + b.ID
	b.Dir = slurm.BatchDir(root, b.ID)
	for r := 1; r <= c.Rounds; r++ {
		for _, p := range points {
			b.Tasks = append(b.Tasks, slurm.Task{Index: len(b.Tasks), Point: p.ID, Round: r})
		}
	}
	script := &slurm.Script{
		Name:      "rigor:" + x.ID,
		Partition: firstNonEmpty(c.Partition, cfg.Partition),
		Account:   firstNonEmpty(c.Account, cfg.Account),
		Time:      firstNonEmpty(c.Time, cfg.Time),
		Tasks:     len(b.Tasks),
		Output:    b.OutputPattern(),
		Workdir:   root,
		Request:   *req,
		Extra:     append(append([]string(nil), cfg.SbatchArgs...), c.SbatchArg...),
		Command:   []string{rigorPath, "jobs", "task", b.Dir},
	}
	if err := script.Check(); err != nil {
		return withHint(err, "pass sbatch options whole, e.g. --sbatch-arg=--qos=bench")
	}
	// Nothing Slurm cannot run is submitted: ask first.
	estimate, err := (&slurm.Client{}).TestOnly(ctx, script)
	if err != nil {
		return explainSlurm(err, x)
	}
	b.Args = script.Args()
	if err := b.Create(root); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(b.Dir, "job.sh"), []byte(script.Render()), 0o644); err != nil {
		return fmt.Errorf("writing the batch script: %w", err)
	}
	id, err := (&slurm.Client{}).Submit(ctx, script)
	if err != nil {
		os.RemoveAll(b.Dir)
		return explainSlurm(err, x)
	}
	b.JobID = id
	if err := b.Save(); err != nil {
		return fmt.Errorf("the jobs are submitted (Slurm job %s) but their batch was not saved: %w", id, err)
	}
	fmt.Fprintf(e.stderr, "rigor: slurm: %s\n", estimate)
	fmt.Fprintf(e.stderr, "rigor: submitted %s: %d %s (%d %s × %d %s) as Slurm job %s; records go to %s of %s\n",
		x.ID, len(b.Tasks), plural(len(b.Tasks), "job", "jobs"), len(points), plural(len(points), "point", "points"),
		c.Rounds, plural(c.Rounds, "round", "rounds"), id, b.Branch, remoteName)
	fmt.Fprintf(e.stderr, "rigor: hint: 'rigor jobs' shows them, 'rigor jobs --wait' waits for them, 'rigor results sync' merges their records, 'rigor jobs cancel %s' cancels them\n", b.ID)
	if c.JSON {
		return e.printJSON(b)
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "JOB\tPOINT\tROUND\tBATCH")
	for _, t := range b.Tasks {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", b.JobIDOf(t.Index), t.Point, t.Round, b.ID)
	}
	return tw.Flush()
}

// explainSlurm adds hints to a Slurm error.
func explainSlurm(err error, x *spec.Experiment) error {
	var re *slurm.RefusedError
	switch {
	case errors.Is(err, slurm.ErrNotInstalled):
		return withHint(err, "install Slurm's client tools (Debian: apt-get install slurm-client) on this machine, or run here without --slurm")
	case errors.As(err, &re):
		what := "the experiment's #requires"
		if x != nil {
			what = "the #requires of " + x.ID
		}
		return withHint(fmt.Errorf("nothing was submitted: %w", err),
			"the request comes from "+what+" and "+slurm.ConfigFile+"; 'sinfo -o \"%N %G %f %m %c\"' lists what the nodes have")
	}
	return err
}

// slurmGit checks that the jobs can clone what is committed and push their
// records: the module is a git repository, its inputs are committed, and
// the remote exists. It returns HEAD, the remote's name and URL, and the
// author of the jobs' commits.
func slurmGit(ctx context.Context, root, flagRemote, cfgRemote string) (commit, name, url, author string, err error) {
	git := func(args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, "git", args...)
		cmd.Dir = root
		out, err := cmd.Output()
		return strings.TrimSpace(string(out)), err
	}
	if _, err := exec.LookPath("git"); err != nil {
		return "", "", "", "", withHint(errors.New("--slurm needs git: each job clones the module and pushes its record"), "install git")
	}
	commit, err = git("rev-parse", "--verify", "HEAD^{commit}")
	if err != nil {
		return "", "", "", "", withHint(errors.New("the module is not a git repository with a commit: each Slurm job clones the module at HEAD"), "git init, then commit the experiments and lockfiles")
	}
	dirty, _ := git(append([]string{"status", "--porcelain", "--"}, slurmInputs...)...)
	if dirty != "" {
		files := strings.Split(dirty, "\n")
		for i, f := range files {
			files[i] = strings.TrimSpace(f)
		}
		return "", "", "", "", withHint(fmt.Errorf("uncommitted changes the jobs would not see: %s", strings.Join(files, ", ")),
			"each job clones the module at HEAD: commit them (git commit -a) and submit again")
	}
	name = firstNonEmpty(flagRemote, cfgRemote, "origin")
	url, err = git("remote", "get-url", name)
	if err != nil || url == "" {
		return "", "", "", "", withHint(fmt.Errorf("the module has no git remote %q: the jobs push their records to it", name),
			"git remote add "+name+" URL (a bare repository on storage the nodes share will do), or --remote NAME")
	}
	if !strings.Contains(url, "://") && !strings.Contains(url, "@") && !filepath.IsAbs(url) {
		url = filepath.Join(root, url) // a relative path is relative to the module
	}
	author = strings.TrimSpace(os.Getenv(gitrepo.AuthorEnv))
	if author == "" {
		n, _ := git("config", "user.name")
		m, _ := git("config", "user.email")
		if n != "" && m != "" {
			author = n + " <" + m + ">"
		} else {
			author = gitrepo.DefaultAuthor
		}
	}
	return commit, name, url, author, nil
}

// selfPath is the path of this rigor executable as the jobs should run it:
// os.Args[0] made absolute (not os.Executable, which resolves the symlink
// a test harness or package manager puts in front of it).
func selfPath() (string, error) {
	a := os.Args[0]
	if !strings.Contains(a, string(os.PathSeparator)) {
		p, err := exec.LookPath(a)
		if err != nil {
			return os.Executable()
		}
		a = p
	}
	return filepath.Abs(a)
}

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}
