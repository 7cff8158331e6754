package slurm

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/token"
)

// Request is what a job asks of Slurm, derived from an experiment's
// #requires by [FromRequires].
type Request struct {
	// GPUs is the number of GPUs (--gres=<gres>[:<type>]:N); 0 asks for none.
	GPUs int `json:"gpus,omitempty"`
	// GPUType is the GRES type, when the mapping names exactly one.
	GPUType string `json:"gpuType,omitempty"`
	// Gres is the GRES name of GPUs (default gpu).
	Gres string `json:"gres,omitempty"`
	// Constraint is the --constraint expression of node features.
	Constraint string `json:"constraint,omitempty"`
	// MemMB is --mem in MiB; 0 leaves Slurm's default.
	MemMB int `json:"memMB,omitempty"`
	// CPUs is --cpus-per-task; 0 leaves Slurm's default.
	CPUs int `json:"cpus,omitempty"`
	// NodeOnly lists the requirements no mapping covers: the job checks
	// them on its node, as rigor run does, and fails (recorded) when the
	// node does not meet them.
	NodeOnly []string `json:"nodeOnly,omitempty"`
}

// Args returns the request as sbatch options, in a fixed order.
func (r *Request) Args() []string {
	var out []string
	if r.GPUs > 0 {
		g := r.Gres
		if g == "" {
			g = "gpu"
		}
		if r.GPUType != "" {
			g += ":" + r.GPUType
		}
		out = append(out, fmt.Sprintf("--gres=%s:%d", g, r.GPUs))
	}
	if r.CPUs > 0 {
		out = append(out, fmt.Sprintf("--cpus-per-task=%d", r.CPUs))
	}
	if r.MemMB > 0 {
		out = append(out, fmt.Sprintf("--mem=%dM", r.MemMB))
	}
	if r.Constraint != "" {
		out = append(out, "--constraint="+r.Constraint)
	}
	return out
}

// UnmetError is a requirement that no node feature or GPU type in
// slurm.cue meets: the request would ask Slurm for nothing that exists.
type UnmetError struct {
	// Path is the requirement's path under #requires, e.g. "gpu.name".
	Path string
	// Want is the requirement as written.
	Want string
	// Pos is where the requirement is written.
	Pos token.Pos
	// Kind is "feature" or "GPU type"; Declared lists those of slurm.cue
	// that state the fact, with their values.
	Kind     string
	Declared []string
}

func (e *UnmetError) Error() string {
	return fmt.Sprintf("#requires.%s: %s: no %s in %s has a matching %s (declared: %s)", e.Path, e.Want, e.Kind, ConfigFile, e.Path, strings.Join(e.Declared, ", "))
}

// resourcePaths are the requirements that become resource requests rather
// than features.
var resourcePaths = map[string]bool{"gpu.count": true, "cpu.cores": true, "ramGB": true}

// FromRequires derives the job's request from an experiment's #requires
// (which may not exist: an empty request) and the module's mapping:
//
//   - gpu.count: its lower bound, as --gres=gpu[:type]:N;
//   - cpu.cores: its lower bound, as --cpus-per-task;
//   - ramGB: its lower bound in GiB, as --mem (the job gets that much);
//   - every other fact (gpu.name, gpu.vendor, gpu.vramGB, os, …): the
//     features of cfg whose facts meet the requirement, ORed, and the
//     requirements ANDed; for gpu facts also the GPU type of cfg.GPUTypes
//     that meets them all. A fact no feature or type states is left to the
//     job's check on its node (NodeOnly). A fact that features state but
//     none meets is an [*UnmetError]: nothing is submitted.
func FromRequires(requires cue.Value, cfg *Config) (*Request, error) {
	if cfg == nil {
		cfg = &Config{}
	}
	req := &Request{Gres: cfg.Gres}
	if !requires.Exists() {
		return req, nil
	}
	leaves := map[string]cue.Value{}
	var order []string
	collect(requires, nil, leaves, &order)

	if v, ok := leaves["gpu.count"]; ok {
		req.GPUs = int(math.Ceil(lowerBound(v, true)))
	}
	if v, ok := leaves["cpu.cores"]; ok {
		req.CPUs = int(math.Ceil(lowerBound(v, true)))
	}
	if v, ok := leaves["ramGB"]; ok {
		req.MemMB = int(math.Ceil(lowerBound(v, false) * 1024))
	}

	var sets [][]string
	var gpuPaths []string
	for _, path := range order {
		if resourcePaths[path] {
			continue
		}
		v := leaves[path]
		if strings.HasPrefix(path, "gpu.") {
			gpuPaths = append(gpuPaths, path)
		}
		declared, matched := match(cfg.features, path, v)
		if len(declared) == 0 {
			if strings.HasPrefix(path, "gpu.") && declares(cfg.gpuTypes, path) {
				continue // the GPU type carries it
			}
			req.NodeOnly = append(req.NodeOnly, path+": "+constraintText(v))
			continue
		}
		if len(matched) == 0 {
			return nil, &UnmetError{Path: path, Want: constraintText(v), Pos: v.Pos(), Kind: "feature", Declared: declared}
		}
		sets = append(sets, matched)
	}
	req.Constraint = constraint(sets)

	// The GPU type: the one type whose facts meet every gpu requirement it
	// states. Several candidates leave the type open (Slurm cannot OR GRES
	// types in one request); the features and the node's check decide.
	if req.GPUs > 0 && len(cfg.gpuTypes) > 0 {
		var fits []string
		var declaredAny []string
		for _, name := range sortedKeys(cfg.gpuTypes) {
			ok, states := true, false
			for _, path := range gpuPaths {
				f := cfg.gpuTypes[name].LookupPath(cue.ParsePath(path))
				if !f.Exists() {
					continue
				}
				states = true
				if !meets(leaves[path], f) {
					ok = false
				}
			}
			if states {
				declaredAny = append(declaredAny, name)
				if ok {
					fits = append(fits, name)
				}
			}
		}
		switch {
		case len(declaredAny) > 0 && len(fits) == 0:
			p := gpuPaths[0]
			return nil, &UnmetError{Path: p, Want: constraintText(leaves[p]), Pos: leaves[p].Pos(), Kind: "GPU type", Declared: describe(cfg.gpuTypes, p)}
		case len(fits) == 1:
			req.GPUType = fits[0]
		}
	}
	return req, nil
}

// collect gathers the leaves of a requirement struct by dotted path, in
// the order written.
func collect(v cue.Value, path []string, out map[string]cue.Value, order *[]string) {
	if v.IncompleteKind() == cue.StructKind {
		it, err := v.Fields()
		if err != nil {
			return
		}
		for it.Next() {
			collect(it.Value(), append(path[:len(path):len(path)], it.Selector().Unquoted()), out, order)
		}
		return
	}
	p := strings.Join(path, ".")
	out[p] = v
	*order = append(*order, p)
}

// match returns the features that state path (with their values) and the
// names of those whose value meets the requirement v, sorted.
func match(features map[string]cue.Value, path string, v cue.Value) (declared, matched []string) {
	for _, name := range sortedKeys(features) {
		f := features[name].LookupPath(cue.ParsePath(path))
		if !f.Exists() {
			continue
		}
		declared = append(declared, name+"="+constraintText(f))
		if meets(v, f) {
			matched = append(matched, name)
		}
	}
	return declared, matched
}

func declares(m map[string]cue.Value, path string) bool {
	for _, v := range m {
		if v.LookupPath(cue.ParsePath(path)).Exists() {
			return true
		}
	}
	return false
}

func describe(m map[string]cue.Value, path string) []string {
	var out []string
	for _, name := range sortedKeys(m) {
		if f := m[name].LookupPath(cue.ParsePath(path)); f.Exists() {
			out = append(out, name+"="+constraintText(f))
		}
	}
	return out
}

// meets reports whether the fact f satisfies the requirement req, as the
// rig check decides: their unification is concrete and valid.
func meets(req, f cue.Value) bool {
	return req.Unify(f).Validate(cue.Concrete(true)) == nil
}

// lowerBound returns the least value a numeric requirement admits: the
// value itself when concrete (or its default), the bound of >= and >, the
// largest bound of a conjunction; 0 when it has none.
func lowerBound(v cue.Value, integer bool) float64 {
	if d, ok := v.Default(); ok && d.IsConcrete() {
		v = d
	}
	if v.IsConcrete() {
		if f, err := v.Float64(); err == nil {
			return f
		}
		if i, err := v.Int64(); err == nil {
			return float64(i)
		}
	}
	op, args := v.Expr()
	switch op {
	case cue.AndOp:
		best := 0.0
		for _, a := range args {
			best = max(best, lowerBound(a, integer))
		}
		return best
	case cue.GreaterThanEqualOp, cue.GreaterThanOp:
		if len(args) != 1 {
			return 0
		}
		f, err := args[0].Float64()
		if err != nil {
			i, err := args[0].Int64()
			if err != nil {
				return 0
			}
			f = float64(i)
		}
		if op == cue.GreaterThanOp && integer {
			f = math.Floor(f) + 1
		}
		return f
	}
	return 0
}

// constraintText renders a requirement as written, on one line.
func constraintText(v cue.Value) string {
	if v.IsConcrete() {
		if b, err := v.MarshalJSON(); err == nil {
			return string(b)
		}
	}
	if op, args := v.Expr(); op == cue.AndOp {
		// Leave out the schema's type (string, int & >=0) when the
		// experiment adds a constraint of its own.
		var parts []string
		for _, a := range args {
			t := fmt.Sprint(a)
			switch t {
			case "string", "int", "number", "int & >=0", "number & >=0", ">=0", ">=1":
				continue
			}
			parts = append(parts, t)
		}
		if len(parts) > 0 {
			return strings.Join(parts, " & ")
		}
	}
	return strings.Join(strings.Fields(fmt.Sprint(v)), " ")
}

func sortedKeys(m map[string]cue.Value) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// constraint ANDs the feature sets, each an OR; a set that contains
// another is implied by it and left out, and so is a repeated set.
func constraint(sets [][]string) string {
	var clauses []string
	for i, a := range sets {
		implied := false
		for j, b := range sets {
			if i != j && subset(b, a) && (!subset(a, b) || j < i) {
				implied = true
				break
			}
		}
		if implied {
			continue
		}
		c := strings.Join(a, "|")
		if len(a) > 1 && len(sets) > 1 {
			c = "(" + c + ")"
		}
		clauses = append(clauses, c)
	}
	if len(clauses) == 1 {
		return strings.Trim(clauses[0], "()")
	}
	return strings.Join(clauses, "&")
}

// subset reports whether every name of a is in b.
func subset(a, b []string) bool {
	for _, x := range a {
		found := false
		for _, y := range b {
			if x == y {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}
