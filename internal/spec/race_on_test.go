//go:build race

package spec

// raceEnabled is true in a race-built test binary, where the CUE
// evaluator runs several times slower.
const raceEnabled = true
