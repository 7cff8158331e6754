package compare

import (
	"testing"

	"github.com/rigorbench/rigor/internal/compare/comparetest"
)

// The fixtures are comparetest's, shared with the renderers' tests.
var (
	loadRun     = comparetest.LoadRun
	noise       = comparetest.Noise
	samples     = comparetest.Samples
	specJSON    = comparetest.SpecJSON
	demoRig     = comparetest.DemoRig
	historyRuns = comparetest.HistoryRuns
	roundRuns   = comparetest.RoundRuns
	busyRounds  = comparetest.BusyRounds
)

const modelHash = comparetest.ModelHash

func seedSides(t testing.TB) (Side, Side) {
	a, b := comparetest.SeedSides(t)
	return Side(a), Side(b)
}

func sweepSides() (Side, Side) {
	a, b := comparetest.SweepSides()
	return Side(a), Side(b)
}
