package hoststate

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzParsers feeds every parser arbitrary bytes, seeded with the recorded
// fixtures: none may panic, whatever a vendor tool prints.
func FuzzParsers(f *testing.F) {
	files, _ := filepath.Glob("testdata/*/*")
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("cpu  1 2 3 4 5 6 7 8 9 10\n"))
	f.Add([]byte("1 (a) R 1 1 1 0 -1 0 0 0 0 0 1 2 3 4 20 0 1 0 1 1 1\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		ParseNvidiaSMI(b)
		ParseXPUSMIDiscovery(b)
		ParseXPUSMIStats(b)
		ParseRocmSMI(b)
		ParseAmdSMI(b)
		ParseLoadavg(b)
		ParseMeminfo(b)
		ParseProcStat(b)
		ParsePidStat(b)
		ParseCPUInfoMHz(b)
	})
}
