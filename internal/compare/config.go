package compare

// The configuration of a run, flattened to sorted leaves so that two runs
// can be diffed as generic trees:
//
//   - the effective spec (Run.Spec, any JSON object), with its own paths:
//     flags.nkvo, env.GGML_SYCL_…, bench.r, model.quant; its
//     documentation fields (description, notes, labels, tags) are left
//     out;
//   - what the lock resolved, as the record holds it, under lock.:
//     lock.engine.commit, lock.engine.patches[0], lock.engine.build.flavour
//     (what the engine said of the binary that ran), lock.model.revision,
//     lock.model.files."x.gguf".sha256;
//   - the values of the variables the spec passes from the caller
//     (passEnv) as the bench process got them, under passEnv.:
//     passEnv.GGML_SYCL_DEVICE; a secret one only as the keyed
//     fingerprint its record holds (results.Fingerprinter), never its
//     value;
//   - the rig under rig.: rig.gpu, rig.gpuCount, rig.driver, rig.cpu,
//     rig.kernel, rig.os, rig.toolchain.cmake (never the hostname).
//
// Arrays of scalars are one leaf (["-no-mmad","0"]), because an index-wise
// diff of argument lists reads badly; arrays holding objects are diffed by
// index. Leaf values are canonical JSON.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/rigorbench/rigor/internal/results"
	"github.com/rigorbench/rigor/internal/rig"
)

// Sections of the configuration, in the order a diff lists them.
const (
	SectionSpec = "spec"
	SectionLock = "lock"
	SectionEnv  = "env"
	SectionRig  = "rig"
)

// Change is one difference between two configurations: a leaf that has a
// different value, or exists on one side only.
type Change struct {
	// Section is SectionSpec, SectionLock, SectionEnv or SectionRig.
	Section string `json:"section"`
	// Path names the leaf: "flags.nkvo", "lock.engine.commit", "rig.driver".
	// Keys that are not plain identifiers are quoted: env."A B".
	Path string `json:"path"`
	// Old and New are the leaf's JSON values; nil when the leaf is absent
	// on that side.
	Old json.RawMessage `json:"old,omitempty"`
	New json.RawMessage `json:"new,omitempty"`
	// Points lists the points (by label) where the change applies, when it
	// does not apply to every matched point.
	Points []string `json:"points,omitempty"`
}

// String formats the change as "path: old → new", with "(absent)" for a
// missing side.
func (c Change) String() string {
	return c.Path + ": " + showValue(c.Old, 0) + " → " + showValue(c.New, 0)
}

// showValue formats a leaf for people; long hex strings (hashes, commits)
// are cut to 12 digits when short is set.
func showValue(v json.RawMessage, short int) string {
	if v == nil {
		return "(absent)"
	}
	s := string(v)
	if short > 0 {
		s = longHexRE.ReplaceAllStringFunc(s, func(h string) string { return h[:short] + "…" })
	}
	return s
}

// longHexRE matches commits and hashes.
var longHexRE = regexp.MustCompile(`[0-9a-f]{40,}`)

var hexRE = regexp.MustCompile(`^(sha256:)?[0-9a-f]{16,}$`)

type leaf struct {
	path  string
	value string // canonical JSON
}

// config is one run's flattened configuration, leaves sorted by path
// within each section, sections in order.
type config []leaf

func sectionOf(path string) string {
	switch {
	case strings.HasPrefix(path, "lock."):
		return SectionLock
	case strings.HasPrefix(path, "rig."):
		return SectionRig
	case strings.HasPrefix(path, "passEnv."):
		return SectionEnv
	}
	return SectionSpec
}

// configCache flattens runs, parsing each distinct spec once: the runs of
// one experiment share a handful of specs, and parsing dominates the cost
// of a large comparison.
type configCache struct {
	spec map[string][]leaf
	runs map[*results.Run]config
}

func newConfigCache() *configCache {
	return &configCache{spec: map[string][]leaf{}, runs: map[*results.Run]config{}}
}

func (c *configCache) of(r *results.Run) config {
	if cfg, ok := c.runs[r]; ok {
		return cfg
	}
	cfg := c.build(r)
	c.runs[r] = cfg
	return cfg
}

func (c *configCache) build(r *results.Run) config {
	var spec []leaf
	if len(r.Spec) > 0 {
		key := string(r.Spec)
		var ok bool
		if spec, ok = c.spec[key]; !ok {
			spec = flattenJSON(r.Spec)
			c.spec[key] = spec
		}
	}
	out := make(config, 0, len(spec)+24)
	out = append(out, spec...)
	out = appendLock(out, r)
	out = appendPassEnv(out, r, spec)
	out = appendRig(out, r.Rig)
	return out
}

// appendPassEnv adds the value each passEnv variable had in the bench
// process (the last process; workers get the same), in name order. A
// variable the caller did not set is absent. Secret values are in the
// record only as "<redacted …>", with a fingerprint when the run had a
// key: what the diff shows is what the record holds.
func appendPassEnv(out config, r *results.Run, spec []leaf) config {
	if len(r.Processes) == 0 {
		return out
	}
	var names []string
	for _, l := range spec {
		if l.path == "passEnv" {
			json.Unmarshal([]byte(l.value), &names)
		}
	}
	slices.Sort(names)
	env := r.Processes[len(r.Processes)-1].Env
	for _, n := range slices.Compact(names) {
		if v, ok := env[n]; ok {
			out = append(out, leaf{joinKey("passEnv", n), quote(v)})
		}
	}
	return out
}

// flattenJSON flattens a JSON document; a document that does not parse
// becomes one leaf holding it as a string, so that a difference still
// shows.
func flattenJSON(raw json.RawMessage) []leaf {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return []leaf{{"spec", quote(string(raw))}}
	}
	if m, ok := v.(map[string]any); ok {
		for k := range docFields {
			delete(m, k)
		}
	}
	var out []leaf
	flattenValue("", v, &out)
	sort.Slice(out, func(i, j int) bool { return out[i].path < out[j].path })
	return out
}

// docFields are the spec's top-level fields that document an experiment
// rather than configure it: a reworded description is not a change of
// configuration, and listing it would bury the one that is (seed 000:
// flags.nkvo).
var docFields = map[string]bool{"description": true, "notes": true, "labels": true, "tags": true}

func flattenValue(path string, v any, out *[]leaf) {
	switch x := v.(type) {
	case map[string]any:
		// An empty object is no configuration: env: {} on one side and no
		// env on the other is not a change.
		for k, e := range x {
			flattenValue(joinKey(path, k), e, out)
		}
	case []any:
		scalars := true
		for _, e := range x {
			switch e.(type) {
			case map[string]any, []any:
				scalars = false
			}
		}
		if scalars {
			*out = append(*out, leaf{path, canonical(x)})
			return
		}
		for i, e := range x {
			flattenValue(path+"["+strconv.Itoa(i)+"]", e, out)
		}
	default:
		*out = append(*out, leaf{path, canonical(x)})
	}
}

var identRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*$`)

func joinKey(path, key string) string {
	if !identRE.MatchString(key) {
		key = strconv.Quote(key)
	}
	if path == "" {
		return key
	}
	return path + "." + key
}

// canonical returns v as compact JSON, without HTML escaping.
func canonical(v any) string {
	switch x := v.(type) {
	case string:
		if plainASCII(x) {
			return `"` + x + `"`
		}
	case float64:
		// encoding/json's choice of format, for the values it can encode.
		if a := math.Abs(x); a == 0 || (a >= 1e-6 && a < 1e21) {
			return strconv.FormatFloat(x, 'f', -1, 64)
		}
	case bool:
		return strconv.FormatBool(x)
	case nil:
		return "null"
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return quote(fmt.Sprint(v))
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

func quote(s string) string { return canonical(s) }

// plainASCII reports whether s needs no escaping in JSON.
func plainASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// appendLock adds what the record says the lock resolved. Leaves are added
// in sorted path order.
func appendLock(out config, r *results.Run) config {
	start := len(out)
	add := func(path, v string) {
		if v != "" {
			out = append(out, leaf{path, quote(v)})
		}
	}
	e, m := r.Engine, r.Model
	add("lock.engine.backend", e.Backend)
	add("lock.engine.buildId", e.BuildID)
	if b := e.Build; b != nil {
		// What the engine said of the binary that ran; the devices it
		// names are the rig's, and its system info line repeats these.
		add("lock.engine.build.cpuFeatures", strings.Join(b.CPUFeatures, " "))
		add("lock.engine.build.cpuVariant", b.CPUVariant)
		add("lock.engine.build.flavour", b.Flavour)
	}
	add("lock.engine.commit", e.Commit)
	add("lock.engine.family", e.Family)
	for i, p := range e.Patches {
		v := p.Path
		if p.SHA256 != "" {
			v += " sha256:" + p.SHA256
		}
		add("lock.engine.patches["+strconv.Itoa(i)+"]", v)
	}
	add("lock.engine.ref", e.Ref)
	add("lock.engine.source", e.Source)
	add("lock.engine.version", e.Version)
	add("lock.model.commit", m.Commit)
	files := slices.Clone(m.Files)
	slices.SortFunc(files, func(a, b results.File) int { return strings.Compare(a.Path, b.Path) })
	for _, f := range files {
		p := joinKey("lock.model.files", f.Path)
		add(p+".sha256", f.SHA256)
		if f.Size > 0 {
			out = append(out, leaf{p + ".size", strconv.FormatInt(f.Size, 10)})
		}
	}
	add("lock.model.hf", m.HF)
	add("lock.model.path", m.Path)
	add("lock.model.quant", m.Quant)
	add("lock.model.revision", m.Revision)
	// Sort the section: patch and file paths can order differently from
	// the fixed names around them.
	sec := out[start:]
	sort.Slice(sec, func(i, j int) bool { return sec[i].path < sec[j].path })
	return out
}

func appendRig(out config, g *rig.Rig) config {
	if g == nil {
		return out
	}
	start := len(out)
	add := func(path, v string) {
		if v != "" {
			out = append(out, leaf{path, quote(v)})
		}
	}
	num := func(path string, v float64) {
		if v != 0 {
			out = append(out, leaf{path, canonical(v)})
		}
	}
	add("rig.arch", g.Arch)
	add("rig.cpu", g.HostProcessorModelName)
	num("rig.cpuCores", float64(g.HostProcessorCoreCount))
	add("rig.driver", rigDriver(g))
	add("rig.gpu", rigGPU(g))
	num("rig.gpuCount", float64(rigGPUCount(g)))
	num("rig.gpuMemoryGB", g.AcceleratorMemoryCapacityGB)
	add("rig.kernel", g.Kernel)
	num("rig.memoryGB", g.HostMemoryCapacityGB)
	add("rig.os", g.OperatingSystem)
	for _, k := range sortedKeys(g.Toolchain) {
		add(joinKey("rig.toolchain", k), g.Toolchain[k])
	}
	sec := out[start:]
	sort.Slice(sec, func(i, j int) bool { return sec[i].path < sec[j].path })
	return out
}

// rigGPU is the GPU model name, from the summary field or else the
// detected GPUs.
func rigGPU(g *rig.Rig) string { return results.RigGPU(g) }

func rigGPUCount(g *rig.Rig) int { return results.RigGPUCount(g) }

func rigDriver(g *rig.Rig) string {
	if g == nil {
		return ""
	}
	if g.AcceleratorDriverVersion != "" {
		return g.AcceleratorDriverVersion
	}
	var vs []string
	for _, a := range g.Accelerators {
		if a.DriverVersion != "" && !slices.Contains(vs, a.DriverVersion) {
			vs = append(vs, a.DriverVersion)
		}
	}
	return strings.Join(vs, " + ")
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// diffConfigs lists the leaves that differ between a and b, in section
// order, by path within a section. keep, when not nil, selects sections.
func diffConfigs(a, b config, keep func(section string) bool) []Change {
	var out []Change
	add := func(path string, old, new *string) {
		sec := sectionOf(path)
		if keep != nil && !keep(sec) {
			return
		}
		c := Change{Section: sec, Path: path}
		if old != nil {
			c.Old = json.RawMessage(*old)
		}
		if new != nil {
			c.New = json.RawMessage(*new)
		}
		out = append(out, c)
	}
	// Both are sorted within sections and sections come in the same order,
	// so compare by (section rank, path).
	less := func(x, y string) int {
		if d := sectionRank(sectionOf(x)) - sectionRank(sectionOf(y)); d != 0 {
			return d
		}
		return strings.Compare(x, y)
	}
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case j == len(b) || (i < len(a) && less(a[i].path, b[j].path) < 0):
			if !emptyLeaf(a[i].value) {
				add(a[i].path, &a[i].value, nil)
			}
			i++
		case i == len(a) || less(a[i].path, b[j].path) > 0:
			if !emptyLeaf(b[j].value) {
				add(b[j].path, nil, &b[j].value)
			}
			j++
		default:
			if a[i].value != b[j].value {
				add(a[i].path, &a[i].value, &b[j].value)
			}
			i++
			j++
		}
	}
	return out
}

// emptyLeaf reports whether a leaf holds nothing (an empty list, null):
// against an absent leaf it is no change.
func emptyLeaf(v string) bool { return v == "[]" || v == "null" }

func sectionRank(s string) int {
	switch s {
	case SectionSpec:
		return 0
	case SectionLock:
		return 1
	case SectionEnv:
		return 2
	}
	return 3
}
