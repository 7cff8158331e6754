package nodellama

// This file judges whether the runner's wall clock and llama.cpp's own
// counters agree, and when they do not, says why from what the runner
// recorded beside its samples.

import (
	"fmt"
	"strings"

	"github.com/rigorbench/rigor/internal/engine/llamabench"
	"github.com/rigorbench/rigor/internal/metric"
)

// Agreement is the set share by which rigor's wall-clock figure (tokSOut,
// tokSPrompt, tokSTotal: the headline) may fall below the engine's own
// counter (engineTokSOut, …) before the record must say why: the engine's
// tok/s may be up to 1.25× the runner's.
const Agreement = 1.25

// disagreements returns one warning for each row whose engine counter is
// more than Agreement times the runner's wall-clock figure, saying how far
// apart they are, where the time outside llama_decode went and why.
func disagreements(rows []llamabench.Row) []string {
	var out []string
	for _, r := range rows {
		if w := disagreement(r); w != "" {
			out = append(out, w)
		}
	}
	return out
}

// disagreement judges one row; "" when the two figures agree within
// Agreement or the row has no engine counter.
func disagreement(r llamabench.Row) string {
	rm := r.Metrics()
	em, ok := engineMetric(r)
	if len(rm) == 0 || !ok || rm[0].Value <= 0 || em.Value <= 0 {
		return ""
	}
	ratio := em.Value / rm[0].Value
	if ratio <= Agreement {
		return ""
	}
	name := rm[0].Name
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s: the engine's own counter (%s) is %.2f× rigor's wall-clock figure, more than the %.2f× they should agree within: ",
		name, r.Test, metric.Engine(name), ratio, Agreement)
	wall := meanOf(sampleList(r, "samples_ns"))
	outside := meanOf(sampleList(r, "outside_samples_ns"))
	wait := sampleList(r, "sched_wait_samples_ns")
	calls, hasCalls := number(r.Fields["eval_calls"])
	tokens := float64(r.NPrompt + r.NGen)
	if outside <= 0 || wall <= 0 {
		b.WriteString("the runner did not record where the time outside llama_decode went (a runner older than this rigor)")
		return b.String()
	}
	fmt.Fprintf(&b, "%s of each repetition's %s went outside llama_decode", ms(outside), ms(wall))
	idle, hasIdle := number(r.Fields["idle_call_ns"])
	hasIdle = hasIdle && idle > 0 && hasCalls && calls > 0
	if hasCalls && calls > 0 {
		fmt.Fprintf(&b, ", %s for each of its %.0f calls into node-llama-cpp", ms(outside/calls), calls)
		if hasIdle {
			fmt.Fprintf(&b, " (an empty call, the hand-off alone, took %s)", ms(idle))
		}
	}
	w, hasWait := meanOf(wait), len(wait) > 0
	if hasWait {
		fmt.Fprintf(&b, "; the runner's threads waited %s in all for a CPU", ms(w))
	}
	// The causes: the hand-off, when it alone is a good part of the time
	// outside; the load, when the calls cost far more than an empty one or
	// the threads waited for a CPU.
	var handOff, busy bool
	switch {
	case hasIdle:
		handOff = calls*idle >= outside/4
		busy = outside/calls > 2*idle || (hasWait && w >= outside/2 && !handOff)
	case hasWait:
		busy = w >= outside/2
		handOff = !busy && hasCalls && calls > 0
	default:
		handOff = hasCalls && calls > 0
	}
	var causes []string
	switch {
	case busy && hasWait && w < outside/4:
		causes = append(causes, "the calls took far longer than an empty one, yet the runner's threads hardly waited for a CPU (see machine in this record for what else the machine did)")
	case busy:
		causes = append(causes, "other processes held the cores (a busy machine, see machine in this record); compare wall-clock figures only with runs made under the same load")
	}
	if handOff {
		causes = append(causes, fmt.Sprintf("each call hands the batch to node-llama-cpp's worker thread and back, a cost every node-llama-cpp user pays, large against this model's %s a token inside llama_decode; quote %s for node-llama-cpp, %s for llama.cpp's compute alone",
			ms((wall-outside)/max(tokens, 1)), name, metric.Engine(name)))
	}
	if len(causes) == 0 {
		causes = append(causes, fmt.Sprintf("the public sequence API (--api public) schedules every token in JavaScript and samples it on the worker thread; quote %s for node-llama-cpp, %s for llama.cpp's compute alone",
			name, metric.Engine(name)))
	}
	b.WriteString(": " + strings.Join(causes, "; and "))
	return b.String()
}

// sampleList reads a row's array of numbers; nil when absent.
func sampleList(r llamabench.Row, key string) []float64 {
	raw, ok := r.Fields[key].([]any)
	if !ok {
		return nil
	}
	var out []float64
	for _, v := range raw {
		if f, ok := number(v); ok && f >= 0 {
			out = append(out, f)
		}
	}
	return out
}

func meanOf(s []float64) float64 {
	if len(s) == 0 {
		return 0
	}
	var sum float64
	for _, v := range s {
		sum += v
	}
	return sum / float64(len(s))
}

// ms spells nanoseconds as milliseconds with three significant digits.
func ms(ns float64) string {
	v := ns / 1e6
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f ms", v)
	case v >= 10:
		return fmt.Sprintf("%.1f ms", v)
	case v >= 1:
		return fmt.Sprintf("%.2f ms", v)
	default:
		return fmt.Sprintf("%.3f ms", v)
	}
}
