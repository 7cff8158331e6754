package run

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"

	"github.com/rigorbench/rigor/internal/results"
)

// Build facts (engine.build: backends, CPU, GPU, CPU features) come from
// the engine's own output, which a run that failed before printing a row
// lacks. What a binary reported of itself does not change while its bytes
// do not, so each report is kept in the cache under the hash of the
// engine's binaries, and a run without one takes the last report of the
// same binaries, saying so (Build.From). A record without build facts
// would otherwise read as a change of build beside its neighbours. The
// bench program and the server of one build report different facts (the
// rows' devices; /props), so each kind is kept apart: kind is "" for the
// bench, "server" for a serve run.

// buildFactsDir is the cache directory of the kept reports.
func buildFactsDir(cache string) string { return filepath.Join(cache, "build-facts") }

// binariesKey is the hash of the engine's binaries by name, with the
// kind of report after it when there is one; "" when the engine names none.
func binariesKey(binaries map[string]string, kind string) string {
	if len(binaries) == 0 {
		return ""
	}
	if kind != "" {
		return binariesKey(binaries, "") + "-" + kind
	}
	names := make([]string, 0, len(binaries))
	for n := range binaries {
		names = append(names, n)
	}
	sort.Strings(names)
	h := sha256.New()
	for _, n := range names {
		h.Write([]byte(n + "\x00" + binaries[n] + "\n"))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// keepBuildFacts stores what the binaries reported; best effort.
func keepBuildFacts(cache string, binaries map[string]string, kind string, b *results.Build) {
	key := binariesKey(binaries, kind)
	if cache == "" || key == "" || b == nil || b.From != "" {
		return
	}
	data, err := json.Marshal(b)
	if err != nil {
		return
	}
	dir := buildFactsDir(cache)
	if os.MkdirAll(dir, 0o755) != nil {
		return
	}
	tmp, err := os.CreateTemp(dir, key+".*.tmp")
	if err != nil {
		return
	}
	_, err = tmp.Write(data)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil || os.Rename(tmp.Name(), filepath.Join(dir, key+".json")) != nil {
		os.Remove(tmp.Name())
	}
}

// keptBuildFacts returns the last report of the binaries, marked as such,
// or nil.
func keptBuildFacts(cache string, binaries map[string]string, kind string) *results.Build {
	key := binariesKey(binaries, kind)
	if cache == "" || key == "" {
		return nil
	}
	data, err := os.ReadFile(filepath.Join(buildFactsDir(cache), key+".json"))
	if err != nil {
		return nil
	}
	var b results.Build
	if json.Unmarshal(data, &b) != nil {
		return nil
	}
	b.From = "an earlier run of the same binaries: this run printed no report of its own"
	return &b
}
