package slurm

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestRemoveOldOutputs(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	old := now.Add(-OutputKept - time.Hour)
	files := map[string]time.Time{
		"rigor-20261101T000000Z-0bad-12_0.out":  old, // removed
		"rigor-20261101T000000Z-0bad-12_1.out":  now, // young: kept
		"rigor-20261101T000000Z-0bad-12_2.txt":  old, // not a job's output
		"other-20261101T000000Z-0bad-12_0.out":  old,
		"rigor-20261101T000000Z-0bad-12_0.outx": old,
	}
	for name, mt := range files {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("log\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, mt, mt); err != nil {
			t.Fatal(err)
		}
	}
	// A directory named like an output is not one.
	sub := filepath.Join(dir, "rigor-20261101T000000Z-0bad-13_0.out")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chtimes(sub, old, old)

	n, err := RemoveOldOutputs(dir, now.Add(-OutputKept))
	if err != nil || n != 1 {
		t.Fatalf("RemoveOldOutputs = %d, %v; want 1, nil", n, err)
	}
	for name := range files {
		_, err := os.Stat(filepath.Join(dir, name))
		if gone := os.IsNotExist(err); gone != (name == "rigor-20261101T000000Z-0bad-12_0.out") {
			t.Errorf("%s: gone = %v", name, gone)
		}
	}
	if _, err := os.Stat(sub); err != nil {
		t.Errorf("the directory went: %v", err)
	}
}

// A task removes its output only when it is the very file it writes to,
// and never when the batch keeps outputs.
func TestNodeTask_removeOutput(t *testing.T) {
	dir := t.TempDir()
	own := filepath.Join(dir, "own.out")
	other := filepath.Join(dir, "other.out")
	for _, p := range []string{own, other} {
		if err := os.WriteFile(p, []byte("log\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fi, err := os.Stat(own)
	if err != nil {
		t.Fatal(err)
	}
	c := &NodeTask{Batch: &Batch{KeepOutput: true}, Output: fi}
	c.removeOutput(own)
	if _, err := os.Stat(own); err != nil {
		t.Fatalf("kept by the batch, removed: %v", err)
	}
	c.Batch.KeepOutput = false
	c.removeOutput(other)
	if _, err := os.Stat(other); err != nil {
		t.Fatalf("another file than the task's output was removed: %v", err)
	}
	c.removeOutput(own)
	if _, err := os.Stat(own); !os.IsNotExist(err) {
		t.Fatalf("the task's own output is still there: %v", err)
	}
	// No output file (stderr a terminal or a pipe): nothing goes.
	(&NodeTask{Batch: &Batch{}}).removeOutput(other)
	if _, err := os.Stat(other); err != nil {
		t.Fatal(err)
	}
}
