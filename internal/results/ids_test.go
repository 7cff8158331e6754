package results

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// findCost finds id and returns the path and the directory entries listed.
func findCost(t *testing.T, s *Store, id string) (string, int64, error) {
	t.Helper()
	r0 := Reads()
	p, err := s.Find(id)
	return p, Reads().DirEntries - r0.DirEntries, err
}

// TestFind_idMap: a run id is found through the index's run-id map without
// listing the store, and the map never decides alone: a moved, removed,
// copied or damaged entry falls back to the listing (issue 30).
func TestFind_idMap(t *testing.T) {
	dir := t.TempDir()
	s := Open(dir)
	a := writeRecords(t, s, "lab/a", 3, 0)
	b := writeRecords(t, s, "lab/b", 3, 10)
	for i := 0; i < 20; i++ {
		writeRecords(t, s, "other/e"+string(rune('a'+i)), 2, 100+10*i)
	}

	// No map yet: the first lookup lists every directory and writes it.
	p, n, err := findCost(t, s, a[1].ID)
	if err != nil || p != s.RecordPath("lab/a", a[1].ID) || n == 0 {
		t.Fatalf("first Find = %q, %d entries listed, %v; want the record, found by listing", p, n, err)
	}
	// Then every id is found by the map alone.
	for _, r := range append(a, b...) {
		p, n, err := findCost(t, s, r.ID)
		if err != nil || p != s.RecordPath(r.Experiment, r.ID) || n != 0 {
			t.Fatalf("Find(%s) = %q, %d entries listed, %v; want %s from the map", r.ID, p, n, err, s.RecordPath(r.Experiment, r.ID))
		}
	}
	// A record written by Store.Write is added to the map.
	c := writeRecords(t, s, "lab/c", 1, 500)[0]
	if p, n, err := findCost(t, s, c.ID); err != nil || p != s.RecordPath("lab/c", c.ID) || n != 0 {
		t.Fatalf("Find of a new record = %q, %d entries listed, %v; want it from the map", p, n, err)
	}

	// A record moved to another experiment directory: the map's entry
	// names no file, the listing finds it and the map is written again.
	moved := s.RecordPath("lab/b", a[0].ID)
	if err := os.Rename(s.RecordPath("lab/a", a[0].ID), moved); err != nil {
		t.Fatal(err)
	}
	if p, n, err := findCost(t, s, a[0].ID); err != nil || p != moved || n == 0 {
		t.Fatalf("Find of a moved record = %q, %d entries listed, %v; want %s by listing", p, n, err, moved)
	}
	if p, n, _ := findCost(t, s, a[0].ID); p != moved || n != 0 {
		t.Fatalf("Find after the listing = %q, %d entries listed; want %s from the map", p, n, moved)
	}

	// Removed: not found, as before.
	os.Remove(moved)
	if _, _, err := findCost(t, s, a[0].ID); err == nil || !strings.Contains(err.Error(), "no record") {
		t.Fatalf("Find of a removed record: %v", err)
	}

	// The index deleted: found by listing.
	if err := os.RemoveAll(filepath.Join(s.Dir, indexDir)); err != nil {
		t.Fatal(err)
	}
	if p, n, err := findCost(t, s, b[2].ID); err != nil || p != s.RecordPath("lab/b", b[2].ID) || n == 0 {
		t.Fatalf("Find without an index = %q, %d, %v", p, n, err)
	}

	// A damaged shard is as if missing.
	shard := s.idShardPath(b[1].ID)
	if err := os.WriteFile(shard, []byte(idsHeader+"garbage\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if p, n, err := findCost(t, s, b[1].ID); err != nil || p != s.RecordPath("lab/b", b[1].ID) || n == 0 {
		t.Fatalf("Find with a damaged shard = %q, %d, %v", p, n, err)
	}

	// A shard naming a directory that holds a symlink, not a record: the
	// link is never followed; the listing decides (here: twice recorded).
	link := s.RecordPath("lab/a", b[0].ID)
	if err := os.Symlink(s.RecordPath("lab/b", b[0].ID), link); err != nil {
		t.Fatal(err)
	}
	m := readIDShard(s.idShardPath(b[0].ID))
	m[b[0].ID] = []string{"lab/a"}
	s.writeIDShard(idShard(b[0].ID), encodeIDShard(m))
	if _, _, err := findCost(t, s, b[0].ID); err == nil || !strings.Contains(err.Error(), "more than once") {
		t.Fatalf("Find through a symlinked entry: %v", err)
	}
	os.Remove(link)

	// A copy of a record in a second directory is seen by the listing
	// (after the map's entry goes stale) and refused, as before.
	data, _ := os.ReadFile(s.RecordPath("lab/b", b[1].ID))
	os.WriteFile(s.RecordPath("lab/c", b[1].ID), data, 0o644)
	os.Remove(s.idShardPath(b[1].ID))
	if _, _, err := findCost(t, s, b[1].ID); err == nil || !strings.Contains(err.Error(), "more than once") {
		t.Fatalf("Find of a copied record: %v", err)
	}
	// The map now holds both directories: a lookup does not pick one.
	if _, n, err := findCost(t, s, b[1].ID); err == nil || n == 0 {
		t.Fatalf("Find of a twice-mapped id = %d entries listed, %v: want the listing's refusal", n, err)
	}
}

// TestFind_readsIndependentOfStore: finding a run id through the map
// lists no directory and reads the same few bytes of the map whether the
// store holds 50 or 500 other records (counts, not times).
func TestFind_readsIndependentOfStore(t *testing.T) {
	cost := func(others int) (entries, indexBytes int64) {
		s := Open(t.TempDir())
		r := writeRecords(t, s, "lab/target", 1, 0)[0]
		for i := 0; i*25 < others; i++ {
			writeRecords(t, s, fmt.Sprintf("other/e%02d", i), 25, 1000+25*i)
		}
		s.Find(r.ID) // the first lookup writes the map
		r0 := Reads()
		if _, err := s.Find(r.ID); err != nil {
			t.Fatal(err)
		}
		r1 := Reads()
		return r1.DirEntries - r0.DirEntries, r1.IndexBytes - r0.IndexBytes
	}
	e1, b1 := cost(50)
	e2, b2 := cost(500)
	t.Logf("50 others: %d entries, %d bytes of the map; 500: %d, %d", e1, b1, e2, b2)
	if e1 != 0 || e2 != 0 {
		t.Errorf("Find listed %d and %d directory entries: want none", e1, e2)
	}
	// One shard of 256: a few lines of ~40 bytes beside 500 records.
	if b2 > 1024 {
		t.Errorf("Find read %d bytes of the map beside 500 records: want one shard", b2)
	}
}
