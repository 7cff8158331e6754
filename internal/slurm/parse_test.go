package slurm

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func readTestdata(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The inputs are outputs of Slurm 22.05.8 (Debian 12), recorded on the
// single-node cluster of scripts/ci-slurm.sh.
func TestParseScontrol(t *testing.T) {
	check := func(file string, want []Job) {
		t.Helper()
		got, err := ParseScontrol(readTestdata(t, file))
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\ngot  %+v\nwant %+v", file, got, want)
		}
	}
	dir := "/m/.rigor/slurm/b1/"
	// An array of three tasks that exit with their index.
	check("scontrol-array.txt", []Job{
		{ID: "9_2", JobID: "9", ArrayJobID: "9", ArrayTask: "2", Name: "wrap", State: "FAILED", Reason: "NonZeroExitCode", ExitCode: 2, Nodes: "localhost", Partition: "debug", StdOut: dir + "9_2.out"},
		{ID: "9_1", JobID: "15", ArrayJobID: "9", ArrayTask: "1", Name: "wrap", State: "FAILED", Reason: "NonZeroExitCode", ExitCode: 1, Nodes: "localhost", Partition: "debug", StdOut: dir + "9_1.out"},
		{ID: "9_0", JobID: "14", ArrayJobID: "9", ArrayTask: "0", Name: "wrap", State: "COMPLETED", ExitCode: 0, Nodes: "localhost", Partition: "debug", StdOut: dir + "9_0.out"},
	})
	// A batch script that killed itself with SIGKILL.
	check("scontrol-killed.txt", []Job{{ID: "10", JobID: "10", Name: "wrap", State: "FAILED", Reason: "JobLaunchFailure", Signal: 9, Nodes: "localhost", Partition: "debug", StdOut: dir + "f.out"}})
	// scancel of a running job.
	check("scontrol-cancelled.txt", []Job{{ID: "11", JobID: "11", Name: "wrap", State: "CANCELLED", Signal: 15, Nodes: "localhost", Partition: "debug", StdOut: dir + "c.out"}})
	// Waiting for GPUs another job holds.
	check("scontrol-pending.txt", []Job{{ID: "13", JobID: "13", Name: "wrap", State: "PENDING", Reason: "Resources", Partition: "debug", StdOut: dir + "p.out"}})
}

func TestParseScontrol_error(t *testing.T) {
	if _, err := ParseScontrol("Slurm accounting storage is disabled\n"); err == nil {
		t.Error("got no error for a line without JobId=")
	}
}

func TestJob_Tasks(t *testing.T) {
	for _, tc := range []struct {
		task string
		want []int
	}{{"", nil}, {"3", []int{3}}, {"4-6", []int{4, 5, 6}}, {"1,3,5-6%2", []int{1, 3, 5, 6}}} {
		if got := (Job{ArrayTask: tc.task}).Tasks(); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Tasks(%q) = %v, want %v", tc.task, got, tc.want)
		}
	}
}

func TestParseSqueue(t *testing.T) {
	got, err := ParseSqueue(readTestdata(t, "squeue.txt"))
	if err != nil {
		t.Fatal(err)
	}
	want := []Job{
		{ID: "9_2", ArrayJobID: "9", ArrayTask: "2", Name: "wrap", State: "PENDING", Reason: "Resources"},
		{ID: "10", JobID: "10", Name: "wrap", State: "PENDING", Reason: "Priority"},
		{ID: "11", JobID: "11", Name: "wrap", State: "PENDING", Reason: "Priority"},
		{ID: "12", JobID: "12", Name: "wrap", State: "PENDING", Reason: "Priority"},
		{ID: "13", JobID: "13", Name: "wrap", State: "PENDING", Reason: "Priority"},
		{ID: "9_0", ArrayJobID: "9", ArrayTask: "0", Name: "wrap", State: "RUNNING"},
		{ID: "9_1", ArrayJobID: "9", ArrayTask: "1", Name: "wrap", State: "RUNNING"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
	if _, err := ParseSqueue("12 wrap RUNNING\n"); err == nil {
		t.Error("got no error for a line in another format")
	}
}

// sacct.txt and sacct-X.txt are real output of Slurm 22.05.8 with
// accounting on (slurmdbd and MariaDB, Debian 12), from the two-node
// cluster of scripts/ci-slurm.sh with AccountingStorageType=
// accounting_storage/slurmdbd, captured on 2026-12-02 with
//
//	sacct -P -n [-X] --format=JobID,JobName,State,ExitCode,NodeList,Partition -j IDS
//
// after: an array of three tasks exiting with their index (449); a job
// that killed itself with SIGKILL (450); a job cancelled while pending and
// one cancelled before it started (451, 452); a time limit (453, --time=1);
// a job cancelled on n2 (454) and one on n1 (457); a job on n2 whose slurmd
// was killed (458, --no-requeue: NODE_FAIL). Steps (.batch) have no
// partition, and a step of a lost node no exit code.
func TestParseSacct(t *testing.T) {
	want := []Job{
		{ID: "450", JobID: "450", Name: "wrap", State: "FAILED", Signal: 9, Nodes: "n1", Partition: "debug"},
		{ID: "451", JobID: "451", Name: "wrap", State: "CANCELLED", Partition: "debug"},
		{ID: "452", JobID: "452", Name: "wrap", State: "CANCELLED", Partition: "debug"},
		{ID: "453", JobID: "453", Name: "wrap", State: "TIMEOUT", Nodes: "n1", Partition: "debug"},
		{ID: "454", JobID: "454", Name: "wrap", State: "CANCELLED", Nodes: "n2", Partition: "debug"},
		{ID: "449_0", ArrayJobID: "449", ArrayTask: "0", Name: "wrap", State: "COMPLETED", Nodes: "n1", Partition: "debug"},
		{ID: "449_1", ArrayJobID: "449", ArrayTask: "1", Name: "wrap", State: "FAILED", ExitCode: 1, Nodes: "n1", Partition: "debug"},
		{ID: "449_2", ArrayJobID: "449", ArrayTask: "2", Name: "wrap", State: "FAILED", ExitCode: 2, Nodes: "n1", Partition: "debug"},
		{ID: "457", JobID: "457", Name: "wrap", State: "CANCELLED", Nodes: "n1", Partition: "debug"},
		{ID: "458", JobID: "458", Name: "wrap", State: "NODE_FAIL", Nodes: "n2", Partition: "debug"},
	}
	for _, file := range []string{"sacct.txt", "sacct-X.txt"} {
		got, err := ParseSacct(readTestdata(t, file))
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\ngot  %+v\nwant %+v", file, got, want)
		}
	}
	// The states map to what rigor jobs records.
	for state, status := range map[string]string{"COMPLETED": "failed", "FAILED": "failed", "CANCELLED": "interrupted", "TIMEOUT": "timeout", "NODE_FAIL": "crashed"} {
		if got := slurmStatus(state); got != status {
			t.Errorf("slurmStatus(%s) = %s, want %s", state, got, status)
		}
	}
	if _, err := ParseSacct("449_0 wrap COMPLETED\n"); err == nil {
		t.Error("got no error for a line in another format")
	}
}

func TestTerminalState(t *testing.T) {
	for s, want := range map[string]bool{"PENDING": false, "RUNNING": false, "COMPLETING": false,
		"COMPLETED": true, "FAILED": true, "CANCELLED": true, "TIMEOUT": true, "NODE_FAIL": true, "OUT_OF_MEMORY": true} {
		if got := TerminalState(s); got != want {
			t.Errorf("TerminalState(%s) = %v, want %v", s, got, want)
		}
	}
}
