//go:build !race

package testscripts

// raceEnabled: the test binary, and so every rigor the scripts run, is
// built with the race detector.
const raceEnabled = false
