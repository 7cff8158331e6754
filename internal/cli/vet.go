package cli

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/rigorbench/rigor/engine"
	"github.com/rigorbench/rigor/engine/all"
	"github.com/rigorbench/rigor/engine/nodellama"
	"github.com/rigorbench/rigor/internal/spec"
)

// checkPlan plans every point of an experiment, so vet reports what the
// engine would refuse (spec.Options.Check: it runs while the experiment's
// CUE values are there to place the problem).
func checkPlan(set *spec.Set, x *spec.Experiment) {
	if x.Spec.Engine.Family == spec.FamilyNodeLlama {
		if bad := unknownRunnerArgs(x.Spec.ExtraArgs); len(bad) > 0 {
			set.AddProblem(x, "extraArgs", fmt.Sprintf("node-llama-cpp's bench runner does not take %s: every run would fail", strings.Join(bad, ", ")),
				"the runner takes "+strings.Join(nodellama.RunnerArgs, " ")+" (each with a value); flags and bench fields set the common ones")
			return
		}
	}
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

// unknownRunnerArgs returns the options in extraArgs that rigor's
// node-llama-cpp runner would reject.
func unknownRunnerArgs(args []string) []string {
	var bad []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") || len(a) < 2 {
			continue
		}
		if slices.Contains(nodellama.RunnerArgs, a) {
			i++ // its value
			continue
		}
		bad = append(bad, a)
	}
	return bad
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
