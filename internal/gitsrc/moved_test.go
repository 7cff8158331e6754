package gitsrc

import (
	"context"
	"reflect"
	"testing"
)

// A fetch into an existing mirror reports each branch and tag it found on
// another commit: a force-moved tag and an advanced branch, not the refs
// that stayed.
func TestFetch_moved(t *testing.T) {
	remote := t.TempDir()
	gitT(t, remote, "init", "-q", "-b", "main")
	writeFile(t, remote, "a.txt", "one\n")
	c1 := commitAll(t, remote, "one")
	gitT(t, remote, "tag", "b4747")
	gitT(t, remote, "tag", "stays")
	var moves []Move
	opts := Options{Cache: t.TempDir(), Moved: func(m Move) { moves = append(moves, m) }}
	ctx := context.Background()
	if _, err := EnsureMirror(ctx, remote, opts); err != nil {
		t.Fatal(err)
	}
	if len(moves) != 0 {
		t.Fatalf("creating the mirror reported moves: %+v", moves)
	}
	writeFile(t, remote, "a.txt", "two\n")
	c2 := commitAll(t, remote, "two")
	gitT(t, remote, "tag", "-f", "b4747", c2)
	if err := Fetch(ctx, remote, opts); err != nil {
		t.Fatal(err)
	}
	want := []Move{
		{URL: remote, Ref: "refs/heads/main", Old: c1, New: c2},
		{URL: remote, Ref: "refs/tags/b4747", Old: c1, New: c2},
	}
	if !reflect.DeepEqual(moves, want) {
		t.Errorf("got moves %+v, want %+v", moves, want)
	}
	moves = nil
	if err := Fetch(ctx, remote, opts); err != nil {
		t.Fatal(err)
	}
	if len(moves) != 0 {
		t.Errorf("a fetch with nothing moved reported %+v", moves)
	}
}
