package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/format"
	cuejson "cuelang.org/go/encoding/json"

	"github.com/rigorbench/rigor/internal/engine"
	"github.com/rigorbench/rigor/internal/lock"
	"github.com/rigorbench/rigor/internal/run"
	"github.com/rigorbench/rigor/internal/spec"
)

type showCmd struct {
	ID   string `arg:"" name:"id" help:"An experiment or point id, e.g. example/smokeBatch[b=16]."`
	JSON bool   `help:"Print the configuration and the plan as JSON."`
	Plan bool   `help:"Print only the plan."`
}

func (showCmd) Help() string {
	return `Prints the effective configuration of an experiment or point (after
unification and defaults), its #requires, and the exact plan a run would
execute: every process (rpc-server workers, then the bench), its argv, its
environment and its working directory, exactly as 'rigor run ID' (and
'rigor run ID --dry-run') starts them for the same id. A sweep the engine
runs in one process (llama-bench -ub 16,32) is that one process; a point
of it shown alone is the process 'rigor run' of that point starts (-ub
16), followed by a note naming the sweep's one process that 'rigor run'
of the whole experiment measures it in. Once the experiment is locked, the
model's path is the locked one and the engine's is its cached build or
install, when there is one; paths only a lock, a build or a run can fill
are shown as placeholders: <engine>, <synthetic model>, <run>.

Examples:
  rigor show example/smoke
  rigor show 'example/smokeBatch[b=16]' --plan
  rigor show example/smokeLong --json`
}

type showPoint struct {
	ID     string          `json:"id"`
	Swept  map[string]any  `json:"swept,omitempty"`
	Digest string          `json:"specDigest"`
	Config json.RawMessage `json:"config"`
	Plan   *engine.Plan    `json:"plan"`
	// RunsWith are the points measured by the same process as this one
	// (a sweep the engine runs in one process), this one among them.
	RunsWith []string `json:"runsWith,omitempty"`
	// Sweep is, for a point shown alone, the process of its sweep that
	// 'rigor run' of the whole experiment measures it in instead.
	Sweep *showSweep `json:"sweep,omitempty"`
}

// showSweep is the one process a run of the whole experiment measures a
// point in, with the other points of the sweep.
type showSweep struct {
	Run      string       `json:"run"`
	RunsWith []string     `json:"runsWith"`
	Plan     *engine.Plan `json:"plan"`
}

type showOut struct {
	ID       string `json:"id"`
	Requires string `json:"requires,omitempty"`
	// SpecDigest is the experiment's digest as its lockfile pins it: every
	// point's configuration and #requires.
	SpecDigest string      `json:"specDigest"`
	Points     []showPoint `json:"points"`
}

// findOne loads the module and returns the experiment and points an id
// names: one experiment, and one point when the id names a point.
func (e *env) findOne(id string) (*spec.Set, *spec.Experiment, []*spec.Point, error) {
	if strings.ContainsAny(id, "*?") {
		return nil, nil, nil, withHint(fmt.Errorf("%q is a pattern; this command takes one experiment id", id), "'rigor list' shows the ids")
	}
	expID, _ := spec.SplitPointID(id)
	set, err := e.loadSet([]string{id})
	if err != nil {
		return nil, nil, nil, err
	}
	var x *spec.Experiment
	for _, c := range set.Experiments {
		if c.ID == expID {
			x = c
		}
	}
	if x == nil {
		ids := []string{}
		for _, c := range set.Experiments {
			ids = append(ids, c.ID)
		}
		return nil, nil, nil, withHint(fmt.Errorf("%q is a package, not an experiment", id), "experiments in it: "+strings.Join(ids, ", "))
	}
	if x.Broken {
		var mine []*spec.Problem
		for _, p := range set.Problems {
			for _, pid := range p.IDs {
				if pid == x.ID {
					mine = append(mine, p)
					break
				}
			}
		}
		e.printProblems(e.stderr, mine)
		return nil, nil, nil, withHint(fmt.Errorf("%s has errors", x.ID), "fix them first: 'rigor vet "+x.ID+"'")
	}
	points := x.Points
	if id != expID {
		points = nil
		for _, p := range x.Points {
			if p.ID == id || samePoint(p, id) {
				points = append(points, p)
			}
		}
		if len(points) == 0 {
			var ids []string
			for _, p := range x.Points {
				ids = append(ids, p.ID)
			}
			return nil, nil, nil, withHint(fmt.Errorf("%s has no point %q", x.ID, id), "its points: "+strings.Join(ids, ", "))
		}
	}
	return set, x, points, nil
}

// samePoint matches "exp[ub=16, t=4]" written with spaces or in another
// axis order.
func samePoint(p *spec.Point, id string) bool {
	_, want := spec.SplitPointID(id)
	var parts []string
	for _, s := range strings.Split(want, ",") {
		parts = append(parts, strings.TrimSpace(s))
	}
	var have []string
	for _, a := range p.Axes {
		have = append(have, a.Label())
	}
	sort.Strings(parts)
	sort.Strings(have)
	return strings.Join(parts, ",") == strings.Join(have, ",")
}

func (c *showCmd) Run(e *env) error {
	set, x, points, err := e.findOne(c.ID)
	if err != nil {
		return err
	}
	in := e.lockedInputs(set.Root, x)
	out := showOut{ID: x.ID}
	out.Requires = strings.Join(x.RequiresLines, "\n")
	out.SpecDigest = lock.SpecDigest(x)
	// The plans are those 'rigor run ID' starts for this very id: a sweep
	// the engine runs in one process (llama-bench -ub 16,32) is one plan;
	// a point of it alone is a process of its own (-ub 16), and the
	// process 'rigor run X' would measure it in is named beside it.
	groups, err := planGroups(x, points, in)
	if err != nil {
		return err
	}
	groupOf := groupIndex(groups)
	var whole []run.DryPlan
	if len(points) < len(x.Points) {
		if whole, err = planGroups(x, x.Points, in); err != nil {
			return err
		}
	}
	wholeOf := groupIndex(whole)
	for _, p := range points {
		g := groups[groupOf[p]]
		sp := showPoint{ID: p.ID, Swept: p.SweptMap(), Digest: p.Digest, Config: p.SpecJSON(), Plan: g.Plan, RunsWith: pointIDs(g.Points)}
		if i, ok := wholeOf[p]; ok && len(whole[i].Points) > 1 {
			sp.Sweep = &showSweep{Run: x.ID, RunsWith: pointIDs(whole[i].Points), Plan: whole[i].Plan}
		}
		out.Points = append(out.Points, sp)
	}
	if c.JSON {
		return e.printJSON(out)
	}
	w := e.stdout
	for i, sp := range out.Points {
		if i > 0 && (!c.Plan || groupOf[points[i-1]] != groupOf[points[i]]) {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "# %s\n", sp.ID)
		if !c.Plan {
			fmt.Fprintf(w, "%s\n", formatJSON(points[i].CanonicalJSON))
			for _, line := range strings.Split(out.Requires, "\n") {
				if line != "" {
					fmt.Fprintf(w, "#requires: %s\n", line)
				}
			}
		}
		// A plan several points share is printed once, after the last of
		// them shown.
		gi := groupOf[points[i]]
		if i+1 < len(points) && groupOf[points[i+1]] == gi {
			continue
		}
		if !c.Plan {
			fmt.Fprintf(w, "\n# plan (spec digest %s, as the lockfile pins it)\n", out.SpecDigest)
		}
		if n := len(sp.RunsWith); n > 0 {
			fmt.Fprintf(w, "# %d points in one process, as 'rigor run %s' starts it: %s\n", n, x.ID, strings.Join(sp.RunsWith, ", "))
		}
		if in.Model != "" && in.BinDir == "" {
			fmt.Fprintf(w, "# <engine> is built or installed by the first run (rigor build prepares it)\n")
		}
		writePlan(w, sp.Plan)
		if sw := sp.Sweep; sw != nil {
			// The processes that differ (the bench; workers are the same).
			same := map[string]bool{}
			for _, proc := range sp.Plan.Processes {
				same[proc.Name+"\x00"+proc.Shell()] = true
			}
			fmt.Fprintf(w, "# 'rigor run %s' measures this point in one process with the other %d points of its sweep instead:\n", sw.Run, len(sw.RunsWith)-1)
			for _, proc := range sw.Plan.Processes {
				if !same[proc.Name+"\x00"+proc.Shell()] {
					fmt.Fprintf(w, "#   %s: %s\n", proc.Name, proc.Shell())
				}
			}
		}
	}
	return nil
}

// planGroups plans the executions of points as a run of them makes them.
func planGroups(x *spec.Experiment, points []*spec.Point, in engine.Inputs) ([]run.DryPlan, error) {
	groups, err := run.PlanGroups(x, points, in)
	if err != nil {
		var re *engine.ReservedArgError
		if errors.As(err, &re) {
			return nil, withHint(err, "remove it from extraArgs; rigor sets it from the experiment")
		}
		return nil, err
	}
	return groups, nil
}

// groupIndex maps each point to the index of its execution.
func groupIndex(groups []run.DryPlan) map[*spec.Point]int {
	of := map[*spec.Point]int{}
	for i, g := range groups {
		for _, p := range g.Points {
			of[p] = i
		}
	}
	return of
}

// pointIDs are the ids of the points of a shared process; none for a
// process of one point.
func pointIDs(points []*spec.Point) []string {
	if len(points) < 2 {
		return nil
	}
	var ids []string
	for _, p := range points {
		ids = append(ids, p.ID)
	}
	return ids
}

// lockedInputs returns the paths a run of x would use, as far as they are
// known without building, installing or fetching: the locked model and
// an engine already in the cache. Nothing when x has no current lock (the
// plan then shows placeholders).
func (e *env) lockedInputs(root string, x *spec.Experiment) engine.Inputs {
	f, err := lock.Read(root, x.Package)
	if err != nil {
		return engine.Inputs{}
	}
	entry := f.Experiments[x.ID]
	if entry == nil || entry.SpecDigest != lock.SpecDigest(x) {
		return engine.Inputs{}
	}
	r := e.runner(root)
	r.Offline = true
	return r.CachedInputs(context.Background(), x, entry)
}

// writePlan prints each process as a shell line people can read and copy.
func writePlan(w io.Writer, plan *engine.Plan) {
	for _, p := range plan.Processes {
		head := p.Name
		if p.ReadyAddr != "" {
			head += fmt.Sprintf(" (%s, ready when %s accepts connections)", p.Role, p.ReadyAddr)
		} else {
			head += fmt.Sprintf(" (%s)", p.Role)
		}
		fmt.Fprintf(w, "%s:\n", head)
		if p.Dir != "" {
			fmt.Fprintf(w, "  cd %s\n", engine.Quote(p.Dir))
		}
		if len(p.PassEnv) > 0 {
			fmt.Fprintf(w, "  # passed from the caller: %s\n", strings.Join(p.PassEnv, " "))
		}
		fmt.Fprintf(w, "  %s\n", p.Shell())
	}
}

// formatJSON renders a point's canonical JSON (sorted keys, so the output
// does not depend on how the files are laid out) as CUE source, without
// empty lists and structs.
func formatJSON(b []byte) string {
	expr, err := cuejson.Extract("config", b)
	if err != nil {
		return string(b)
	}
	f := &ast.File{}
	if st, ok := expr.(*ast.StructLit); ok {
		f.Decls = st.Elts
	}
	out, err := format.Node(pruneEmpty(f), format.Simplify())
	if err != nil {
		return string(b)
	}
	return strings.TrimSpace(string(out))
}

// pruneEmpty drops fields whose value is an empty list or struct.
func pruneEmpty(n ast.Node) ast.Node {
	var prune func(n ast.Node)
	prune = func(n ast.Node) {
		var elts *[]ast.Decl
		switch x := n.(type) {
		case *ast.StructLit:
			elts = &x.Elts
		case *ast.File:
			elts = &x.Decls
		default:
			return
		}
		out := (*elts)[:0]
		for _, d := range *elts {
			if f, ok := d.(*ast.Field); ok {
				prune(f.Value)
				switch val := f.Value.(type) {
				case *ast.ListLit:
					if len(val.Elts) == 0 {
						continue
					}
				case *ast.StructLit:
					if len(val.Elts) == 0 {
						continue
					}
				}
			}
			out = append(out, d)
		}
		*elts = out
	}
	prune(n)
	return n
}
