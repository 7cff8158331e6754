package run

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

func TestCleanScratch(t *testing.T) {
	cache := t.TempDir()
	mk := func(name string) string {
		t.Helper()
		dir := filepath.Join(ScratchDir(cache), name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, "out.json"), []byte("1234"), 0o644)
		return dir
	}
	inUse := mk("run-inuse")
	release, err := ClaimScratch(inUse)
	if err != nil {
		t.Fatal(err)
	}
	defer release()

	// A directory claimed by a process that died: its lock is free.
	dead := mk("run-dead")
	cmd := exec.Command("flock", filepath.Join(dead, claimFile), "true")
	if err := cmd.Run(); err != nil {
		t.Skipf("flock(1) not available: %v", err)
	}
	fresh := mk("run-fresh") // unclaimed, just made: maybe a run starting now
	old := mk("run-old")     // unclaimed and old
	past := time.Now().Add(-2 * unclaimedAge)
	os.Chtimes(old, past, past)
	other := mk("keep-me") // not a scratch run directory

	removed, size, err := CleanScratch(cache)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{dead: true, old: true}
	if len(removed) != len(want) || size != 8 {
		t.Errorf("CleanScratch removed %v (%d bytes), want %v (8 bytes)", removed, size, want)
	}
	for _, d := range removed {
		if !want[d] {
			t.Errorf("CleanScratch removed %s", d)
		}
	}
	for _, d := range []string{inUse, fresh, other} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s is gone: %v", d, err)
		}
	}
	for d := range want {
		if _, err := os.Stat(d); err == nil {
			t.Errorf("%s is still there", d)
		}
	}
	// A second claim of a directory in use fails.
	if _, err := ClaimScratch(inUse); err == nil {
		t.Errorf("ClaimScratch of a claimed directory succeeded")
	}
	if r, _, err := CleanScratch(filepath.Join(cache, "none")); err != nil || len(r) != 0 {
		t.Errorf("CleanScratch of a cache without runs = %v, %v", r, err)
	}
}
