package slurm

import (
	"bufio"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Job is one Slurm job or array task as scontrol, squeue or sacct report
// it.
type Job struct {
	// ID is the job id as users name it: "123", or "120_3" for an array
	// task ("120_[4-7]" for array tasks still pending together).
	ID string `json:"id"`
	// JobID is Slurm's own number of the job (an array task has its own).
	JobID string `json:"jobId,omitempty"`
	// ArrayJobID and ArrayTask are set for array tasks; ArrayTask may be
	// a range ("4-7") for tasks still pending as one record.
	ArrayJobID string `json:"arrayJobId,omitempty"`
	ArrayTask  string `json:"arrayTask,omitempty"`
	Name       string `json:"name,omitempty"`
	// State is Slurm's job state: PENDING, RUNNING, COMPLETED, FAILED,
	// CANCELLED, TIMEOUT, NODE_FAIL, OUT_OF_MEMORY, …
	State string `json:"state"`
	// Reason is why a job waits or ended ("Resources", "NonZeroExitCode").
	Reason string `json:"reason,omitempty"`
	// ExitCode and Signal are the batch script's exit status.
	ExitCode int    `json:"exitCode"`
	Signal   int    `json:"signal,omitempty"`
	Nodes    string `json:"nodes,omitempty"`
	// Partition is the partition the job was given.
	Partition string `json:"partition,omitempty"`
	StdOut    string `json:"stdout,omitempty"`
}

// Terminal reports whether the job has ended.
func (j Job) Terminal() bool { return TerminalState(j.State) }

// TerminalState reports whether a Slurm job state is final.
func TerminalState(s string) bool {
	switch s {
	case "PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "REQUEUED", "REQUEUE_FED", "REQUEUE_HOLD",
		"RESIZING", "SUSPENDED", "STOPPED", "SIGNALING", "STAGE_OUT", "RESV_DEL_HOLD", "":
		return false
	}
	return true
}

// Tasks returns the array task indices the job stands for: one for a
// task, several for a pending range ("4-7", "1,3,5-6%2"), none for a job
// outside an array.
func (j Job) Tasks() []int {
	if j.ArrayTask == "" {
		return nil
	}
	s, _, _ := strings.Cut(j.ArrayTask, "%")
	var out []int
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			continue
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil {
				continue
			}
		}
		for i := a; i <= b; i++ {
			out = append(out, i)
		}
	}
	return out
}

// scontrolKey finds the start of each Key= of a `scontrol show job -o`
// line. Values may hold spaces (a reason, a path), keys never do.
var scontrolKey = regexp.MustCompile(`(?:^| )([A-Za-z][A-Za-z0-9_/:]*)=`)

// parseKV splits one line of `scontrol show job -o` into its fields.
func parseKV(line string) map[string]string {
	out := map[string]string{}
	locs := scontrolKey.FindAllStringSubmatchIndex(line, -1)
	for i, loc := range locs {
		key := line[loc[2]:loc[3]]
		end := len(line)
		if i+1 < len(locs) {
			end = locs[i+1][0]
		}
		out[key] = strings.TrimSpace(line[loc[1]:end])
	}
	return out
}

// ParseScontrol parses the output of `scontrol show job -o ID…`: one line
// per job or array task.
func ParseScontrol(out string) ([]Job, error) {
	var jobs []Job
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		kv := parseKV(line)
		id, ok := kv["JobId"]
		if !ok {
			return nil, fmt.Errorf("scontrol output line %d: no JobId= in %q", n, cutText(line, 80))
		}
		j := Job{
			ID: id, JobID: id, Name: kv["JobName"], State: kv["JobState"], Reason: kv["Reason"],
			Nodes: nullable(kv["NodeList"]), Partition: kv["Partition"], StdOut: kv["StdOut"],
			ArrayJobID: kv["ArrayJobId"], ArrayTask: kv["ArrayTaskId"],
		}
		if j.ArrayJobID != "" {
			j.ID = j.ArrayJobID + "_" + j.ArrayTask
			if strings.ContainsAny(j.ArrayTask, "-,") {
				j.ID = j.ArrayJobID + "_[" + j.ArrayTask + "]"
			}
		}
		if j.Reason == "None" {
			j.Reason = ""
		}
		code, sig, _ := strings.Cut(kv["ExitCode"], ":")
		j.ExitCode, _ = strconv.Atoi(code)
		j.Signal, _ = strconv.Atoi(sig)
		jobs = append(jobs, j)
	}
	return jobs, sc.Err()
}

// SqueueFormat is the -o format [ParseSqueue] reads: id, name, state,
// reason, and the job's comment.
const SqueueFormat = "%i|%j|%T|%r|%k"

// ParseSqueue parses `squeue -h -o SqueueFormat` output.
func ParseSqueue(out string) ([]Job, error) {
	var jobs []Job
	for n, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		f := strings.SplitN(line, "|", 5)
		if len(f) < 4 {
			return nil, fmt.Errorf("squeue output line %d: want id|name|state|reason, got %q", n+1, cutText(line, 80))
		}
		j := Job{ID: f[0], JobID: f[0], Name: f[1], State: f[2], Reason: f[3]}
		if a, t, ok := strings.Cut(f[0], "_"); ok {
			j.ArrayJobID, j.ArrayTask = a, strings.Trim(t, "[]")
			j.JobID = ""
		}
		if j.Reason == "None" {
			j.Reason = ""
		}
		jobs = append(jobs, j)
	}
	return jobs, nil
}

// SacctFields are the --format fields [ParseSacct] reads (with -P -n).
const SacctFields = "JobID,JobName,State,ExitCode,NodeList,Partition"

// ParseSacct parses `sacct -P -n --format=SacctFields` output, keeping the
// job allocations and leaving out their steps (123.batch, 123.0).
func ParseSacct(out string) ([]Job, error) {
	var jobs []Job
	for n, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		f := strings.Split(line, "|")
		if len(f) < 4 {
			return nil, fmt.Errorf("sacct output line %d: want %s, got %q", n+1, SacctFields, cutText(line, 80))
		}
		if strings.Contains(f[0], ".") {
			continue // a step
		}
		// "CANCELLED by 0": the state is the first word.
		state, _, _ := strings.Cut(f[2], " ")
		j := Job{ID: f[0], JobID: f[0], Name: f[1], State: strings.TrimSuffix(state, "+")}
		if a, t, ok := strings.Cut(f[0], "_"); ok {
			j.ArrayJobID, j.ArrayTask = a, strings.Trim(t, "[]")
			j.JobID = ""
		}
		code, sig, _ := strings.Cut(f[3], ":")
		j.ExitCode, _ = strconv.Atoi(code)
		j.Signal, _ = strconv.Atoi(sig)
		if len(f) > 4 {
			j.Nodes = nullable(f[4])
		}
		if len(f) > 5 {
			j.Partition = f[5]
		}
		jobs = append(jobs, j)
	}
	return jobs, nil
}

func nullable(s string) string {
	if s == "(null)" || s == "None assigned" {
		return ""
	}
	return s
}

func cutText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
