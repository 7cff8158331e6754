package cli

import (
	"fmt"
	"regexp"
	"strings"
)

// runWarning is a warning about one recorded point, printed after the
// result: short by default, whole with --explain (the record holds it
// whole either way).
type runWarning struct {
	point string
	text  string
	// short is the one-line form; kind groups warnings that say the
	// same thing about different metrics.
	short, kind string
}

// metricPrefix is the "tokSPrompt pp32: " a warning about one metric
// starts with.
var metricPrefix = regexp.MustCompile(`^\w+ [\w-]+: `)

var digits = regexp.MustCompile(`[0-9][0-9.,]*`)

var parenthesised = regexp.MustCompile(`\([^)]*\)`)

// busyWarning is the warning for a run on a busy machine; why is
// results.Machine.Busy's "other processes took 1.8 of 2 cores while the
// engine ran (load 29.4)".
func busyWarning(point, why string) runWarning {
	text := fmt.Sprintf("the machine was busy: %s; the figures may be lower than this machine can do (the record says so)", why)
	short, _, _ := strings.Cut(why, " while ")
	return runWarning{point: point, text: text, short: "busy machine: " + short + " (see the record)", kind: "busy"}
}

// engineWarning is a warning of the engine's verdict: its short form is
// its first clause.
func engineWarning(point, w string) runWarning {
	body := metricPrefix.ReplaceAllString(w, "")
	kind := digits.ReplaceAllString(parenthesised.ReplaceAllString(body, ""), "#")
	if len(kind) > 40 {
		kind = kind[:40]
	}
	return runWarning{point: point, text: w, short: firstClause(w), kind: kind}
}

// firstClause cuts a long warning at its first ", " or "; " past the
// first 20 characters, and at 120 characters at most.
func firstClause(s string) string {
	cut := len(s)
	for _, sep := range []string{"; ", ", "} {
		if i := strings.Index(s[min(20, len(s)):], sep); i >= 0 && 20+i < cut {
			cut = 20 + i
		}
	}
	out := s[:cut]
	if r := []rune(out); len(r) > 120 {
		out = string(r[:119])
		cut = -1
	}
	if cut != len(s) {
		out += "…"
	}
	return out
}

// printRunWarnings prints the warnings after the result: one short line
// per point and kind, or each whole with explain.
func printRunWarnings(e *env, ws []runWarning, explain bool) {
	if len(ws) == 0 {
		return
	}
	if explain {
		for _, w := range ws {
			fmt.Fprintf(e.stderr, "rigor: warning: %s: %s\n", w.point, w.text)
		}
		return
	}
	type key struct{ point, kind string }
	count := map[key]int{}
	var order []runWarning
	for _, w := range ws {
		k := key{w.point, w.kind}
		if count[k] == 0 {
			order = append(order, w)
		}
		count[k]++
	}
	shortened := false
	for _, w := range order {
		line := w.short
		if n := count[key{w.point, w.kind}] - 1; n > 0 {
			line += fmt.Sprintf(" (and %d more like it)", n)
		}
		if line != w.text || count[key{w.point, w.kind}] > 1 {
			shortened = true
		}
		fmt.Fprintf(e.stderr, "rigor: warning: %s: %s\n", w.point, line)
	}
	if shortened {
		fmt.Fprintf(e.stderr, "rigor: hint: each record holds its warnings in full ('warnings' in its JSON); --explain prints them here\n")
	}
}
