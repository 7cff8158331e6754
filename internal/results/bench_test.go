//go:build unix

package results

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"
)

// fillStore writes n realistic records (the shape of testRun, about 3 KB
// each) spread over experiments, the way a results repository grows:
// written directly, without Write's fsyncs, to keep the setup short.
func fillStore(tb testing.TB, s *Store, n, experiments int) []string {
	tb.Helper()
	paths := make([]string, 0, n)
	for i := range n {
		exp := fmt.Sprintf("bench/e%03d", i%experiments)
		start := t0.Add(time.Duration(i) * time.Minute)
		r := testRun(NewRunID(start), exp, start, 50+float64(i%7)/10, 50.2, 49.9)
		r.ID = fmt.Sprintf("%s-%05d", start.Format("20060102T150405Z"), i)
		data, err := Encode(r)
		if err != nil {
			tb.Fatal(err)
		}
		p := s.RecordPath(exp, r.ID)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			tb.Fatal(err)
		}
		paths = append(paths, p)
	}
	return paths
}

// BenchmarkList10000 lists (reads and decodes) every record of a results
// directory holding 10,000 runs in 100 experiments, and one experiment's
// 100.
func BenchmarkList10000(b *testing.B) {
	s := Open(b.TempDir())
	fillStore(b, s, 10000, 100)
	b.Run("all", func(b *testing.B) {
		for b.Loop() {
			runs, warns, err := s.List(Filter{})
			if err != nil || len(runs) != 10000 || len(warns) != 0 {
				b.Fatalf("List = %d runs, %v, %v", len(runs), warns, err)
			}
		}
	})
	b.Run("experiment", func(b *testing.B) {
		for b.Loop() {
			runs, _, err := s.List(Filter{Experiment: "bench/e042"})
			if err != nil || len(runs) != 100 {
				b.Fatalf("List = %d runs, %v", len(runs), err)
			}
		}
	})
}

// commitRepo makes a git repository holding 10,000 committed records.
func commitRepo(b *testing.B) (string, *Store) {
	b.Helper()
	dir := newRepo(b)
	s := Open(dir)
	fillStore(b, s, 10000, 100)
	gitCLI(b, dir, "add", "results")
	gitCLI(b, dir, "commit", "-q", "-m", "10,000 records")
	return dir, s
}

// BenchmarkCommit10000 commits one new record (and its two raw files)
// into a repository that holds 10,000 records, with Store.Commit.
// Compare with BenchmarkGitCLICommit10000.
func BenchmarkCommit10000(b *testing.B) {
	_, s := commitRepo(b)
	s.Author = "Bench <bench@example.com>"
	ctx := context.Background()
	i := 0
	var cpu time.Duration
	for b.Loop() {
		b.StopTimer()
		start := t0.Add(time.Duration(20000+i) * time.Minute)
		r := testRun(fmt.Sprintf("%s-%05d", start.Format("20060102T150405Z"), i), "bench/e007", start, 50, 51, 52)
		rec, err := s.Write(r, map[string][]byte{"stdout": []byte("[]\n"), "stderr": []byte("ok\n")})
		if err != nil {
			b.Fatal(err)
		}
		i++
		b.StartTimer()
		c0 := cpuTime()
		if _, err := s.Commit(ctx, []string{rec, s.RawDir(r.Experiment, r.ID)}, "results: "+r.ID); err != nil {
			b.Fatal(err)
		}
		cpu += cpuTime() - c0
	}
	b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/op")
}

// BenchmarkGitCLICommit10000 is the reference for BenchmarkCommit10000:
// the git CLI adding and committing the same new record and raw files
// (git add FILES && git commit -m MSG), two processes as a user or a
// script would run them.
func BenchmarkGitCLICommit10000(b *testing.B) {
	dir, s := commitRepo(b)
	i := 0
	var cpu time.Duration
	for b.Loop() {
		b.StopTimer()
		start := t0.Add(time.Duration(20000+i) * time.Minute)
		r := testRun(fmt.Sprintf("%s-%05d", start.Format("20060102T150405Z"), i), "bench/e007", start, 50, 51, 52)
		rec, err := s.Write(r, map[string][]byte{"stdout": []byte("[]\n"), "stderr": []byte("ok\n")})
		if err != nil {
			b.Fatal(err)
		}
		i++
		b.StartTimer()
		c0 := cpuTime()
		for _, args := range [][]string{{"add", rec, s.RawDir(r.Experiment, r.ID)}, {"commit", "-q", "-m", "results: " + r.ID}} {
			cmd := exec.Command("git", args...)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir, "GIT_AUTHOR_NAME=b", "GIT_AUTHOR_EMAIL=b@example.com",
				"GIT_COMMITTER_NAME=b", "GIT_COMMITTER_EMAIL=b@example.com")
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("git %v: %v\n%s", args, err, out)
			}
		}
		cpu += cpuTime() - c0
	}
	b.ReportMetric(float64(cpu)/float64(b.N), "cpu-ns/op")
}

// cpuTime is the user plus system CPU time of this process and of its
// finished children (the git CLI), the figure to read on a loaded machine.
func cpuTime() time.Duration {
	var self, kids syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	syscall.Getrusage(syscall.RUSAGE_CHILDREN, &kids)
	return time.Duration(self.Utime.Nano() + self.Stime.Nano() + kids.Utime.Nano() + kids.Stime.Nano())
}

// TestMeasureCommit commits one new record (and its two raw files) into
// an existing repository five times and prints the median wall and CPU
// time of Store.Commit, for BENCHMARKS.md:
//
//	RIGOR_MEASURE_COMMIT=/tmp/r100k go test -run TestMeasureCommit -v ./internal/results
//
// It adds five commits to that repository (under results/lab/commitbench).
func TestMeasureCommit(t *testing.T) {
	dir := os.Getenv("RIGOR_MEASURE_COMMIT")
	if dir == "" {
		t.Skip("RIGOR_MEASURE_COMMIT is not set")
	}
	s := Open(dir)
	s.Author = "Bench <bench@example.com>"
	var walls, cpus []time.Duration
	for i := range 5 {
		start := time.Now().UTC().Add(time.Duration(i) * time.Second)
		r := testRun(NewRunID(start), "lab/commitbench", start, 50, 51, 52)
		rec, err := s.Write(r, map[string][]byte{"stdout": []byte("[]\n"), "stderr": []byte("ok\n")})
		if err != nil {
			t.Fatal(err)
		}
		w0, c0 := time.Now(), cpuTime()
		if _, err := s.Commit(context.Background(), []string{rec, s.RawDir(r.Experiment, r.ID)}, "results: "+r.ID); err != nil {
			t.Fatal(err)
		}
		walls, cpus = append(walls, time.Since(w0)), append(cpus, cpuTime()-c0)
	}
	slices.Sort(walls)
	slices.Sort(cpus)
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	t.Logf("commit into %s: median %v wall, %v CPU (of 5); peak RSS of the test process %d MiB", dir, walls[2], cpus[2], ru.Maxrss/1024)
}
