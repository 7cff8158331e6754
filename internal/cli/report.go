package cli

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	reportsite "github.com/rigorbench/rigor/internal/report"
	"github.com/rigorbench/rigor/internal/results"
	"github.com/rigorbench/rigor/internal/suggest"
)

type reportCmd struct {
	Patterns []string `arg:"" optional:"" name:"pattern" help:"Experiment ids, directories of experiments, or globs ('qwen/*'); every recorded experiment when omitted."`
	Output   string   `short:"o" required:"" placeholder:"DIR" help:"Directory to write the site into (created, or replaced when it holds an earlier report)."`
	Title    string   `help:"Title of the index page." default:"rigor report"`
}

func (reportCmd) Help() string {
	return `Writes a static HTML report of the recorded runs into DIR: an index of the
experiments (last run, status, the headline metric with its 95% interval,
drift markers), a page per experiment (each metric over time with interval
bars, dashed lines where the lock, rig or spec drifted, failed runs
crossed, and by engine commit when there are several), a page per sweep (each metric against each swept value, one line
per combination of the other swept values) and a page comparing the latest
run of each point with the previous one (the configuration diff beside the
metric tables, and the samples of both sides).

Every page is a single file with its plots inline as SVG: no script, no
font or anything else fetched, so the report opens from a file, a zip or a
CI artifact with no network and no server. Each plot has a title and its
values in a table beside it. DIR must be new, empty or hold an earlier
report: the next report replaces and removes only the files listed in the
earlier one's manifest (DIR/.rigor-report), so notes added beside it stay,
and a file the earlier report did not write is never overwritten.

Examples:
  rigor report -o site
  rigor report qwen -o site
  rigor report 'qwen/ub*' -o site --title 'ub sweeps'`
}

func (c *reportCmd) Run(e *env) error {
	store, err := e.openStore()
	if err != nil {
		return err
	}
	runs, warnings, err := store.List(results.Filter{})
	if err != nil {
		return err
	}
	e.warn(warnings)
	if len(runs) == 0 {
		return withHint(fmt.Errorf("no recorded runs in %s/", results.Dir), "'rigor run ID' records a run; 'rigor import FILE' imports results kept elsewhere")
	}
	selected, missing, err := reportsite.Match(runs, c.Patterns)
	if err != nil {
		return withHint(err, "patterns are experiment ids, directories or globs such as 'qwen/*'")
	}
	if len(missing) > 0 {
		return noRecordedMatch(missing, runs)
	}
	site, err := reportsite.Build(selected, reportsite.Options{Title: c.Title, Version: Version})
	if err != nil {
		return err
	}
	if err := site.Write(c.Output); err != nil {
		var de *reportsite.DirError
		if errors.As(err, &de) {
			return withHint(err, "choose a new directory with -o, or remove this one")
		}
		var fe *reportsite.FileError
		if errors.As(err, &fe) {
			return withHint(err, fmt.Sprintf("move it out of %s, or choose a new directory with -o", fe.Dir))
		}
		return err
	}
	index := filepath.Join(c.Output, "index.html")
	fmt.Fprintf(e.stdout, "%s: %s (%d runs), %s, %s\n", index,
		count(site.Experiments, "experiment"), site.Runs, count(site.Sweeps, "sweep"), count(site.Diffs, "diff"))
	return nil
}

func count(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// noRecordedMatch says which patterns selected no recorded experiment,
// with the nearest recorded ids.
func noRecordedMatch(missing []string, runs []*results.Run) error {
	var ids []string
	for _, r := range runs {
		if !slices.Contains(ids, r.Experiment) {
			ids = append(ids, r.Experiment)
		}
	}
	q := make([]string, len(missing))
	for i, m := range missing {
		q[i] = fmt.Sprintf("%q", m)
	}
	err := fmt.Errorf("no recorded experiment matches %s", strings.Join(q, ", "))
	var hints []string
	for _, m := range missing {
		best, bestD := "", 4
		for _, id := range ids {
			if d := suggest.Distance(m, id); d < bestD {
				best, bestD = id, d
			}
		}
		if best != "" {
			hints = append(hints, "did you mean "+best+"?")
		}
	}
	hints = append(hints, "'rigor results' lists the recorded runs; patterns are experiment ids, directories or globs such as 'qwen/*'")
	return withHint(err, hints...)
}

// checkPlotPath checks a --plot file name before any work is done.
func checkPlotPath(path string) error {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".svg", ".png":
		return nil
	}
	return withHint(fmt.Errorf("--plot %s: want a file name ending in .svg or .png", path),
		"SVG scales in a browser and a pull request; PNG pastes anywhere")
}

// writePlot writes a figure to path as SVG or PNG, by its extension,
// atomically: a reader never finds half a picture.
func writePlot(e *env, path string, f *reportsite.Figure) error {
	var buf bytes.Buffer
	var err error
	if strings.EqualFold(filepath.Ext(path), ".png") {
		err = f.WritePNG(&buf)
	} else {
		err = f.WriteSVG(&buf)
	}
	if err != nil {
		return fmt.Errorf("drawing %s: %w", path, err)
	}
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(buf.Bytes()); err != nil {
		tmp.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	fmt.Fprintf(e.stderr, "rigor: plot written to %s\n", path)
	return nil
}
