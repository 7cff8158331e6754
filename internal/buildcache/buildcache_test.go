package buildcache

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func inputs() Inputs {
	return Inputs{Engine: "llama.cpp", Commit: strings.Repeat("a", 40), Patches: []string{"p1", "p2"},
		Recipe: json.RawMessage(`{"configure":["-DX=1"]}`), Compiler: map[string]string{"cc": "gcc 12"}, Platform: "linux/amd64"}
}

func TestInputs_Key(t *testing.T) {
	base := inputs().Key()
	if len(base) != 64 || base != inputs().Key() {
		t.Fatalf("Key() = %q, want a stable 64-hex key", base)
	}
	for name, change := range map[string]func(*Inputs){
		"commit":        func(in *Inputs) { in.Commit = strings.Repeat("b", 40) },
		"patch order":   func(in *Inputs) { in.Patches = []string{"p2", "p1"} },
		"patch dropped": func(in *Inputs) { in.Patches = in.Patches[:1] },
		"recipe":        func(in *Inputs) { in.Recipe = json.RawMessage(`{"configure":["-DX=2"]}`) },
		"compiler":      func(in *Inputs) { in.Compiler = map[string]string{"cc": "gcc 13"} },
		"platform":      func(in *Inputs) { in.Platform = "linux/arm64" },
	} {
		in := inputs()
		change(&in)
		if in.Key() == base {
			t.Errorf("changing the %s keeps key %s", name, base)
		}
	}
}

func TestCache_Build(t *testing.T) {
	c := Cache{Root: t.TempDir()}
	ctx := context.Background()
	calls := 0
	ok := func(ctx context.Context, dir string, log *os.File) (map[string]string, error) {
		calls++
		os.MkdirAll(filepath.Join(dir, "bin"), 0o755)
		os.WriteFile(filepath.Join(dir, "bin", "prog"), []byte("x"), 0o755)
		log.WriteString("built\n")
		return map[string]string{"prog": "bin/prog"}, nil
	}
	if _, err := c.Lookup(inputs().Key()); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Lookup in an empty cache: got %v, want ErrNotFound", err)
	}
	e, built, err := c.Build(ctx, inputs(), ok)
	if err != nil || !built {
		t.Fatalf("Build: built %v, err %v", built, err)
	}
	if e.Bin("prog") != filepath.Join(c.EntryDir(e.Key), "bin", "prog") || e.BinDir() != filepath.Join(c.EntryDir(e.Key), "bin") {
		t.Errorf("entry bins: Bin %s, BinDir %s", e.Bin("prog"), e.BinDir())
	}
	e2, built, err := c.Build(ctx, inputs(), ok)
	if err != nil || built || calls != 1 || e2.Key != e.Key {
		t.Errorf("second Build: built %v, calls %d, err %v; want a hit", built, calls, err)
	}

	// A failure keeps its log, with the tail in the error, and no entry.
	in := inputs()
	in.Commit = strings.Repeat("c", 40)
	_, _, err = c.Build(ctx, in, func(ctx context.Context, dir string, log *os.File) (map[string]string, error) {
		for i := range 50 {
			log.WriteString("line " + string(rune('a'+i%26)) + "\n")
		}
		os.WriteFile(filepath.Join(dir, MarkerFile), []byte("{}"), 0o644) // a stray marker must not survive
		return nil, errors.New("compile failed")
	})
	var fe *FailedError
	if !errors.As(err, &fe) || strings.Count(fe.Tail, "\n") != TailLines-1 {
		t.Fatalf("failed Build: got %v, want a FailedError with a %d-line tail", err, TailLines)
	}
	if _, err := c.Lookup(in.Key()); !errors.Is(err, ErrNotFound) {
		t.Errorf("Lookup after a failed build: %v, want ErrNotFound", err)
	}

	// An entry directory without a marker (a crash before the rename
	// cannot leave one, but a person can) is incomplete, and debris of a
	// dead build is too.
	in2 := inputs()
	in2.Commit = strings.Repeat("d", 40)
	os.MkdirAll(c.EntryDir(in2.Key()), 0o755)
	os.MkdirAll(filepath.Join(c.Dir(), in2.Key()+".tmp-999999"), 0o755)
	items, err := c.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	states := map[string]int{}
	for _, it := range items {
		states[it.State]++
	}
	if states[StateComplete] != 1 || states[StateFailed] != 1 || states[StateIncomplete] != 2 {
		t.Errorf("List states = %v, want 1 complete, 1 failed, 2 incomplete", states)
	}

	// Prune keeps used complete entries, removes the rest.
	removed, err := c.Prune(ctx, PruneOptions{Used: func(k string) bool { return k == e.Key }, DryRun: true})
	if err != nil || len(removed) != 3 {
		t.Errorf("Prune --dry-run: %d items, err %v; want 3", len(removed), err)
	}
	if items2, _ := c.List(ctx); len(items2) != len(items) {
		t.Errorf("dry run removed entries")
	}
	if _, err := c.Prune(ctx, PruneOptions{Used: func(k string) bool { return k == e.Key }}); err != nil {
		t.Fatal(err)
	}
	if items, _ := c.List(ctx); len(items) != 1 || items[0].State != StateComplete {
		t.Errorf("after Prune: %+v, want the used complete entry", items)
	}
	if _, err := c.Prune(ctx, PruneOptions{All: true}); err != nil {
		t.Fatal(err)
	}
	if items, _ := c.List(ctx); len(items) != 0 {
		t.Errorf("after Prune --all: %+v, want nothing", items)
	}
}

func TestCache_Lookup_badKey(t *testing.T) {
	c := Cache{Root: t.TempDir()}
	for _, k := range []string{"", "../../etc", strings.Repeat("A", 64)} {
		if _, err := c.Lookup(k); err == nil || errors.Is(err, ErrNotFound) {
			t.Errorf("Lookup(%q): got %v, want a bad-key error", k, err)
		}
	}
}

// TestCache_Build_trace: the builder hears where its log is; a second
// process building the same key hears who holds the lock before it waits,
// then gets the first one's entry.
func TestCache_Build_trace(t *testing.T) {
	c := Cache{Root: t.TempDir()}
	started, release := make(chan string), make(chan struct{})
	var logSeen string
	first := WithTrace(context.Background(), &Trace{Building: func(key, log string) {
		if key != inputs().Key() {
			t.Errorf("Building: key %s, want %s", key, inputs().Key())
		}
		logSeen = log
	}})
	done := make(chan error, 1)
	go func() {
		_, built, err := c.Build(first, inputs(), func(ctx context.Context, dir string, log *os.File) (map[string]string, error) {
			started <- log.Name()
			<-release
			os.WriteFile(filepath.Join(dir, "prog"), []byte("x"), 0o755)
			return map[string]string{"prog": "prog"}, nil
		})
		if err == nil && !built {
			err = errors.New("the first Build did not build")
		}
		done <- err
	}()
	logName := <-started
	if logSeen != logName {
		t.Errorf("Building: log %q, want the file being written %q", logSeen, logName)
	}
	waiting := make(chan int, 1)
	second := WithTrace(context.Background(), &Trace{
		Waiting:  func(pid int, lock string) { waiting <- pid },
		Building: func(key, log string) { t.Errorf("the second Build builds too") },
	})
	got := make(chan *Entry, 1)
	go func() {
		e, built, err := c.Build(second, inputs(), func(context.Context, string, *os.File) (map[string]string, error) {
			return nil, errors.New("must not run")
		})
		if err != nil || built {
			t.Errorf("second Build: built %v, err %v; want the first one's entry", built, err)
		}
		got <- e
	}()
	if pid := <-waiting; pid != os.Getpid() {
		t.Errorf("Waiting: pid %d, want the holder %d", pid, os.Getpid())
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if e := <-got; e == nil || e.Key != inputs().Key() {
		t.Errorf("second Build: entry %+v", e)
	}
}
