package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/rigorbench/rigor/internal/interop"
	"github.com/rigorbench/rigor/internal/results"
	"github.com/rigorbench/rigor/internal/spec"
)

type exportCmd struct {
	Target string `arg:"" name:"run-or-id" help:"A run id (20260508T032753Z-8e11ad), a record file, or an experiment or point id (its latest run per point)."`
	To     string `required:"" enum:"localmaxxing,registry,markdown,csv,json" help:"Format: localmaxxing, registry, markdown, csv or json."`
}

func (exportCmd) Help() string {
	return `Writes recorded runs in a format others read, on stdout: a LocalMaxxing
speed-test JSON (localmaxxing), a local-ai-registry v1 speed sweep
(registry), or a table of every metric of the runs (markdown, csv, json).
The localmaxxing and registry formats take one run: a run id, or an
experiment or point id with one point, whose latest successful run is
exported. An export holds only what the record knows: a field LocalMaxxing
requires that the record lacks is an error naming it, a failed run is
refused, and the registry's unmeasured values are null with a fact of state
unknown. Secrets never appear. LocalMaxxing needs the model's hub id and
quantization and the hardware's class: 'rigor export ID --to localmaxxing'
takes a run of a model from the hub, not of a synthetic one.

Examples:
  rigor export example/smokeBatch --to markdown
  rigor export example/smoke --to csv
  rigor export 20261202T031143Z-7cee --to registry > run.json

(Run ids are those 'rigor results' lists.)`
}

func (c *exportCmd) Run(e *env) error {
	root, err := spec.FindRoot(e.wd)
	if err != nil {
		return err
	}
	store := results.Open(root)
	runs, err := c.resolve(root, store, e.wd)
	if err != nil {
		return err
	}
	single := c.To == interop.ExportLocalMaxxing || c.To == interop.ExportRegistry
	if single && len(runs) > 1 {
		var ids []string
		for _, r := range runs {
			ids = append(ids, r.Point+" "+r.ID)
		}
		return withHint(fmt.Errorf("%s has %d points with runs; --to %s takes one run", c.Target, len(runs), c.To), "give a point or run id: "+strings.Join(ids, ", "))
	}
	recs := make([]interop.Record, len(runs))
	for i, r := range runs {
		recs[i] = interop.Record{Run: r, Path: filepath.ToSlash(filepath.Join(results.Dir, r.Experiment, r.ID+".json"))}
		if src, err := os.ReadFile(filepath.Join(store.RawDir(r.Experiment, r.ID), interop.SourceFile)); err == nil {
			recs[i].Raw = map[string][]byte{interop.SourceFile: src}
		}
	}
	out, err := interop.Export(c.To, recs, time.Now())
	if err != nil {
		var re *interop.RefusedError
		if errors.As(err, &re) && strings.Contains(re.Reason, "does not know") {
			return withHint(err, "fill the facts by running the experiment with rigor on the rig, or export --to json")
		}
		return err
	}
	_, err = e.stdout.Write(out)
	return err
}

// resolve finds the runs a target names.
func (c *exportCmd) resolve(root string, store *results.Store, wd string) ([]*results.Run, error) {
	t := c.Target
	if strings.HasSuffix(t, ".json") {
		p := t
		if !filepath.IsAbs(p) {
			p = filepath.Join(wd, p)
		}
		if _, err := os.Stat(p); err == nil {
			r, err := results.Load(p)
			if err != nil {
				return nil, err
			}
			return []*results.Run{r}, nil
		}
	}
	if results.IsRunID(t) {
		p, err := store.Find(t)
		if err != nil {
			return nil, withHint(err, "'rigor log ID' lists an experiment's runs")
		}
		r, err := results.Load(p)
		if err != nil {
			return nil, err
		}
		return []*results.Run{r}, nil
	}
	if err := spec.ValidatePattern(t); err != nil {
		return nil, err
	}
	expID, axes := spec.SplitPointID(t)
	f := results.Filter{Experiment: expID}
	if axes != "" {
		f.Point = t
	}
	runs, _, err := store.List(f)
	if err != nil {
		return nil, err
	}
	if len(runs) == 0 {
		ids, _ := spec.AllIDs(root)
		known := false
		for _, id := range ids {
			known = known || id == expID
		}
		if !known {
			return nil, &spec.NoMatchError{Patterns: []string{t}, Suggestions: interop.Nearest(expID, ids, 3)}
		}
		return nil, withHint(fmt.Errorf("%s has no recorded runs", t), "record one with 'rigor run "+t+"' or 'rigor import FILE --experiment "+t+"'")
	}
	return results.LatestPerPoint(runs), nil
}
