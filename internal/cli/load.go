package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"runtime/debug"
	"strings"

	"github.com/rigorbench/rigor/internal/lock"

	"github.com/rigorbench/rigor/internal/spec"
)

// loadSet finds the module from the working directory and loads the
// experiments the patterns select. It stops, printing each error at its
// position, when a package it loaded could not be read (a syntax error, a
// failed import, a file outside its package or the module): that
// package's experiments would be missing from what the verb locks, checks,
// lists or runs, and it would pass what it could not read.
func (e *env) loadSet(patterns []string) (*spec.Set, error) {
	set, err := e.loadSetAll(patterns)
	if set != nil {
		if bad := set.Unreadable(); len(bad) > 0 {
			return nil, e.unreadableError(bad)
		}
	}
	return set, err
}

// unreadableError prints the problems of packages that could not be read
// and returns the error that ends the verb.
func (e *env) unreadableError(bad []*spec.Problem) error {
	e.printProblems(e.stderr, bad)
	pkgs := spec.UnreadablePackages(bad)
	what := "the experiments"
	if len(pkgs) > 0 {
		what = plural(len(pkgs), "package ", "packages ") + strings.Join(pkgs, ", ")
	}
	return withHint(fmt.Errorf("%s could not be read (%d %s above): nothing was done", what, len(bad), plural(len(bad), "error", "errors")),
		"fix "+plural(len(bad), "it", "them")+"; 'rigor vet' lists every error of the module")
}

// loadSetAll is loadSet without the stop on unreadable packages: vet
// reports every problem itself.
func (e *env) loadSetAll(patterns []string) (*spec.Set, error) {
	return e.loadSetRelease(patterns, false)
}

// loadSetRelease is loadSetAll; release lets each package's CUE values go
// once it is checked even for one experiment id (vet needs none of them).
func (e *env) loadSetRelease(patterns []string, release bool) (*spec.Set, error) {
	root, err := spec.FindRoot(e.wd)
	if err != nil {
		return nil, err
	}
	// A verb that names one experiment (show, run, rig) may need its CUE
	// values; any other lets each package go once it is checked.
	one := len(patterns) == 1 && !strings.ContainsAny(patterns[0], "*?") && !release
	if !one {
		tuneGC()
	}
	set, err := spec.Load(spec.Options{Root: root, Patterns: patterns, Release: !one, Check: checkPlan})
	if set != nil {
		e.knowSecretsOf(set.Experiments)
	}
	if err != nil {
		if errors.Is(err, spec.ErrNoExperiments) {
			return nil, withHint(err, "write experiments as CUE files in "+spec.ExperimentsDir+"/<name>/*.cue; 'rigor init' creates an example")
		}
		return set, err
	}
	return set, nil
}

// tuneGC lets the collector run less often during a whole-module load:
// with each package let go once checked (spec.Options.Release) little
// stays alive, so a collection every 100% of growth is mostly wasted
// work (a fifth of the CPU time). GOGC=400 under a soft limit of 384 MiB
// brought the CPU time of vet to that of cue export at a third of its
// memory (BENCHMARKS.md). The full report runs under the same settings:
// it keeps only the experiments being drawn, and at 10,000 records they
// took its CPU time from 1.3× jq's reading the same records to 1.0×, at
// 100,000 records under 400 MiB (issue 30). GOGC or GOMEMLIMIT set by
// the user win.
func tuneGC() {
	if os.Getenv("GOGC") == "" && os.Getenv("GOMEMLIMIT") == "" {
		debug.SetGCPercent(400)
		debug.SetMemoryLimit(384 << 20)
	}
}

// printProblems writes every problem as `rigor: error: file:line:col: id:
// path: message` with its hints.
func (e *env) printProblems(w io.Writer, probs []*spec.Problem) {
	for _, p := range probs {
		var b strings.Builder
		if len(p.Pos) > 0 {
			b.WriteString(spec.FormatPos(p.Pos[0], e.wd))
			b.WriteString(": ")
		}
		if len(p.IDs) > 0 {
			b.WriteString(p.IDs[0])
			b.WriteString(": ")
		} else if p.Package != "" {
			b.WriteString(p.Package)
			b.WriteString(": ")
		}
		if p.Path != "" && !strings.HasPrefix(p.Msg, p.Path) {
			b.WriteString(p.Path)
			b.WriteString(": ")
		}
		b.WriteString(p.Msg)
		if len(p.Pos) > 1 {
			var also []string
			for _, x := range p.Pos[1:] {
				also = append(also, spec.FormatPos(x, e.wd))
			}
			fmt.Fprintf(&b, " (see also %s)", strings.Join(also, ", "))
		}
		if len(p.IDs) > 1 {
			fmt.Fprintf(&b, " (also in %s)", strings.Join(p.IDs[1:], ", "))
		}
		fmt.Fprintf(w, "rigor: error: %s\n", b.String())
		for _, h := range p.Hints {
			fmt.Fprintf(w, "rigor: hint: %s\n", h)
		}
	}
}

// problemsError reports that experiments have errors, after they were
// printed.
func (e *env) problemsError(set *spec.Set) error {
	if len(set.Problems) == 0 {
		return nil
	}
	e.printProblems(e.stderr, set.Problems)
	broken := 0
	for _, x := range set.Experiments {
		if x.Broken {
			broken++
		}
	}
	n := len(set.Problems)
	if len(set.Experiments) == 0 {
		// Nothing could be evaluated: the errors are in the files themselves.
		fmt.Fprintf(e.stderr, "rigor: error: %d %s; no experiment could be read\n", n, plural(n, "error", "errors"))
		return quietError{code: ExitProblems}
	}
	fmt.Fprintf(e.stderr, "rigor: error: %d %s in %d of %d experiments\n", n, plural(n, "error", "errors"), broken, len(set.Experiments))
	return quietError{code: ExitProblems}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// lockedExperiment loads the experiment (or, with points, the point) an id
// names and its lock entry, refusing an unlocked or stale experiment: run,
// build and pull all need every input pinned.
func (e *env) lockedExperiment(id string, points bool) (*spec.Set, *spec.Experiment, []*spec.Point, *lock.Entry, error) {
	return e.lockedExperimentStale(id, points, false)
}

// lockedExperimentStale is lockedExperiment; with missingOK a lock that is
// stale only because its local model files are missing is accepted
// (`rigor archive pull` brings them, checked against the lock).
func (e *env) lockedExperimentStale(id string, points, missingOK bool) (*spec.Set, *spec.Experiment, []*spec.Point, *lock.Entry, error) {
	set, x, pts, err := e.findOne(id)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	if x.ID != id && !points {
		return nil, nil, nil, nil, withHint(fmt.Errorf("%q is a point; this command takes an experiment id", id), "use "+x.ID)
	}
	f, err := lock.Read(set.Root, x.Package)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil, nil, nil, withHint(fmt.Errorf("%s is not locked (no %s)", x.ID, filepath.ToSlash(relTo(lock.Path(set.Root, x.Package), e.wd))), "run 'rigor lock "+x.ID+"'")
	}
	if err != nil {
		var pe *lock.ParseError
		if errors.As(err, &pe) {
			return nil, nil, nil, nil, withHint(err, pe.Hint())
		}
		return nil, nil, nil, nil, err
	}
	entry := f.Experiments[x.ID]
	if entry == nil {
		return nil, nil, nil, nil, withHint(fmt.Errorf("%s is not locked (no entry in %s)", x.ID, filepath.ToSlash(relTo(lock.Path(set.Root, x.Package), e.wd))), "run 'rigor lock "+x.ID+"'")
	}
	for _, s := range lock.CheckWith(set, lock.CheckOptions{Cache: e.cfg().Cache}) {
		if s.ID == x.ID && !(missingOK && onlyMissing(s.Reasons)) {
			return nil, nil, nil, nil, withHint(fmt.Errorf("the lock of %s is stale: %s", x.ID, strings.Join(s.Reasons, "; ")), "run 'rigor lock "+x.ID+"' to re-resolve it")
		}
	}
	return set, x, pts, entry, nil
}

// printJSON writes v to stdout as indented JSON, without HTML escaping (a
// constraint reads >=32, not \u003e=32).
func (e *env) printJSON(v any) error {
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.Slice && rv.IsNil() {
		v = []struct{}{} // an empty list is [] to a JSON reader, never null
	}
	enc := json.NewEncoder(e.stdout)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// onlyMissing says whether every reason a lock is stale is a missing
// model file.
func onlyMissing(reasons []string) bool {
	for _, r := range reasons {
		if !strings.HasPrefix(r, "model file ") || !strings.HasSuffix(r, " is missing") {
			return false
		}
	}
	return len(reasons) > 0
}
