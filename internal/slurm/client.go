package slurm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"
)

// ErrNotInstalled is returned when sbatch (or another Slurm client) is not
// on PATH.
var ErrNotInstalled = errors.New("the Slurm client tools (sbatch, scontrol, scancel) are not installed")

// RefusedError is a submission sbatch --test-only refused: Slurm cannot
// meet the request. Reason is Slurm's own words.
type RefusedError struct {
	Args   []string
	Reason string
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("slurm refuses the job (%s): %s", strings.Join(e.Args, " "), e.Reason)
}

// Client runs the Slurm client tools. The zero value uses them from PATH.
type Client struct {
	// Timeout bounds each command: with slurmctld down they block for
	// MessageTimeout and more. Default 60s.
	Timeout time.Duration
}

func (c *Client) command(ctx context.Context, name string, args []string, stdin string) (string, string, error) {
	if _, err := exec.LookPath(name); err != nil {
		return "", "", ErrNotInstalled
	}
	t := c.Timeout
	if t == 0 {
		t = 60 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, t)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	err := cmd.Run()
	if ctx.Err() == context.DeadlineExceeded {
		err = fmt.Errorf("%s did not answer within %s (is slurmctld running?)", name, t)
	}
	return stdout.String(), stderr.String(), err
}

// TestOnly asks Slurm whether it could run the script, without submitting
// it (sbatch --test-only). A request Slurm cannot meet is a
// [*RefusedError]; on success it returns Slurm's estimate ("Job 12 to start
// at … using 1 processors on nodes n1 in partition debug").
func (c *Client) TestOnly(ctx context.Context, s *Script) (string, error) {
	if err := s.Check(); err != nil {
		return "", err
	}
	_, stderr, err := c.command(ctx, "sbatch", []string{"--test-only"}, s.Render())
	msg := slurmMessage(stderr)
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return "", &RefusedError{Args: s.Args(), Reason: msg}
		}
		return "", fmt.Errorf("sbatch --test-only: %w", err)
	}
	return msg, nil
}

// Submit submits the script and returns its job id (the array's id for an
// array).
func (c *Client) Submit(ctx context.Context, s *Script) (string, error) {
	if err := s.Check(); err != nil {
		return "", err
	}
	stdout, stderr, err := c.command(ctx, "sbatch", []string{"--parsable"}, s.Render())
	if err != nil {
		if msg := slurmMessage(stderr); msg != "" {
			return "", fmt.Errorf("sbatch: %s", msg)
		}
		return "", fmt.Errorf("sbatch: %w", err)
	}
	// --parsable prints "id" or "id;cluster".
	id, _, _ := strings.Cut(strings.TrimSpace(stdout), ";")
	if id == "" {
		return "", fmt.Errorf("sbatch printed no job id (stderr: %s)", slurmMessage(stderr))
	}
	return id, nil
}

// Jobs returns what scontrol knows of the jobs ids (array ids give every
// task). An id Slurm has forgotten (finished longer ago than MinJobAge) is
// looked up with sacct where accounting is on; otherwise it is missing from
// the result.
func (c *Client) Jobs(ctx context.Context, ids []string) ([]Job, error) {
	var out []Job
	var forgotten []string
	for _, id := range ids {
		stdout, stderr, err := c.command(ctx, "scontrol", []string{"show", "job", "-o", id}, "")
		if err != nil {
			if strings.Contains(stderr, "Invalid job id") {
				forgotten = append(forgotten, id)
				continue
			}
			if msg := slurmMessage(stderr); msg != "" {
				return nil, fmt.Errorf("scontrol show job %s: %s", id, msg)
			}
			return nil, fmt.Errorf("scontrol show job %s: %w", id, err)
		}
		jobs, err := ParseScontrol(stdout)
		if err != nil {
			return nil, err
		}
		out = append(out, jobs...)
	}
	if len(forgotten) > 0 {
		stdout, _, err := c.command(ctx, "sacct", []string{"-P", "-n", "-X", "--format=" + SacctFields, "-j", strings.Join(forgotten, ",")}, "")
		if err == nil {
			if jobs, err := ParseSacct(stdout); err == nil {
				out = append(out, jobs...)
			}
		}
	}
	return out, nil
}

// Cancel cancels jobs (scancel); array ids cancel every task.
func (c *Client) Cancel(ctx context.Context, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	_, stderr, err := c.command(ctx, "scancel", ids, "")
	if err != nil {
		if msg := slurmMessage(stderr); msg != "" {
			return fmt.Errorf("scancel: %s", msg)
		}
		return fmt.Errorf("scancel: %w", err)
	}
	return nil
}

// slurmMessage is the client's stderr without its "sbatch: error: " and
// "allocation failure: " prefixes, on one line.
func slurmMessage(stderr string) string {
	var parts []string
	for _, line := range strings.Split(stderr, "\n") {
		line = strings.TrimSpace(line)
		for _, p := range []string{"sbatch: error: ", "sbatch: ", "scancel: error: ", "scontrol: error: ", "allocation failure: "} {
			line = strings.TrimPrefix(line, p)
		}
		if line != "" {
			parts = append(parts, line)
		}
	}
	return strings.Join(parts, "; ")
}
