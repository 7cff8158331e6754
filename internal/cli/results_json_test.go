package cli

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
	"time"
)

// TestAppendRowJSON: the hand-written encoding of a row is byte for byte
// the encoder's, and rows it does not handle are left to the encoder.
func TestAppendRowJSON(t *testing.T) {
	start := time.Date(2026, 5, 8, 3, 27, 53, 120000000, time.UTC)
	full := resultRow{ID: "20260508T032753Z-3f9a", Experiment: "lab/x", Point: "lab/x[ub=16, t=4]", Start: start,
		Status: "failed", Error: "exit 1: see stderr", Commit: "9a26522", Rig: "4x Intel Arc Pro B70",
		Metric: &keyMetric{Key: "tokSOut tg64", Unit: "tok/s", Mean: 14.292387000000001, N: 3}, Path: "results/lab/x/a.json"}
	rows := []resultRow{
		full,
		{ID: "a", Experiment: "e", Point: "e", Start: start, Status: "ok"},
		{ID: "a", Experiment: "e", Point: "e", Start: start, Status: "ok", Metric: &keyMetric{Key: "k", Mean: 0, N: 1}},
		{ID: "a", Experiment: "e", Point: "e", Start: start, Status: "ok", Path: "p"},
		{ID: "a", Experiment: "e", Point: "e", Start: start, Status: "ok", Rig: "r", Metric: &keyMetric{Key: "k", Mean: -1e-7, N: 1}},
		{ID: "a", Experiment: "e", Point: "e", Start: start, Status: "ok", Metric: &keyMetric{Key: "k", Mean: 1e21, N: 1}},
		{ID: "a", Experiment: "e", Point: "e", Start: start, Status: "ok", Metric: &keyMetric{Key: "k", Mean: 123456789.125, N: 1}},
		{ID: "a", Experiment: "e", Point: "e", Start: start, Status: "ok", Rig: "4× Intel Arc Pro B70 <x> & del\x7f"},
	}
	var handled int
	for _, unusual := range []func(r *resultRow){
		func(r *resultRow) { r.Error = "line\nbreak <html> & \"quotes\"" },
		func(r *resultRow) { r.Rig = "line\u2028separator" },
		func(r *resultRow) { r.Point = "bad \xff utf-8" },
		func(r *resultRow) { r.Metric = &keyMetric{Key: "k", Mean: math.NaN()} },
		func(r *resultRow) { r.Start = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC) },
	} {
		r := full
		unusual(&r)
		rows = append(rows, r)
	}
	for i, r := range rows {
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetIndent("  ", "  ")
		enc.SetEscapeHTML(false)
		wantErr := enc.Encode(r)
		got, ok := appendRowJSON(nil, &r)
		if !ok {
			continue
		}
		handled++
		if wantErr != nil || string(got) != want.String() {
			t.Errorf("row %d:\ngot  %s\nwant %s (%v)", i, got, want.String(), wantErr)
		}
	}
	if handled != 8 {
		t.Errorf("%d rows encoded by hand, want the 8 plain ones", handled)
	}
}
