package cli

import (
	"context"
	"errors"
	"fmt"
	"text/tabwriter"
	"time"

	cueerrors "cuelang.org/go/cue/errors"

	"github.com/rigorbench/rigor/internal/slurm"
	"github.com/rigorbench/rigor/internal/spec"
)

// slurmFlags are rigor run's options for handing the runs to Slurm
// (issue 17). They are embedded in runCmd.
type slurmFlags struct {
	Slurm      bool     `help:"Submit one Slurm job per point and round instead of running here; the jobs push their records to the module's remote ('rigor jobs', 'rigor results sync')." group:"Slurm"`
	Partition  string   `help:"Slurm partition (default: slurm.cue's partition, else the cluster's default)." group:"Slurm" env:"RIGOR_SLURM_PARTITION"`
	Account    string   `help:"Slurm account to charge (default: slurm.cue's account)." group:"Slurm" env:"RIGOR_SLURM_ACCOUNT"`
	Time       string   `help:"Time limit of each job, as sbatch takes it (e.g. 30, 1:30:00; default: slurm.cue's time)." group:"Slurm" env:"RIGOR_SLURM_TIME"`
	SbatchArg  []string `name:"sbatch-arg" sep:"none" placeholder:"OPTION" help:"Pass OPTION to sbatch as it is (repeatable), e.g. --sbatch-arg=--qos=bench." group:"Slurm"`
	Rounds     int      `default:"1" placeholder:"K" help:"Run every listed experiment or point K times, in rounds: each round runs each once, in an order shuffled per round (with --slurm: one job per point and round, rounds interleaved)."`
	Remote     string   `help:"The git remote the jobs push their records to (default: slurm.cue's remote, else origin)." group:"Slurm"`
	KeepOutput bool     `help:"Keep each job's output file on its node (/tmp/rigor-<batch>-<job>.out) when its record is published ok; without it the job removes it (a failed job's output is kept 7 days either way)." group:"Slurm"`
}

func (c *runCmd) submitSlurm(e *env) error {
	if c.DryRun || c.IgnoreRequires || c.NoCommit || c.Offline || c.Verify || c.Timeout != 0 {
		return withHint(errors.New("--slurm takes --partition, --account, --time, --sbatch-arg, --rounds, --order-seed, --remote, --keep-output and --json; the other options of run apply to a run on this machine"),
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
	// One job per point and round: as many as a run here would start.
	if err := c.confirmSize(e, []*runExperiment{{x: x, points: points}}, nil); err != nil {
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

	var ids []string
	for _, p := range points {
		ids = append(ids, p.ID)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sub, err := slurm.Submit(ctx, slurm.SubmitOptions{
		Root: root, Experiment: x.ID, Points: ids, Rounds: c.Rounds, OrderSeed: c.OrderSeed, Config: cfg, Request: *req,
		Partition: c.Partition, Account: c.Account, Time: c.Time, SbatchArgs: c.SbatchArg,
		Remote: c.Remote, Author: e.cfg().GitAuthor, KeepOutput: c.KeepOutput,
	})
	var he *slurm.HintError
	if errors.As(err, &he) {
		return withHint(err, he.Hint)
	}
	if err != nil {
		return explainSlurm(err, x)
	}
	b, estimate, remoteName, id := sub.Batch, sub.Estimate, sub.RemoteName, sub.Batch.JobID
	fmt.Fprintf(e.stderr, "rigor: slurm: %s\n", estimate)
	if sub.Warning != "" {
		fmt.Fprintf(e.stderr, "rigor: warning: %s\n", sub.Warning)
	}
	fmt.Fprintf(e.stderr, "rigor: submitted %s: %d %s (%d %s × %d %s) as Slurm job %s; records go to %s of %s\n",
		x.ID, len(b.Tasks), plural(len(b.Tasks), "job", "jobs"), len(points), plural(len(points), "point", "points"),
		c.Rounds, plural(c.Rounds, "round", "rounds"), id, b.Branch, remoteName)
	if b.Rounds > 1 {
		fmt.Fprintf(e.stderr, "rigor: %d rounds of invocation %s (order seed %d): each round's jobs are in an order shuffled from it, and 'rigor diff' pairs them by round\n", b.Rounds, b.Invocation, b.RoundsSeed)
	}
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

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}
