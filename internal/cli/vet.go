package cli

import (
	"errors"
	"fmt"

	"github.com/rigorbench/rigor/engine"
	"github.com/rigorbench/rigor/engine/all"
	"github.com/rigorbench/rigor/internal/spec"
)

// checkPlan plans every point of an experiment, so vet reports what the
// engine would refuse (spec.Options.Check: it runs while the experiment's
// CUE values are there to place the problem).
func checkPlan(set *spec.Set, x *spec.Experiment) {
	for _, p := range x.Points {
		if _, err := all.Plan(p, engine.Inputs{}); err != nil {
			var re *engine.ReservedArgError
			if errors.As(err, &re) {
				set.AddProblem(x, "extraArgs", err.Error(), "remove "+re.Arg+" from extraArgs: rigor sets it from the experiment")
			} else {
				set.AddProblem(x, "", err.Error())
			}
			return
		}
	}
}

type vetCmd struct {
	Patterns []string `arg:"" optional:"" name:"pattern" help:"Experiment ids, packages or globs (default: all)."`
}

func (vetCmd) Help() string {
	return `Every error of every experiment is reported once, with its file:line:col,
and with a hint where a common mistake is recognised. One broken
experiment never hides the others. Exit status 1 when there is any error.

Examples:
  rigor vet
  rigor vet minimax-m27-b70
  rigor vet 'minimax-m27-b70/kv*'`
}

func (c *vetCmd) Run(e *env) error {
	set, err := e.loadSet(c.Patterns)
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
	fmt.Fprintf(e.stderr, "rigor: %d %s, %d %s: ok\n", len(set.Experiments), plural(len(set.Experiments), "experiment", "experiments"), points, plural(points, "point", "points"))
	return nil
}
