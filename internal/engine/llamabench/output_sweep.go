// This file maps llama-bench flags to the JSON fields that report them, so
// that the rows of a sweep run as one llama-bench process can be split into
// the sweep's points, and rows can be checked against the flags that were
// asked for.
//
// Values are compared in a canonical form (see outCanon): flag value "1"
// matches JSON true, "on" matches flash_attn 1, "016" matches 16, and
// tensor split "1/1/0/0" matches "1.00/1.00".

package llamabench

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/rigorbench/rigor/internal/spec"
)

// FieldOf returns the JSON field that reports a llama-bench flag, given
// by its schema name ("ub", "cpuStrict") or its spelling with or without
// dashes ("-ub", "cpu-strict"), for mainline llama.cpp and ik_llama.cpp.
// The mapping is the field= argument of the schema's @flag attributes
// (schema/llamabench.cue), the one place it is written.
//
// Flags without a field: -r, -o, -v, -w, -pg/-gp (their tests are
// labelled in the test field), -tgb (reported in n_threads per test) and
// -rpc (ik's rpc field only says "0" or "1"). -ot maps to mainline's
// tensor_buft_overrides; ik reports it in override_tensor but does not
// sweep it. Flags that llama-bench does not sweep itself (ik's -rtr,
// -fmoe, …) have fields too, for [VerifyRows].
func FieldOf(flag string) (string, bool) {
	fieldsOnce.Do(loadFields)
	f, ok := fields[strings.TrimLeft(flag, "-")]
	return f, ok
}

var (
	fieldsOnce sync.Once
	fields     map[string]string
)

func loadFields() {
	fields = map[string]string{}
	for _, fam := range []string{spec.FamilyLlamaCpp, spec.FamilyIkLlamaCpp} {
		for _, section := range []string{"flags", "bench"} {
			t, err := spec.BuiltinFlagTable(fam, section)
			if err != nil {
				// The schema is compiled into the binary; its tests
				// prove it loads.
				panic(err)
			}
			for _, d := range t.Defs {
				if d.Field == "" {
					continue
				}
				fields[d.Name] = d.Field
				fields[strings.TrimLeft(d.Spelling, "-")] = d.Field
			}
		}
	}
}

// outKind is how a field's values compare.
type outKind int

const (
	outString outKind = iota
	outInteger
	outBoolean
	outFlash
	outSplit
)

// outFieldKinds gives the kind of every field that is not a plain string.
var outFieldKinds = map[string]outKind{
	"build_number": outInteger, "model_size": outInteger, "model_n_params": outInteger,
	"n_batch": outInteger, "n_ubatch": outInteger, "n_threads": outInteger,
	"poll": outInteger, "n_gpu_layers": outInteger, "n_cpu_moe": outInteger,
	"main_gpu": outInteger, "n_prompt": outInteger, "n_gen": outInteger,
	"n_depth": outInteger, "mla_attn": outInteger, "attn_max_batch": outInteger,
	"fit_target": outInteger, "fit_min_ctx": outInteger, "max_gpu": outInteger,
	"no_op_offload": outInteger,

	"cpu_strict": outBoolean, "no_kv_offload": outBoolean, "use_mmap": outBoolean,
	"use_direct_io": outBoolean, "embeddings": outBoolean, "no_host": outBoolean,
	"repack": outBoolean, "reuse": outBoolean, "fused_moe": outBoolean,
	"muge": outBoolean, "mqkv": outBoolean, "sas": outBoolean,
	"grouped_er": outBoolean, "no_fused_up_gate": outBoolean, "no_ooae": outBoolean,
	"rcache": outBoolean, "use_thp": outBoolean, "defer_experts": outBoolean,
	"cuda": outBoolean, "vulkan": outBoolean, "metal": outBoolean,
	"sycl": outBoolean, "rpc": outBoolean, "gpu_blas": outBoolean, "blas": outBoolean,

	"flash_attn":   outFlash,
	"tensor_split": outSplit,
}

// outCanon returns the canonical form of a value of a field, from a flag
// value (string, bool, int, float) or a JSON value (json.Number, bool,
// string). Values that do not fit the field's kind are kept trimmed, so
// they compare unequal to every well-formed value.
func outCanon(field string, v any) string {
	s := ""
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		s = strings.TrimSpace(v)
	case json.Number:
		s = v.String()
	case bool:
		if v {
			s = "1"
		} else {
			s = "0"
		}
	case int:
		s = strconv.Itoa(v)
	case int64:
		s = strconv.FormatInt(v, 10)
	case float64:
		s = strconv.FormatFloat(v, 'f', -1, 64)
	default:
		s = strings.TrimSpace(fmt.Sprint(v))
	}
	switch outFieldKinds[field] {
	case outInteger:
		return outCanonInt(s)
	case outBoolean:
		switch strings.ToLower(s) {
		case "true", "on", "yes":
			return "1"
		case "false", "off", "no":
			return "0"
		}
		if n := outCanonInt(s); n == "0" || n == "1" {
			return n
		}
		return s
	case outFlash:
		switch strings.ToLower(s) {
		case "true", "on", "yes":
			return "1"
		case "false", "off", "no":
			return "0"
		case "auto":
			return "-1"
		}
		return outCanonInt(s)
	case outSplit:
		return outCanonSplit(s)
	}
	if field == "ser" {
		return strings.ReplaceAll(s, " ", "")
	}
	return s
}

// outCanonInt writes an integer in decimal, or returns s as it is when it
// is not one.
func outCanonInt(s string) string {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return strconv.FormatInt(n, 10)
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil && f == math.Trunc(f) && math.Abs(f) < 1<<53 {
		return strconv.FormatInt(int64(f), 10)
	}
	return s
}

// outCanonSplit writes a tensor split as llama-bench prints it: each
// proportion as %.2f, joined by "/", up to the last non-zero one ("0.00"
// when all are zero). Flags may separate proportions by "/" or ";".
func outCanonSplit(s string) string {
	parts := strings.FieldsFunc(s, func(r rune) bool { return r == '/' || r == ';' })
	if len(parts) == 0 {
		return s
	}
	vals := make([]float64, len(parts))
	last := 0
	for i, p := range parts {
		f, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return s
		}
		vals[i] = f
		if f > 0 {
			last = i
		}
	}
	out := make([]string, last+1)
	for i := range out {
		out[i] = strconv.FormatFloat(vals[i], 'f', 2, 64)
	}
	return strings.Join(out, "/")
}

// RowGroup is the rows of one point of a sweep that llama-bench ran in one
// process: the rows whose swept fields hold the same values.
type RowGroup struct {
	// Key identifies the group: "field=value" pairs sorted by field and
	// joined by ",", values in canonical form, e.g.
	// "n_threads=1,n_ubatch=16". [FlagKey] computes the same key from a
	// point's flags.
	Key string
	// Values holds the canonical value of each swept field, e.g.
	// {"n_threads": "1", "n_ubatch": "16"}; "" when a row lacks the field.
	Values map[string]string
	// Rows are the group's rows in output order.
	Rows []Row
}

// SplitRows groups the rows of a one-process sweep by the values of the
// swept fields (llama-bench JSON field names such as "n_ubatch",
// "n_threads", "type_k"; see [FieldOf]). The map is keyed by
// [RowGroup.Key]. A row that lacks a field groups under an empty value for
// it, so a point's key will not find it.
func SplitRows(rows []Row, fields []string) map[string]RowGroup {
	fields = outSortedUnique(fields)
	groups := make(map[string]RowGroup)
	for _, r := range rows {
		values := make(map[string]string, len(fields))
		for _, f := range fields {
			values[f] = outCanon(f, r.Fields[f])
		}
		key := outKey(fields, values)
		g, ok := groups[key]
		if !ok {
			g = RowGroup{Key: key, Values: values}
		}
		g.Rows = append(g.Rows, r)
		groups[key] = g
	}
	return groups
}

// FlagKey returns the [RowGroup.Key] of the point whose swept flags have
// the given values (flag names as in [FieldOf], with or without leading
// dashes; values as written in the experiment: 16, "16", true, "1/1"),
// and the JSON fields to pass to [SplitRows]. A flag without a field is an
// error.
func FlagKey(flags map[string]any) (key string, fields []string, err error) {
	values := make(map[string]string, len(flags))
	for flag, v := range flags {
		field, ok := FieldOf(flag)
		if !ok {
			return "", nil, fmt.Errorf("flag -%s: llama-bench reports no JSON field for it", strings.TrimLeft(flag, "-"))
		}
		if _, dup := values[field]; dup {
			return "", nil, fmt.Errorf("flag -%s: field %s given twice", strings.TrimLeft(flag, "-"), field)
		}
		values[field] = outCanon(field, v)
		fields = append(fields, field)
	}
	sort.Strings(fields)
	return outKey(fields, values), fields, nil
}

func outKey(fields []string, values map[string]string) string {
	var b strings.Builder
	for i, f := range fields {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(f)
		b.WriteByte('=')
		b.WriteString(values[f])
	}
	return b.String()
}

func outSortedUnique(s []string) []string {
	s = append([]string(nil), s...)
	sort.Strings(s)
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

// VerifyRows checks that llama-bench applied the flags it was given: that
// every row reports each flag's value in the flag's field. llama-bench
// sometimes exits 0 having silently replaced a bad value (ik reads
// -ctk bogus as f16; both forks read -p abc as 0), which [Classify] cannot
// see.
//
// flags maps flag names (as in [FieldOf]) to single values, not
// comma-separated sweeps. -p, -n and -d are checked against the rows of
// their own kind of test (a tg row has n_prompt 0): some row must report
// the value, unless it is 0. Flags without a field, and fields a fork does
// not print, are not checked. The error lists every mismatch.
func VerifyRows(rows []Row, flags map[string]any) error {
	names := make([]string, 0, len(flags))
	for f := range flags {
		names = append(names, f)
	}
	sort.Strings(names)
	var problems []string
	for _, name := range names {
		flag := strings.TrimLeft(name, "-")
		field, ok := FieldOf(flag)
		if !ok {
			continue
		}
		want := outCanon(field, flags[name])
		switch field {
		case "n_prompt", "n_gen", "n_depth":
			if want == "0" {
				continue
			}
			found, seen := false, false
			for _, r := range rows {
				if v, ok := r.Fields[field]; ok {
					seen = true
					if outCanon(field, v) == want {
						found = true
					}
				}
			}
			if seen && !found {
				problems = append(problems, fmt.Sprintf("-%s %v: no row reports %s %s", flag, flags[name], field, want))
			}
			continue
		}
		for i, r := range rows {
			v, ok := r.Fields[field]
			if !ok {
				continue
			}
			if got := outCanon(field, v); got != want {
				problems = append(problems, fmt.Sprintf("-%s %v: row %d reports %s %q", flag, flags[name], i+1, field, got))
				break
			}
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("llama-bench did not apply its flags: %s", strings.Join(problems, "; "))
	}
	return nil
}
