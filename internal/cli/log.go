package cli

import (
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/term"

	"github.com/rigorbench/rigor/internal/compare"
	reportsite "github.com/rigorbench/rigor/internal/report"
	"github.com/rigorbench/rigor/internal/report/text"
	"github.com/rigorbench/rigor/internal/results"
)

type logCmd struct {
	ID   string `arg:"" name:"id" help:"An experiment or point id, optionally @REV."`
	JSON bool   `help:"Print the history as JSON."`
	Plot string `placeholder:"FILE" help:"Also draw the key metrics over time, with interval bars, drift markers and failed runs, into FILE (.svg or .png)."`
	Wide bool   `help:"Print every column, however wide (by default the table fits the terminal, or $COLUMNS)."`
}

func (logCmd) Help() string {
	return `Shows an experiment's runs over time, in the order they started: date,
rig, engine commit, status (and each run's round, k/K, when its invocation
had several) and the key metrics with their spread, with a marker where
something drifted between two runs (the lock: engine commit, patches, model
files; the rig on the same host; the spec of the same point), and a small
chart of tokSOut per point. ID@REV shows the history as committed at a git
revision. --plot FILE draws each key metric over time (each run's mean
with its 95% interval, dashed lines at drift, crosses at failed runs) into
an SVG or PNG file.

When the experiment measures quality (quality.measure), a speed-vs-quality
table follows: each point's latest ok run, of it and of the experiments of
its package measured against the same baseline, its speed (the primary
output rate) with its interval, its mean KL divergence from the baseline
with its interval, same top token %, PPL ratio, and "pareto" on the points
no other point beats on both speed and KLD (by the means; the baseline is
on the front by definition). --json has it as "quality".

Examples:
  rigor log example/smoke
  rigor log 'example/smokeBatch[b=16]'
  rigor log example/smoke@HEAD~1 --json
  rigor log example/smoke --plot smoke.png`
}

func (c *logCmd) Run(e *env) error {
	if c.Plot != "" {
		if err := checkPlotPath(c.Plot); err != nil {
			return err
		}
	}
	limitListingMemory()
	store, err := e.openStore()
	if err != nil {
		return err
	}
	if _, kind, _ := results.ParseRef(c.ID); kind != results.RefExperiment && kind != results.RefPoint {
		return withHint(fmt.Errorf("%q is not an experiment or point id", c.ID), "rigor log takes an experiment id such as example/smoke; 'rigor results' lists run ids and files")
	}
	sums, runs, err := c.history(e, store)
	if err != nil {
		return err
	}
	var h *compare.History
	if runs != nil {
		h = compare.Log(runs)
	} else if h, err = compare.LogSummaries(sums, func(x *results.Summary) (*results.Run, error) { return results.Load(x.Path) }); err != nil {
		return err
	}
	if h.Quality, err = c.speedQuality(e, store, sums, runs); err != nil {
		return err
	}
	if c.JSON {
		err = text.WriteLogJSON(e.stdout, h)
	} else {
		if fit := fitWidth(e.stdout); fit > 0 && !c.Wide {
			err = text.WriteLogTextFit(e.stdout, h, fit)
		} else {
			err = text.WriteLogText(e.stdout, h, textWidth(e.stdout))
		}
	}
	if err != nil || c.Plot == "" {
		return err
	}
	if runs == nil {
		// The figure reads every run's samples and directions: the
		// records are read now.
		for _, x := range sums {
			r, err := results.Load(x.Path)
			if err != nil {
				return err
			}
			runs = append(runs, *r)
		}
	}
	f := reportsite.HistoryFigure(h, runs)
	if len(f.Plots) == 0 {
		return withHint(fmt.Errorf("--plot %s: no run of %s recorded a metric", c.Plot, c.ID), "'rigor results "+c.ID+"' shows the runs and their status")
	}
	return writePlot(e, c.Plot, f)
}

// history returns the runs to show: in the working tree their summaries
// with details from the index (runs nil), at a git revision the records.
func (c *logCmd) history(e *env, store *results.Store) ([]*results.Summary, []results.Run, error) {
	if id, kind, rev := results.ParseRef(c.ID); rev == "" {
		f := results.Filter{Experiment: id}
		if kind == results.RefPoint {
			f.Experiment, f.Point = id[:strings.IndexByte(id, '[')], id
		}
		if err := results.CheckExperimentID(f.Experiment); err != nil {
			return nil, nil, err
		}
		sums, warnings, err := store.Details(f)
		if err != nil {
			return nil, nil, err
		}
		if len(sums) > 0 {
			e.warn(warnings)
			return sums, nil, nil
		}
		// Nothing recorded: Resolve says what is missing, with its hints.
	}
	sel, err := e.resolveRef(store, c.ID)
	if err != nil {
		return nil, nil, err
	}
	e.warn(sel.Warnings)
	runs := make([]results.Run, len(sel.Runs))
	for i, r := range sel.Runs {
		runs[i] = *r
	}
	return nil, runs, nil
}

// speedQuality is the speed-vs-quality view of the experiment logged,
// when the latest ok run of one of its points measured quality: its
// points and those of its package's experiments measured against the
// same baseline (vet keeps a baseline in its package), each point's
// latest ok run. Only those runs' records are read. At a revision (runs
// set) the view holds the experiment's own points only.
func (c *logCmd) speedQuality(e *env, store *results.Store, sums []*results.Summary, runs []results.Run) (*compare.SpeedQuality, error) {
	id, _, _ := results.ParseRef(c.ID)
	if i := strings.IndexByte(id, '['); i >= 0 {
		id = id[:i]
	}
	var own []*results.Run
	if runs != nil {
		for i := range runs {
			own = append(own, &runs[i])
		}
		return compare.SpeedQualityOf(own, id), nil
	}
	if c.ID != id {
		// A point's log: the view is its experiment's.
		all, warnings, err := store.Summaries(results.Filter{Experiment: id})
		if err != nil {
			return nil, err
		}
		e.warn(warnings)
		sums = all
	}
	paths := func(xs []*results.Summary) []string {
		var out []string
		for _, x := range results.LatestSummaries(xs) {
			out = append(out, x.Path)
		}
		return out
	}
	own, warnings := store.LoadFiles(paths(sums))
	e.warn(warnings)
	if compare.SpeedQualityOf(own, id) == nil || !strings.Contains(id, "/") {
		return compare.SpeedQualityOf(own, id), nil
	}
	pkg, warnings, err := store.Summaries(results.Filter{Package: path.Dir(id)})
	if err != nil {
		return nil, err
	}
	e.warn(warnings)
	pkg = slices.DeleteFunc(pkg, func(x *results.Summary) bool { return x.Experiment == id })
	peers, warnings := store.LoadFiles(paths(pkg))
	e.warn(warnings)
	return compare.SpeedQualityOf(append(own, peers...), id), nil
}

// fitWidth is the width a table should fit: $COLUMNS when set, else the
// terminal's; 0 off a terminal (a pipe or a file gets every column).
func fitWidth(w io.Writer) int {
	if n, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil && n > 20 {
		return n
	}
	if f, ok := termFile(w); ok {
		if cols, _, err := term.GetSize(int(f.Fd())); err == nil && cols > 20 {
			return cols
		}
	}
	return 0
}
