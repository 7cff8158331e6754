package compare

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/rigorbench/rigor/internal/results"
)

// TestLogSummariesReadsOnlyWhatChanged builds the history from summaries
// (as from the index): the same history as from the records, reading only
// the records on either side of a change (the new lock after the third
// run, the new driver before the sixth).
func TestLogSummariesReadsOnlyWhatChanged(t *testing.T) {
	runs := historyRuns()
	want, _ := json.Marshal(Log(runs))
	sums := make([]*results.Summary, len(runs))
	byID := map[string]*results.Run{}
	for i := range runs {
		// Through the JSON form of a record, as the index would have it.
		data, err := results.Encode(&runs[i])
		if err != nil {
			t.Fatal(err)
		}
		r, err := results.Decode(data)
		if err != nil {
			t.Fatal(err)
		}
		sums[i] = results.Summarize(r)
		byID[r.ID] = r
	}
	var read []string
	h, err := LogSummaries(sums, func(s *results.Summary) (*results.Run, error) {
		read = append(read, s.ID)
		return byID[s.ID], nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := json.Marshal(h); string(got) != string(want) {
		t.Errorf("history from summaries:\n%s\nfrom records:\n%s", got, want)
	}
	slices.Sort(read)
	read = slices.Compact(read)
	wantRead := []string{runs[2].ID, runs[3].ID, runs[4].ID, runs[5].ID}
	if !slices.Equal(read, wantRead) {
		t.Errorf("records read %q, want those around the two changes %q", read, wantRead)
	}

	// A record that cannot be read where a change must be shown is an
	// error, not a silent gap.
	if _, err := LogSummaries(sums, func(s *results.Summary) (*results.Run, error) { return nil, results.ErrNotFound }); err == nil {
		t.Error("no error when the records around a change cannot be read")
	}
}

// TestLog_versionAsCommit: a node-llama-cpp run has no engine commit; the
// commit column shows its npm version instead of nothing (issue 31).
func TestLog_versionAsCommit(t *testing.T) {
	runs := historyRuns()[:1]
	runs[0].Engine.Commit, runs[0].Engine.Ref, runs[0].Engine.Version = "", "", "3.22.1"
	if c := Log(runs).Entries[0].Commit; c != "3.22.1" {
		t.Errorf("commit column %q, want the npm version 3.22.1", c)
	}
}
