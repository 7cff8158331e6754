package compare

import (
	"encoding/json"

	"github.com/rigorbench/rigor/internal/results"
	"github.com/rigorbench/rigor/internal/rig"
)

// HistoryRun is the part of a run [Options.History] reads, from its index
// summary ([results.Store.Details]): identity, status, invocation, lock,
// host, swept values and each metric's mean. A diff and the report's diff
// page estimate the noise between invocations from these, so that neither
// reads the records of the experiment's other runs.
func HistoryRun(x *results.Summary) results.Run {
	r := results.Run{ID: x.ID, Experiment: x.Experiment, Point: x.Point, Status: x.Status, Invocation: x.Invocation}
	if d := x.Detail; d != nil {
		r.LockDigest = d.LockDigest
		r.Rig = &rig.Rig{Hostname: d.Host}
		if d.Swept != "" {
			json.Unmarshal([]byte(d.Swept), &r.Swept)
		}
	}
	for _, m := range x.Metrics {
		r.Metrics = append(r.Metrics, results.Metric{Name: m.Name, Test: m.Test, Unit: m.Unit, Value: m.Mean, Samples: []float64{m.Mean}})
	}
	return r
}
