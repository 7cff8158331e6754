package cli

import (
	"fmt"

	"github.com/rigorbench/rigor/internal/compare"
	"github.com/rigorbench/rigor/internal/results"
)

type logCmd struct {
	ID   string `arg:"" name:"id" help:"An experiment or point id, optionally @REV."`
	JSON bool   `help:"Print the history as JSON."`
}

func (logCmd) Help() string {
	return `Shows an experiment's runs over time, oldest first: date, rig, engine
commit, status and the key metrics with their spread, with a marker where
something drifted between two runs (the lock: engine commit, patches, model
files; the rig on the same host; the spec of the same point), and a small
chart of tokSOut per point. ID@REV shows the history as committed at a git
revision.

Examples:
  rigor log minimax-m27-b70/baseline
  rigor log 'minimax-m27-b70/ubSweep[ub=16]'
  rigor log minimax-m27-b70/baseline@HEAD~10 --json`
}

func (c *logCmd) Run(e *env) error {
	store, err := e.openStore()
	if err != nil {
		return err
	}
	if _, kind, _ := results.ParseRef(c.ID); kind != results.RefExperiment && kind != results.RefPoint {
		return withHint(fmt.Errorf("%q is not an experiment or point id", c.ID), "rigor log takes an experiment id such as minimax-m27-b70/baseline; 'rigor results' lists run ids and files")
	}
	sel, err := e.resolveRef(store, c.ID)
	if err != nil {
		return err
	}
	e.warn(sel.Warnings)
	runs := make([]results.Run, len(sel.Runs))
	for i, r := range sel.Runs {
		runs[i] = *r
	}
	h := compare.Log(runs)
	if c.JSON {
		return compare.WriteLogJSON(e.stdout, h)
	}
	return compare.WriteLogText(e.stdout, h, textWidth(e.stdout))
}
