package engine

import (
	"fmt"
	"strings"
)

// Errors that more than one family or the CLI match by type. Each says
// what is wrong; the CLI maps them to hints (internal/cli/hints.go).

// CommitMismatchError rejects a build whose binaries report another commit
// than the locked one.
type CommitMismatchError struct {
	// Locked is the full locked commit; Reported the short one the build
	// reports, from File.
	Locked, Reported, File string
}

// Error names both commits.
func (e *CommitMismatchError) Error() string {
	return fmt.Sprintf("build reports commit %s (%s), but the locked commit is %s", e.Reported, e.File, e.Locked)
}

// PatchChangedError reports a patch file whose bytes are no longer the
// locked ones.
type PatchChangedError struct {
	Path         string
	Locked, Have string
}

// Error names the patch and both hashes.
func (e *PatchChangedError) Error() string {
	return fmt.Sprintf("patch %s changed since it was locked: sha256 %s, lock has %s", e.Path, e.Have, e.Locked)
}

// UnknownArgError is an extraArgs option an engine's bench program is
// known to reject (its argument list is fixed and known): every run would
// fail, so planning refuses it.
type UnknownArgError struct {
	// Program names the bench program ("node-llama-cpp's bench runner").
	Program string
	// Args are the options it does not take; Accepted those it does.
	Args, Accepted []string
}

func (e *UnknownArgError) Error() string {
	return fmt.Sprintf("%s does not take %s: every run would fail", e.Program, strings.Join(e.Args, ", "))
}

// Hint lists what the program takes.
func (e *UnknownArgError) Hint() string {
	return "the runner takes " + strings.Join(e.Accepted, " ") + " (each with a value); flags and bench fields set the common ones"
}
