package cli

import (
	"context"
	"strings"
)

// Exit codes. 0 is success and 1 a failure; the others are documented here
// and in the README.
const (
	// ExitUsage is a command line kong could not parse.
	ExitUsage = 80
	// ExitProblems is rigor vet (or another verb) finding errors in the
	// experiments.
	ExitProblems = 1
	// ExitRegression is rigor diff --fail-on-regression[=PERCENT] finding a
	// metric that got significantly worse (after Holm) by more than PERCENT.
	ExitRegression = 3
	// ExitRunFailed is rigor run recording at least one run whose status is
	// not ok (failed, crashed, timeout): the records are written.
	ExitRunFailed = 2
	// ExitBisectNoChange is rigor bisect finding no difference between
	// its endpoints that the rounds could tell from the noise: nothing to
	// bisect.
	ExitBisectNoChange = 4
	// ExitBisectUnsplit is rigor bisect ending with a range it could not
	// split: a commit in it was told from neither endpoint, or measures
	// between them.
	ExitBisectUnsplit = 5
	// ExitBisectSkipped is rigor bisect ending with a range whose every
	// commit was skipped (a patch did not apply, it did not build, its runs
	// failed).
	ExitBisectSkipped = 6
	// ExitInterrupted is rigor run stopped by Ctrl-C or SIGTERM after
	// recording the interrupted run, or rigor build stopped by them
	// (128 + SIGINT, as shells report it).
	ExitInterrupted = 130
)

// interruptedError is an error of a command stopped by Ctrl-C or SIGTERM:
// it exits ExitInterrupted.
type interruptedError struct{ err error }

// Error says what was interrupted: "interrupted: installing
// node-llama-cpp", not "…: context canceled".
func (e *interruptedError) Error() string {
	return "interrupted: " + strings.TrimSuffix(e.err.Error(), ": "+context.Canceled.Error())
}
func (e *interruptedError) Unwrap() error { return e.err }
func (e *interruptedError) ExitCode() int { return ExitInterrupted }
