package cli

import (
	"errors"
	"fmt"
	"path/filepath"

	"cuelang.org/go/cue/token"

	"github.com/rigorbench/rigor/internal/engine"
	"github.com/rigorbench/rigor/internal/engine/all"
	"github.com/rigorbench/rigor/internal/spec"
)

// checkPlan plans every point of an experiment, so vet reports what the
// engine would refuse (spec.Options.Check: it runs while the experiment's
// CUE values are there to place the problem).
func checkPlan(set *spec.Set, x *spec.Experiment) {
	if x.Spec.Quality.Measure != nil {
		if e, err := all.Get(x.Spec.Engine.Family); err == nil {
			qe, ok := engine.As[engine.Qualifier](e)
			if ok {
				m := x.Spec.Quality.Measure
				for _, p := range x.Points {
					var te *engine.QualityTargetError
					var fe *engine.QualityFormError
					_, err := qe.QualityPlan(p, engine.Inputs{}, engine.QualityJob{Ctx: m.Ctx, Chunks: m.Chunks, TopK: m.TopK})
					switch {
					case errors.As(err, &te):
						set.AddProblem(x, "engine.build.targets", err.Error(), fmt.Sprintf("add %q to the targets, or leave them unset", te.Program))
						return
					case errors.As(err, &fe):
						set.AddProblem(x, fe.Path, err.Error(), fe.Hint)
						return
					}
				}
			}
			if !ok {
				set.AddProblem(x, "quality.measure", fmt.Sprintf("%s does not measure quality yet: quality.measure is for llama.cpp and ik_llama.cpp (llama-perplexity), node-llama-cpp (its quality runner), vLLM and endpoints (prompt log-probabilities)", x.Spec.Engine.Family),
					"declare what the run does to quality instead (quality: {kvCache: …, tradeoff: …}), or measure it with a llama.cpp experiment of the same model")
				return
			}
		}
	}
	for _, p := range x.Points {
		if _, err := all.Plan(p, engine.Inputs{}); err != nil {
			var re *engine.ReservedArgError
			var ue *engine.UnknownArgError
			if errors.As(err, &re) {
				set.AddProblem(x, "extraArgs", err.Error(), "remove "+re.Arg+" from extraArgs: rigor sets it from the experiment")
			} else if errors.As(err, &ue) {
				set.AddProblem(x, "extraArgs", err.Error(), ue.Hint())
			} else {
				set.AddProblem(x, "", err.Error())
			}
			return
		}
	}
}

type vetCmd struct {
	Patterns []string `arg:"" optional:"" name:"pattern" help:"Experiment ids, packages or globs (default: all)."`
	JSON     bool     `help:"Print the result as JSON on stdout, each problem with its file, line and column, for editors and CI."`
}

// vetPos is a position in vet --json: the file relative to the working
// directory when inside it, line and column from 1.
type vetPos struct {
	File   string `json:"file"`
	Line   int    `json:"line"`
	Column int    `json:"column"`
}

// vetProblem is one problem in vet --json.
type vetProblem struct {
	vetPos
	Experiments []string `json:"experiments,omitempty"`
	Package     string   `json:"package,omitempty"`
	Path        string   `json:"path,omitempty"`
	Message     string   `json:"message"`
	Hints       []string `json:"hints,omitempty"`
	// Related are further positions of the problem (the other side of a
	// conflict), most relevant first.
	Related []vetPos `json:"related,omitempty"`
}

// vetOut is what vet --json prints.
type vetOut struct {
	OK          bool         `json:"ok"`
	Experiments int          `json:"experiments"`
	Points      int          `json:"points"`
	Problems    []vetProblem `json:"problems"`
}

func (e *env) vetPos(p token.Pos) vetPos {
	if !p.IsValid() {
		return vetPos{}
	}
	return vetPos{File: filepath.ToSlash(relTo(p.Filename(), e.wd)), Line: p.Line(), Column: p.Column()}
}

// printVetJSON prints set's problems as JSON; an error when there are any.
func (e *env) printVetJSON(set *spec.Set) error {
	out := vetOut{Problems: []vetProblem{}}
	if set != nil {
		out.Experiments = len(set.Experiments)
		for _, x := range set.Experiments {
			out.Points += len(x.Points)
		}
		for _, p := range set.Problems {
			vp := vetProblem{Experiments: p.IDs, Package: p.Package, Path: p.Path, Message: p.Msg, Hints: p.Hints}
			if len(p.Pos) > 0 {
				vp.vetPos = e.vetPos(p.Pos[0])
				for _, r := range p.Pos[1:] {
					vp.Related = append(vp.Related, e.vetPos(r))
				}
			}
			out.Problems = append(out.Problems, vp)
		}
	}
	out.OK = len(out.Problems) == 0
	if err := e.printJSON(out); err != nil {
		return err
	}
	if !out.OK {
		return quietError{code: ExitProblems}
	}
	return nil
}

func (vetCmd) Help() string {
	return `Every error of every experiment is reported once, with its file:line:col,
and with a hint where a common mistake is recognised. One broken
experiment never hides the others. Exit status 1 when there is any error.
--json prints {"ok", "experiments", "points", "problems": [{"file", "line",
"column", "experiments", "path", "message", "hints", "related"}]} on stdout
for editors and CI, with the same exit status.

Examples:
  rigor vet
  rigor vet example
  rigor vet 'example/smoke*'
  rigor vet --json`
}

func (c *vetCmd) Run(e *env) error {
	set, err := e.loadSetRelease(c.Patterns, true)
	if c.JSON && (err == nil || set != nil && len(set.Problems) > 0) {
		return e.printVetJSON(set)
	}
	if err != nil {
		if set != nil && len(set.Problems) > 0 {
			e.printProblems(e.stderr, set.Problems)
		}
		return err
	}
	if err := e.problemsError(set); err != nil {
		return err
	}
	points := 0
	for _, x := range set.Experiments {
		points += len(x.Points)
	}
	e.warnShortSecrets(set.Experiments)
	// What a run of each sweep starts, before it is started.
	limits, err := e.cfg().askLimits()
	if err != nil {
		return err
	}
	for _, x := range set.Experiments {
		note, err := sizeNote(x, limits)
		if err != nil {
			return err
		}
		if note != "" {
			fmt.Fprintf(e.stderr, "rigor: %s\n", note)
		}
	}
	fmt.Fprintf(e.stderr, "rigor: %d %s, %d %s: ok\n", len(set.Experiments), plural(len(set.Experiments), "experiment", "experiments"), points, plural(points, "point", "points"))
	return nil
}
