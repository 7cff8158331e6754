package interop

import (
	"testing"
	"time"
)

// FuzzImport feeds arbitrary files to Import: it must return records or
// an error, never panic, and never both.
func FuzzImport(f *testing.F) {
	for _, s := range []string{"000_6ca3690f63b2438f.json", "003_876d20171dbd1767.json", "004_5d337bcd44405d36.json"} {
		f.Add(readSeed(f, s))
	}
	f.Add([]byte(`[{"build_commit": "abc1234", "n_gen": 8, "avg_ts": 1}]`))
	f.Add([]byte(`{"data": {"schema_version": "local-ai-registry/v1", "id": "x", "recipe_id": "y", "rows": [{"concurrency": 1}]}}`))
	opts := repoOptions(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		out, err := Import("fuzz.json", data, opts)
		if err != nil && out != nil {
			t.Fatalf("got records and error %v", err)
		}
		for _, im := range out {
			if im.Run.ID == "" || im.Run.Experiment == "" || im.Run.Status == "" {
				t.Fatalf("incomplete record %+v", im.Run)
			}
			if _, err := Export(ExportJSON, []Record{{Run: im.Run, Raw: im.Raw}}, time.Time{}); err != nil {
				t.Fatalf("table export: %v", err)
			}
		}
	})
}
