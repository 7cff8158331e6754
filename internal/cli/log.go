package cli

import (
	"fmt"

	"github.com/rigorbench/rigor/internal/compare"
	reportsite "github.com/rigorbench/rigor/internal/report"
	"github.com/rigorbench/rigor/internal/results"
)

type logCmd struct {
	ID   string `arg:"" name:"id" help:"An experiment or point id, optionally @REV."`
	JSON bool   `help:"Print the history as JSON."`
	Plot string `placeholder:"FILE" help:"Also draw the key metrics over time, with interval bars, drift markers and failed runs, into FILE (.svg or .png)."`
}

func (logCmd) Help() string {
	return `Shows an experiment's runs over time, oldest first: date, rig, engine
commit, status and the key metrics with their spread, with a marker where
something drifted between two runs (the lock: engine commit, patches, model
files; the rig on the same host; the spec of the same point), and a small
chart of tokSOut per point. ID@REV shows the history as committed at a git
revision. --plot FILE draws each key metric over time (each run's mean
with its 95% interval, dashed lines at drift, crosses at failed runs) into
an SVG or PNG file.

Examples:
  rigor log minimax-m27-b70/baseline
  rigor log 'minimax-m27-b70/ubSweep[ub=16]'
  rigor log minimax-m27-b70/baseline@HEAD~10 --json
  rigor log minimax-m27-b70/baseline --plot baseline.png`
}

func (c *logCmd) Run(e *env) error {
	if c.Plot != "" {
		if err := checkPlotPath(c.Plot); err != nil {
			return err
		}
	}
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
		err = compare.WriteLogJSON(e.stdout, h)
	} else {
		err = compare.WriteLogText(e.stdout, h, textWidth(e.stdout))
	}
	if err != nil || c.Plot == "" {
		return err
	}
	f := reportsite.HistoryFigure(h, runs)
	if len(f.Plots) == 0 {
		return withHint(fmt.Errorf("--plot %s: no run of %s recorded a metric", c.Plot, c.ID), "'rigor results "+c.ID+"' shows the runs and their status")
	}
	return writePlot(e, c.Plot, f)
}
