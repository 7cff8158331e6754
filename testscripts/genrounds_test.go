package testscripts

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/rigorbench/rigor/internal/results"
)

func init() {
	// gen-rounds RECORD INVOCATION N: records the N rounds of one
	// invocation of RECORD's point (ids INVOCATION-00001…, a minute apart
	// from INVOCATION's time), its metrics' samples scaled by ±0.3%, as
	// `rigor run --rounds N` would; more rounds than a test would run.
	scriptCmds["gen-rounds"] = genRounds
}

func genRounds(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: gen-rounds RECORD INVOCATION N")
	}
	n, err := strconv.Atoi(args[2])
	ts.Check(err)
	t0, err := time.Parse("20060102T150405Z", args[1][:16])
	ts.Check(err)
	store := results.Open(ts.MkAbs("."))
	for i := range n {
		r, err := results.Decode([]byte(ts.ReadFile(args[0])))
		ts.Check(err)
		start := t0.Add(time.Duration(i) * time.Minute)
		r.ID = fmt.Sprintf("%s-%05d", start.Format("20060102T150405Z"), i+1)
		r.Start, r.End = start, start.Add(30*time.Second)
		r.Invocation, r.Round, r.Rounds = args[1], i+1, n
		for j := range r.Metrics {
			for k := range r.Metrics[j].Samples {
				r.Metrics[j].Samples[k] *= 1 + 0.001*float64(i%7-3)
			}
		}
		data, err := results.Encode(r)
		ts.Check(err)
		path := store.RecordPath(r.Experiment, r.ID)
		ts.Check(os.MkdirAll(filepath.Dir(path), 0o755))
		ts.Check(os.WriteFile(path, data, 0o644))
	}
}
