package flock

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestAcquire(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "x.lock")
	ctx := context.Background()
	a, err := Acquire(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// A second exclusive lock cannot be had while the first is held…
	if _, err := Acquire(ctx, path, Options{NoWait: true}); !errors.Is(err, ErrLocked) {
		t.Fatalf("second lock: %v, want ErrLocked", err)
	}
	// …nor a shared one; a waiter gives up when its context ends, saying why.
	cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	_, err = Acquire(cctx, path, Options{Shared: true, Waiting: "another build"})
	if err == nil || !strings.Contains(err.Error(), "waiting for another build") {
		t.Fatalf("waiter: %v", err)
	}
	// A waiter gets the lock once it is released.
	got := make(chan error, 1)
	go func() {
		l, err := Acquire(ctx, path, Options{})
		if err == nil {
			l.Unlock()
		}
		got <- err
	}()
	time.Sleep(50 * time.Millisecond)
	a.Unlock()
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	// Shared locks coexist.
	s1, err := Acquire(ctx, path, Options{Shared: true})
	if err != nil {
		t.Fatal(err)
	}
	s2, err := Acquire(ctx, path, Options{Shared: true, NoWait: true})
	if err != nil {
		t.Fatalf("second shared lock: %v", err)
	}
	s1.Unlock()
	s2.Unlock()
}
