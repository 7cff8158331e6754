package spec

import (
	"errors"

	cueerrors "cuelang.org/go/cue/errors"
	"cuelang.org/go/cue/parser"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// mutationBase is an experiment file as users write them: a base, a
// variant, a sweep, with structs on one line and across lines.
const mutationBase = `package m

import "github.com/rigorbench/rigor/schema"

_base: schema.#Experiment & {
	description: "a base to derive from"
	model: path: "/models/m.gguf"
	engine: {
		family: "llama.cpp"
		source: {git: "https://example.com/llama.cpp.git", ref: "b5000"}
	}
	bench: {p: 16, n: 8, r: *3 | int}
	flags: {ngl: 99, nkvo: *1 | int, ub: *32 | int, ctk: "f16", ctv: "f16"}
	quality: kvCache: "f16"
	tags: ["cpu", "small"]
}
baseline:  _base
kvoffload: _base & {flags: nkvo: 0}
ubSweep:   kvoffload & {bench: r: 1, sweep: flags: ub: [16, 32, 64]}
`

// TestLoad_mutations makes random syntax errors in an experiment file and
// checks that the first error rigor reports is the parser's first error,
// at its position, as cue vet prints it, and that this is on the line
// that was mutated: never the end of the file, and never the message of
// one error with the position of another. Mutations insert, replace or
// delete one character outside brackets (a deleted bracket moves the
// error, legitimately, to where the parser notices). An operator added at
// the end of a line continues the expression on the next line, where the
// parser notices, so there the parser's position is the reference.
func TestLoad_mutations(t *testing.T) {
	lines := strings.Split(mutationBase, "\n")
	var editable []int
	for i, l := range lines {
		if i > 3 && strings.TrimSpace(l) != "" {
			editable = append(editable, i)
		}
	}
	const alphabet = `:,*|&=!?%$#@0a"'.-+<>/\`
	rng := rand.New(rand.NewPCG(13, 2026))
	rejected, checked := 0, 0
	n := 120
	if testing.Short() {
		n = 30
	}
	for k := 0; k < n; k++ {
		li := editable[rng.IntN(len(editable))]
		line := lines[li]
		col := rng.IntN(len(line) + 1)
		var mutated, what string
		switch op := rng.IntN(3); {
		case op == 0 || col == len(line):
			c := string(alphabet[rng.IntN(len(alphabet))])
			mutated, what = line[:col]+c+line[col:], fmt.Sprintf("insert %q at %d", c, col+1)
		case strings.ContainsRune("{}[]()", rune(line[col])):
			continue
		case op == 1:
			c := string(alphabet[rng.IntN(len(alphabet))])
			mutated, what = line[:col]+c+line[col+1:], fmt.Sprintf("replace %q by %q at %d", line[col], c, col+1)
		default:
			mutated, what = line[:col]+line[col+1:], fmt.Sprintf("delete %q at %d", line[col], col+1)
		}
		if strings.Count(mutated, `"`)%2 != strings.Count(line, `"`)%2 && strings.Contains(mutated, `\`) {
			continue // an escaped quote: the string runs on, legitimately
		}
		src := strings.Join(append(append(append([]string{}, lines[:li]...), mutated), lines[li+1:]...), "\n")
		root := writeModule(t, map[string]string{"experiments/m/m.cue": src})
		set, err := Load(Options{Root: root})
		var nm *NoMatchError
		if err != nil && !errors.As(err, &nm) {
			t.Fatalf("mutant %d (%s on line %d): Load: %v", k, what, li+1, err)
		}
		if set == nil || len(set.Problems) == 0 {
			continue
		}
		rejected++
		_, perr := parser.ParseFile("m.cue", src)
		if perr == nil {
			continue // a valid file with a wrong value: not a syntax error
		}
		want := cueerrors.Errors(perr)[0]
		first := set.Problems[0]
		if len(first.Pos) == 0 {
			t.Errorf("mutant %d (line %d: %s): %q has no position", k, li+1, what, first.Msg)
			continue
		}
		checked++
		wantLine := li + 1
		if col == len(line) {
			wantLine = want.Position().Line()
		}
		got := first.Pos[0]
		if got.Line() != want.Position().Line() || got.Column() != want.Position().Column() || got.Line() != wantLine {
			t.Errorf("mutant %d: %s on line %d\n  %s\nfirst error %s, want %d:%d (the parser's first error: %v)",
				k, what, li+1, mutated, first.Error(), want.Position().Line(), want.Position().Column(), want)
		}
	}
	t.Logf("%d mutants rejected, %d syntax errors checked", rejected, checked)
	if checked < n/8 {
		t.Errorf("only %d of %d mutants were syntax errors: the test no longer exercises them", checked, n)
	}
}
