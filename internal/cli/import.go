package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"time"

	"github.com/rigorbench/rigor/internal/interop"
	"github.com/rigorbench/rigor/internal/results"
	"github.com/rigorbench/rigor/internal/spec"
)

type importCmd struct {
	Files      []string `arg:"" name:"file" help:"Files to import: seed summaries, LocalMaxxing speed tests, local-ai-registry v1 records, llama-bench JSON or JSONL output."`
	Experiment string   `short:"e" placeholder:"ID" help:"Link every run of the files to this experiment or point id (required for llama-bench output)."`
	Format     string   `enum:",seed-summary,localmaxxing,registry-v1,llama-bench-json" default:"" help:"Read the files as this format instead of detecting it (seed-summary, localmaxxing, registry-v1, llama-bench-json)."`
	DryRun     bool     `help:"Check the files and print what would be recorded, without writing."`
	NoCommit   bool     `help:"Write the records but do not commit them to git."`
	JSON       bool     `help:"Print the written records' paths and ids as JSON."`
}

func (importCmd) Help() string {
	return `Brings existing results into results/ as run records linked to experiments:
seed summaries (a baseline and its runs, failed ones included), LocalMaxxing
speed-test JSON, local-ai-registry v1 records and llama-bench -o json/jsonl
output. Each record keeps every figure and raw sample, its provenance (the
file, its sha256, the source's own label and id) and the list of what the
source cannot prove (a short engine commit, a branch name for a revision, a
model path without a hash). Runs are linked by --experiment, else by the
experiments' labels field (which holds the sources' run labels), else, for
LocalMaxxing, by the one experiment with the same model, engine and
quantization. Every file is read and checked before anything is written: an
error in one file imports nothing. A run already imported into the same experiment
(same file sha256 and label) is skipped. Secrets in commands and environments are redacted.

Examples:
  rigor import run.json --experiment example/smokeLong --dry-run
  rigor import run.json -e example/smokeLong

(run.json: a local-ai-registry record, as 'rigor export ID --to registry'
writes one; a seed summary, a LocalMaxxing speed test or llama-bench's
-o jsonl output is imported the same way.)`
}

type importedOut struct {
	Path       string `json:"path"`
	ID         string `json:"id"`
	Experiment string `json:"experiment"`
	Point      string `json:"point"`
	Label      string `json:"label,omitempty"`
	Status     string `json:"status"`
}

func (c *importCmd) Run(e *env) error {
	root, err := spec.FindRoot(e.wd)
	if err != nil {
		return err
	}
	opts, err := c.options(e, root)
	if err != nil {
		return err
	}
	store := e.store(root)
	all, from, err := c.read(e, root, opts)
	if err != nil {
		return err
	}
	todo, skipped, err := notImported(e, store, all, from)
	if err != nil {
		return err
	}
	var outs []importedOut
	rec := &results.Recorder{Store: store}
	for _, im := range todo {
		r := im.Run
		path := filepath.Join(results.Dir, filepath.FromSlash(r.Experiment), r.ID+".json")
		if !c.DryRun {
			p, err := rec.Record(r, im.Raw)
			if err != nil {
				return err
			}
			if rel, err := filepath.Rel(root, p); err == nil {
				path = rel
			}
		}
		outs = append(outs, importedOut{Path: filepath.ToSlash(path), ID: r.ID, Experiment: r.Experiment, Point: r.Point, Label: r.Provenance.Label, Status: r.Status})
	}
	var commitErr error
	if len(rec.Recorded()) > 0 && !c.NoCommit {
		var names []string
		for _, f := range c.Files {
			names = append(names, filepath.Base(f))
		}
		msg := fmt.Sprintf("rigor import %s: %d %s", strings.Join(names, " "), len(outs), plural(len(outs), "run", "runs"))
		if err := e.commitRecorded(rec, msg, "the imported records are"); err != nil {
			commitErr = notCommitted("the imported records are", err)
		}
	}
	if err := c.print(e, outs, skipped); err != nil {
		return err
	}
	return commitErr
}

// options are the import's options: the experiments of the module that
// records may go to, and the ids they may take.
func (c *importCmd) options(e *env, root string) (interop.ImportOptions, error) {
	set, err := e.loadSet(nil)
	if err != nil {
		return interop.ImportOptions{}, err
	}
	ids, _ := spec.AllIDs(root)
	var exps []*spec.Experiment
	for _, x := range set.Experiments {
		if !x.Broken {
			exps = append(exps, x)
			continue
		}
		if want, _ := spec.SplitPointID(c.Experiment); want == x.ID {
			return interop.ImportOptions{}, withHint(fmt.Errorf("%s has errors", x.ID), "fix them first: 'rigor vet "+x.ID+"'")
		}
	}
	if c.Experiment != "" {
		if err := spec.ValidatePattern(c.Experiment); err != nil {
			return interop.ImportOptions{}, err
		}
	}
	return interop.ImportOptions{Format: c.Format, Experiment: c.Experiment, Experiments: exps, IDs: ids, Now: time.Now().UTC().Truncate(time.Second)}, nil
}

// read reads and converts every file, and returns the runs with the file
// each came from.
func (c *importCmd) read(e *env, root string, opts interop.ImportOptions) ([]interop.Imported, []string, error) {
	var all []interop.Imported
	var from []string // the file each of all came from
	for _, f := range c.Files {
		// Read in bounded memory; what is not JSON fails from its first
		// bytes.
		data, err := interop.ReadFile(f)
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return nil, nil, fmt.Errorf("importing %s: %w", f, pe.Err)
		} else if err != nil {
			return nil, nil, importHint(&interop.FileError{File: f, Err: err})
		}
		out, err := interop.Import(recordedPath(root, e.wd, f), data, opts)
		if err != nil {
			// Errors name the file as the user gave it.
			if fe := (*interop.FileError)(nil); errors.As(err, &fe) {
				fe.File = f
			}
			return nil, nil, importHint(err)
		}
		for _, im := range out {
			all = append(all, im)
			from = append(from, f)
		}
	}
	return all, from, nil
}

// notImported leaves out the runs imported before into the experiments
// they go to, by source hash and label, from the results index (a stat
// per record of those experiments, no decoding): the check costs the same
// in a repository of a hundred records or of a hundred thousand. It
// returns the runs to import and how many were left out.
func notImported(e *env, store *results.Store, all []interop.Imported, from []string) ([]interop.Imported, int, error) {
	var experiments []string
	for _, im := range all {
		experiments = append(experiments, im.Run.Experiment)
	}
	done := map[string]string{}
	if len(experiments) > 0 {
		var err error
		if done, _, err = store.Imported(experiments...); err != nil {
			return nil, 0, err
		}
	}
	var todo []interop.Imported
	skipped := 0
	for i, im := range all {
		key := im.Run.Provenance.SHA256 + "\x00" + im.Run.Provenance.Label
		if prev, ok := done[key]; ok {
			what := im.Run.Provenance.Label
			if what == "" {
				what = "the record"
			}
			fmt.Fprintf(e.stderr, "rigor: skipping %q of %s: already imported as %s\n", what, from[i], prev)
			skipped++
			continue
		}
		done[key] = filepath.ToSlash(filepath.Join(results.Dir, im.Run.Experiment, im.Run.ID+".json"))
		im.Run.RigorVersion = Version
		todo = append(todo, im)
	}
	return todo, skipped, nil
}

// print lists the runs imported (as JSON with --json) and counts them.
func (c *importCmd) print(e *env, outs []importedOut, skipped int) error {
	if c.JSON {
		if outs == nil {
			outs = []importedOut{}
		}
		return e.printJSON(outs)
	}
	for _, o := range outs {
		line := o.Path + "\t" + o.Status
		if o.Label != "" {
			line += "\t" + o.Label
		}
		fmt.Fprintln(e.stdout, line)
	}
	verb := "imported"
	if c.DryRun {
		verb = "would import"
	}
	fmt.Fprintf(e.stderr, "rigor: %s %d %s from %d %s", verb, len(outs), plural(len(outs), "run", "runs"), len(c.Files), plural(len(c.Files), "file", "files"))
	if skipped > 0 {
		fmt.Fprintf(e.stderr, " (%d already imported)", skipped)
	}
	fmt.Fprintln(e.stderr)
	return nil
}

// recordedPath is the path an import records: relative to the module root
// when the file is inside it, else the file's name.
func recordedPath(root, wd, f string) string {
	abs := f
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(wd, f)
	}
	abs = filepath.Clean(abs)
	if rel, err := filepath.Rel(root, abs); err == nil && filepath.IsLocal(rel) {
		return filepath.ToSlash(rel)
	}
	// A record travels through git to other machines: a file outside the
	// module is named by its base name (its sha256 is recorded beside it),
	// never by a path of this machine.
	return filepath.Base(abs)
}

func importHint(err error) error {
	var nm *spec.NoMatchError
	if errors.As(err, &nm) {
		return err
	}
	switch {
	case errors.Is(err, interop.ErrUnknownFormat):
		return withHint(err, "rigor imports "+strings.Join(interop.ImportFormats, ", ")+"; name one with --format if detection fails")
	case errors.Is(err, interop.ErrTruncated):
		return withHint(err, "nothing was imported; re-export or re-run to get the whole file")
	}
	var le *interop.LinkError
	if errors.As(err, &le) {
		return withHint(err, "'rigor list' shows the experiment ids")
	}
	return err
}
