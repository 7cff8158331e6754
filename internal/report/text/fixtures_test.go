package text

import (
	"testing"

	"github.com/rigorbench/rigor/internal/compare"
	"github.com/rigorbench/rigor/internal/compare/comparetest"
)

// The fixtures are comparetest's, shared with compare's tests.
var (
	loadRun     = comparetest.LoadRun
	historyRuns = comparetest.HistoryRuns
)

func seedSides(t testing.TB) (compare.Side, compare.Side) {
	a, b := comparetest.SeedSides(t)
	return compare.Side(a), compare.Side(b)
}

func sweepSides() (compare.Side, compare.Side) {
	a, b := comparetest.SweepSides()
	return compare.Side(a), compare.Side(b)
}
