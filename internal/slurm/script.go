package slurm

import (
	"errors"
	"fmt"
	"strings"
)

// Script is one sbatch submission: a job, or an array of Tasks jobs, each
// running Command with its task index appended.
type Script struct {
	// Name is the job name (--job-name).
	Name      string
	Partition string
	Account   string
	// Time is the time limit in any format sbatch takes (--time).
	Time string
	// Tasks is the number of array tasks; 1 or less submits one job.
	Tasks int
	// Output is the path of the job's stdout and stderr; %A, %a, %j as
	// sbatch expands them.
	Output  string
	Request Request
	// Extra holds further sbatch options as the user wrote them
	// (--sbatch-arg, sbatchArgs of slurm.cue), passed last so they win.
	Extra []string
	// Workdir is the job's working directory (--chdir).
	Workdir string
	// Command is the argv each task runs; the task index
	// ($SLURM_ARRAY_TASK_ID, 0 without an array) is appended.
	Command []string
}

// Args returns the script's sbatch options, in a fixed order.
func (s *Script) Args() []string {
	var out []string
	if s.Name != "" {
		out = append(out, "--job-name="+s.Name)
	}
	if s.Partition != "" {
		out = append(out, "--partition="+s.Partition)
	}
	if s.Account != "" {
		out = append(out, "--account="+s.Account)
	}
	if s.Time != "" {
		out = append(out, "--time="+s.Time)
	}
	if s.Tasks > 1 {
		out = append(out, fmt.Sprintf("--array=0-%d", s.Tasks-1))
	}
	if s.Output != "" {
		out = append(out, "--output="+s.Output)
	}
	// A job Slurm fails with its node is recorded from Slurm's account
	// (rigor jobs); run again it would measure a second time under the
	// same record. Slurm requeues such jobs by default.
	out = append(out, "--no-requeue")
	if s.Workdir != "" {
		out = append(out, "--chdir="+s.Workdir)
	}
	out = append(out, s.Request.Args()...)
	return append(out, s.Extra...)
}

// Check reports options that cannot go on an #SBATCH line: sbatch reads
// one option per line and stops at the first line that is not a comment.
func (s *Script) Check() error {
	for _, a := range s.Args() {
		if !strings.HasPrefix(a, "-") {
			return fmt.Errorf("sbatch option %q: options start with - (e.g. --qos=high)", a)
		}
		if strings.ContainsAny(a, "\n\r") {
			return fmt.Errorf("sbatch option %q: a line break is not allowed", a)
		}
	}
	if len(s.Command) == 0 {
		return errors.New("the job has no command")
	}
	return nil
}

// Render returns the batch script: a POSIX shell script whose #SBATCH
// lines carry [Script.Args] and whose body runs Command with the task
// index. The command is quoted for the shell word by word; nothing the
// user wrote is interpreted by it.
func (s *Script) Render() string {
	var b strings.Builder
	b.WriteString("#!/bin/sh\n")
	b.WriteString("# Written by rigor: one job per point and round (rigor jobs lists them).\n")
	for _, a := range s.Args() {
		b.WriteString("#SBATCH ")
		b.WriteString(a)
		b.WriteByte('\n')
	}
	b.WriteString("exec")
	for _, w := range s.Command {
		b.WriteByte(' ')
		b.WriteString(shellQuote(w))
	}
	b.WriteString(` "${SLURM_ARRAY_TASK_ID:-0}"` + "\n")
	return b.String()
}

// shellQuote quotes w for a POSIX shell, leaving plain words as they are.
func shellQuote(w string) string {
	if w != "" && strings.Trim(w, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:@,+%") == "" {
		return w
	}
	return "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
}
