package interop

import (
	"math/rand"
	"testing"
)

// TestImport_mutations imports seeds with random bytes changed and random
// truncations (a fixed random sequence): every call returns records or an
// error, never both, and never panics. It complements FuzzImport, whose
// engine runs slowly here (the package links the CUE evaluator, which
// coverage instrumentation makes heavy).
func TestImport_mutations(t *testing.T) {
	opts := repoOptions(t)
	rng := rand.New(rand.NewSource(1))
	seeds := [][]byte{readSeed(t, "000_6ca3690f63b2438f.json"), readSeed(t, "003_876d20171dbd1767.json"), readSeed(t, "004_5d337bcd44405d36.json")}
	for i := 0; i < 1500; i++ {
		s := append([]byte(nil), seeds[i%3]...)
		for k := 0; k < 1+rng.Intn(4); k++ {
			s[rng.Intn(len(s))] = byte(rng.Intn(256))
		}
		if rng.Intn(3) == 0 {
			s = s[:rng.Intn(len(s))]
		}
		out, err := Import("f.json", s, opts)
		if (err == nil) == (out == nil) {
			t.Fatalf("input %q: got %d records and error %v", s, len(out), err)
		}
	}
}
