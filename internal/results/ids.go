package results

import (
	"bufio"
	"bytes"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// The run-id map of the index (results/.index/.ids/): which experiment
// directory holds the record of a run id, so that finding a run by its id
// ([Store.Find]: diff, results, log and export of run ids) reads one small
// file instead of listing every directory of the store. It is spread over
// idShards files by a hash of the id, so a lookup reads about 1/256 of it.
//
// Like the segments it is a cache that never decides alone: an entry is
// used only when the record file it names exists and is a regular file (a
// record moved or removed makes the lookup list the store, as before, and
// that listing writes the map again); a run id missing from it is looked
// for by listing the store. Store.Write adds the records it writes; two
// writers at once may lose one's addition, which costs that id one
// listing. A second record of an id already mapped, copied in by hand, is
// found (as "recorded more than once") by the next listing, not by a
// lookup that the map answers. Deleting .index/ deletes the map with the
// segments.
const (
	idsDir     = ".ids" // hidden: pruneIndex leaves it alone
	idsHeader  = "rigor-run-ids 1\n"
	idShards   = 256
	idsMaxLine = 1024
)

// idShard is the name of the shard file that holds id.
func idShard(id string) string {
	h := fnv.New32a()
	h.Write([]byte(id))
	return fmt.Sprintf("%02x.ids", h.Sum32()%idShards)
}

func (s *Store) idShardPath(id string) string {
	return filepath.Join(s.Dir, indexDir, idsDir, idShard(id))
}

// readIDShard returns a shard's entries, id → experiment directories
// (slash paths under results/), empty when it is missing or unreadable.
func readIDShard(path string) map[string][]string {
	data, err := os.ReadFile(path)
	readCounts.indexBytes.Add(int64(len(data)))
	out := map[string][]string{}
	if err != nil || !bytes.HasPrefix(data, []byte(idsHeader)) {
		return out
	}
	sc := bufio.NewScanner(bytes.NewReader(data[len(idsHeader):]))
	sc.Buffer(make([]byte, 0, 256), idsMaxLine)
	for sc.Scan() {
		id, dir, ok := strings.Cut(sc.Text(), " ")
		if !ok || checkRunID(id) != nil || CheckExperimentID(dir) != nil {
			return map[string][]string{} // damaged: as if missing
		}
		out[id] = append(out[id], dir)
	}
	if sc.Err() != nil {
		return map[string][]string{}
	}
	return out
}

// encodeIDShard writes a shard's entries in a stable order.
func encodeIDShard(m map[string][]string) []byte {
	ids := make([]string, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var b bytes.Buffer
	b.WriteString(idsHeader)
	for _, id := range ids {
		dirs := append([]string(nil), m[id]...)
		sort.Strings(dirs)
		for _, d := range dirs {
			b.WriteString(id + " " + d + "\n")
		}
	}
	return b.Bytes()
}

// writeIDShard replaces a shard atomically; failing to is not an error
// (the next lookup lists the store).
func (s *Store) writeIDShard(name string, data []byte) {
	dir := filepath.Join(s.Dir, indexDir, idsDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return
	}
	ignore := filepath.Join(s.Dir, indexDir, ".gitignore")
	if _, err := os.Lstat(ignore); err != nil {
		os.WriteFile(ignore, []byte("# rigor's index of the records: a cache of this machine, rebuilt when deleted\n*\n"), 0o644)
	}
	f, err := os.CreateTemp(dir, ".shard-*.tmp")
	if err != nil {
		return
	}
	tmp := f.Name()
	_, werr := f.Write(data)
	if cerr := f.Close(); werr != nil || cerr != nil {
		os.Remove(tmp)
		return
	}
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		os.Remove(tmp)
	}
}

// lookupID returns the record path the map gives for id, when it gives
// exactly one directory and a regular file of that name is there.
func (s *Store) lookupID(id string) (string, bool) {
	dirs := readIDShard(s.idShardPath(id))[id]
	if len(dirs) != 1 {
		return "", false
	}
	p := s.RecordPath(dirs[0], id)
	fi, err := os.Lstat(p)
	if err != nil || !fi.Mode().IsRegular() {
		return "", false
	}
	return p, true
}

// noteID adds a record just written to the map.
func (s *Store) noteID(experiment, id string) {
	if _, err := os.Stat(filepath.Join(s.Dir, indexDir, idsDir)); err != nil {
		return // no map yet: the first lookup that misses writes it whole
	}
	path := s.idShardPath(id)
	m := readIDShard(path)
	for _, d := range m[id] {
		if d == experiment {
			return
		}
	}
	m[id] = append(m[id], experiment)
	s.writeIDShard(idShard(id), encodeIDShard(m))
}

// writeIDs writes the whole map from the record paths of a listing of
// every directory.
func (s *Store) writeIDs(paths []string) {
	shards := make([]map[string][]string, idShards)
	for _, p := range paths {
		rel, err := filepath.Rel(s.Dir, p)
		if err != nil {
			continue
		}
		dir, name := filepath.Split(filepath.ToSlash(rel))
		id, ok := strings.CutSuffix(name, ".json")
		dir = strings.TrimSuffix(dir, "/")
		if !ok || checkRunID(id) != nil || CheckExperimentID(dir) != nil {
			continue
		}
		var n int
		fmt.Sscanf(idShard(id), "%02x", &n)
		if shards[n] == nil {
			shards[n] = map[string][]string{}
		}
		shards[n][id] = append(shards[n][id], dir)
	}
	for n, m := range shards {
		if m == nil {
			m = map[string][]string{}
		}
		s.writeIDShard(fmt.Sprintf("%02x.ids", n), encodeIDShard(m))
	}
}
