package redact

import (
	"strings"
	"testing"
)

// BenchmarkBytesJSON redacts a 3.4 MB `rigor results --json` listing that
// holds no secret: the cost every large output pays.
func BenchmarkBytesJSON(b *testing.B) {
	row := `  {"id": "20260508T032753Z-3f9a", "experiment": "minimax-m27-b70/baseline", "point": "minimax-m27-b70/ubSweep[ub=16]", "start": "2026-05-08T03:27:53Z", "status": "ok", "engineCommit": "9a26522", "metric": {"key": "tokSOut", "unit": "tok/s", "mean": 14.29, "n": 3}, "path": "results/minimax-m27-b70/baseline/20260508T032753Z-3f9a.json"},` + "\n"
	doc := []byte("[\n" + strings.Repeat(row, 10000) + "]\n")
	b.SetBytes(int64(len(doc)))
	for i := 0; i < b.N; i++ {
		Bytes(doc)
	}
}
