package spec

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

func axis(section, name string, vals ...any) []Axis {
	var out []Axis
	for _, v := range vals {
		out = append(out, Axis{Section: section, Name: name, Value: v})
	}
	return out
}

func TestCartesian(t *testing.T) {
	check := func(axes [][]Axis, want []string) {
		t.Helper()
		var got []string
		for _, c := range Cartesian(axes) {
			got = append(got, PointID("e/x", c))
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("Cartesian(%v):\ngot  %q\nwant %q", axes, got, want)
		}
	}
	// No axes: one point, the experiment itself.
	check(nil, []string{"e/x"})
	// One axis keeps the written order (not sorted).
	check([][]Axis{axis("flags", "ub", int64(64), int64(16), int64(32))},
		[]string{"e/x[ub=64]", "e/x[ub=16]", "e/x[ub=32]"})
	// The first axis varies slowest.
	check([][]Axis{axis("flags", "ub", int64(16), int64(32)), axis("flags", "t", int64(1), int64(2), int64(4))},
		[]string{"e/x[ub=16,t=1]", "e/x[ub=16,t=2]", "e/x[ub=16,t=4]", "e/x[ub=32,t=1]", "e/x[ub=32,t=2]", "e/x[ub=32,t=4]"})
	// Sections other than flags are named in the id; strings and bools render as on a command line.
	check([][]Axis{axis("bench", "n", int64(64)), axis("env", "GGML_X", "0", "1"), axis("flags", "fa", "on")},
		[]string{"e/x[bench.n=64,env.GGML_X=0,fa=on]", "e/x[bench.n=64,env.GGML_X=1,fa=on]"})
	// Three axes: 2×2×2 = 8 points.
	if n := len(Cartesian([][]Axis{axis("flags", "a", 1, 2), axis("flags", "b", 1, 2), axis("flags", "c", 1, 2)})); n != 8 {
		t.Errorf("2x2x2 gave %d points, want 8", n)
	}
	// An empty axis gives no points.
	if n := len(Cartesian([][]Axis{axis("flags", "a", 1, 2), nil})); n != 0 {
		t.Errorf("an empty axis gave %d points, want 0", n)
	}
}

func TestSplitPointID(t *testing.T) {
	for _, c := range []struct{ in, exp, axes string }{
		{"a/b", "a/b", ""},
		{"a/b[ub=16]", "a/b", "ub=16"},
		{"a/b[ub=16,t=2]", "a/b", "ub=16,t=2"},
		{"[ub=16]", "[ub=16]", ""},
		{"a/b[ub=16", "a/b[ub=16", ""},
	} {
		exp, axes := SplitPointID(c.in)
		if exp != c.exp || axes != c.axes {
			t.Errorf("SplitPointID(%q) = %q, %q; want %q, %q", c.in, exp, axes, c.exp, c.axes)
		}
	}
}

func TestValidatePattern(t *testing.T) {
	good := []string{"a", "a/b", "minimax-m27-b70/kvoffload", "a/*", "a/kv?", "a/b[ub=16]", "a/b[ub=16,t=2]", "...", "a.b/c_d"}
	for _, p := range good {
		if err := ValidatePattern(p); err != nil {
			t.Errorf("ValidatePattern(%q) = %v, want nil", p, err)
		}
	}
	bad := map[string]string{
		"":          "empty",
		"a//b":      "double slashes",
		"/a":        "leading",
		"a/":        "trailing",
		"a/b.cue":   "not a file name",
		"a b":       "letters, digits",
		"a[x]/b":    "brackets belong at the end",
		"a/b;rm -f": "letters, digits",
	}
	for p, want := range bad {
		err := ValidatePattern(p)
		var me *MalformedIDError
		if !errors.As(err, &me) || !strings.Contains(err.Error(), want) {
			t.Errorf("ValidatePattern(%q) = %v, want a MalformedIDError mentioning %q", p, err, want)
		}
	}
}

func TestNearest(t *testing.T) {
	flags := []string{"ngl", "nkvo", "ub", "b", "ctk", "ctv", "fa", "sm", "ts", "sas", "muge", "rtr"}
	for in, want := range map[string]string{
		"nkvoo": "nkvo", // one extra letter
		"NKVO":  "nkvo", // case
		"ctkk":  "ctk",
		"mug":   "muge",
		"foo":   "", // too far from everything
		"xyzzy": "",
	} {
		if got := nearest(in, flags); got != want {
			t.Errorf("nearest(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestRenderValue(t *testing.T) {
	for _, c := range []struct {
		in   any
		want string
	}{
		{int64(99), "99"}, {float64(32), "32"}, {0.5, "0.5"}, {"1/1/1/1", "1/1/1/1"},
		{true, "1"}, {false, "0"}, {[]any{int64(512), int64(128)}, "512,128"}, {nil, ""},
	} {
		if got := RenderValue(c.in); got != c.want {
			t.Errorf("RenderValue(%#v) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestLoad_releaseSweepPoints: loaded with Release (vet; lock and list of
// many experiments), a sweep's points hold no CUE value even while their
// package is loaded: each point's evaluation is let go once it is decoded, so memory does not grow with
// the points' evaluations (10,000 points took 7 GB, 1,000 took 1 GB).
func TestLoad_releaseSweepPoints(t *testing.T) {
	var a, b []string
	for i := 0; i < 20; i++ {
		a = append(a, fmt.Sprintf("%q", fmt.Sprint(i)))
		b = append(b, fmt.Sprintf("%q", fmt.Sprint(i)))
	}
	root := writeModule(t, map[string]string{"experiments/s/s.cue": `package s

import "github.com/rigorbench/rigor/schema"

big: schema.#Experiment & {
	model: path: "/m.gguf"
	engine: {family: "llama.cpp", source: path: "/bin"}
	bench: {p: 16, n: 8}
	sweep: env: {A: [` + strings.Join(a, ", ") + `], B: [` + strings.Join(b, ", ") + `]}
}
`})
	// Check runs once the experiment's points are made, before its
	// package is let go: no point may hold its evaluation then.
	held := 0
	set, err := Load(Options{Root: root, Release: true, Check: func(_ *Set, x *Experiment) {
		for _, p := range x.Points {
			if p.Value.Exists() {
				held++
			}
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Problems) > 0 {
		t.Fatal(set.Problems[0])
	}
	if held > 0 {
		t.Fatalf("%d points held their CUE evaluation while the package was loaded", held)
	}
	pts := set.Experiments[0].Points
	if len(pts) != 400 {
		t.Fatalf("%d points, want 400", len(pts))
	}
	for _, p := range pts {
		if p.Value.Exists() {
			t.Fatalf("%s keeps its CUE value", p.ID)
		}
		if p.Digest == "" || len(p.CanonicalJSON) == 0 {
			t.Fatalf("%s was not decoded", p.ID)
		}
	}
}
