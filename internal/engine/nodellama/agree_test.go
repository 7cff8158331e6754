package nodellama

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/rigorbench/rigor/internal/engine/llamabench"
	"github.com/rigorbench/rigor/internal/metric"
)

// reasons are the phrases a disagreement warning gives as its cause; a
// warning without one of them does not say why.
var reasons = []string{
	"other processes held the cores",
	"node-llama-cpp's worker thread and back",
	"the public sequence API",
	"did not record where the time",
	"took far longer than an empty one",
}

// checkExplained fails t unless the outcome has, in row order, exactly one
// warning for each row whose engine counter is more than Agreement times
// its wall-clock figure (computed here from the samples, not from the
// runner's summary), naming the metric and the ratio and giving a reason,
// and none for a row that agrees. A ratio within 0.1% of Agreement may go
// either way.
func checkExplained(t *testing.T, o Outcome) {
	t.Helper()
	j := 0 // the next warning
	for _, r := range o.Rows {
		rm := r.Metrics()
		em, ok := engineMetric(r)
		if len(rm) == 0 || !ok {
			continue
		}
		ratio := meanOf(em.Samples) / meanOf(rm[0].Samples)
		must, may := ratio > Agreement*1.001, ratio >= Agreement*0.999
		prefix := fmt.Sprintf("%s %s: the engine's own counter (%s) is ", rm[0].Name, r.Test, metric.Engine(rm[0].Name))
		if j < len(o.Warnings) && strings.HasPrefix(o.Warnings[j], prefix) && may {
			w := o.Warnings[j]
			j++
			var got float64
			if _, err := fmt.Sscanf(strings.TrimPrefix(w, prefix), "%f×", &got); err != nil || math.Abs(got-ratio) > 0.006 {
				t.Errorf("%s %s: the warning gives the ratio %v (%v), want %.2f: %s", rm[0].Name, r.Test, got, err, ratio, w)
			}
			hasReason := false
			for _, why := range reasons {
				hasReason = hasReason || strings.Contains(w, why)
			}
			if !hasReason {
				t.Errorf("%s %s: the warning gives no reason: %s", rm[0].Name, r.Test, w)
			}
			continue
		}
		if must {
			t.Errorf("%s %s: the engine counter is %.2f× the wall clock, more than %.2f×, and no warning says why; warnings:\n%s",
				rm[0].Name, r.Test, ratio, Agreement, strings.Join(o.Warnings[j:], "\n"))
		}
	}
	if j != len(o.Warnings) {
		t.Errorf("warnings for rows that agree, or out of order:\n%s", strings.Join(o.Warnings[j:], "\n"))
	}
}

// TestDisagreement_Recorded holds every recorded run of the real runner to
// the rule: where the wall clock and llama.cpp's counters are further
// apart than Agreement, the outcome (and so the record) says why.
func TestDisagreement_Recorded(t *testing.T) {
	for _, name := range []string{"ok_pp32_tg16_r2", "ok_public_sweep", "ok_small_quickstart", "crash_killed"} {
		t.Run(name, func(t *testing.T) {
			stdout, stderr, rc := readCase(t, name)
			o := ParseOutput(stdout, stderr, rc)
			if len(o.Rows) == 0 {
				t.Fatal("no rows")
			}
			checkExplained(t, o)
		})
	}
}

func TestDisagreement_Reasons(t *testing.T) {
	// Each row: pp or tg, the wall-clock and engine samples, and what the
	// runner recorded of where the time went.
	cases := []struct {
		name string
		row  string
		want string // "" for no warning
	}{
		{name: "agree", row: `{"n_prompt":0,"n_gen":16,"avg_ts":5000,"samples_ts":[5000],"samples_ns":[3200000],"engine_avg_ts":6000,"engine_samples_ts":[6000],"engine_samples_ns":[2666667],"eval_calls":16,"outside_samples_ns":[533333]}`},
		{name: "no engine counter", row: `{"n_prompt":0,"n_gen":16,"avg_ts":1000,"samples_ts":[1000],"samples_ns":[16000000]}`},
		{name: "busy", row: `{"n_prompt":0,"n_gen":16,"avg_ts":2000,"samples_ts":[2000],"samples_ns":[8000000],"engine_avg_ts":6400,"engine_samples_ts":[6400],"engine_samples_ns":[2500000],"eval_calls":16,"outside_samples_ns":[5500000],"sched_wait_samples_ns":[4000000],"sched_run_samples_ns":[3000000]}`,
			want: "tokSOut tg16: the engine's own counter (engineTokSOut) is 3.20× rigor's wall-clock figure, more than the 1.25× they should agree within: " +
				"5.50 ms of each repetition's 8.00 ms went outside llama_decode, 0.344 ms for each of its 16 calls into node-llama-cpp; the runner's threads waited 4.00 ms in all for a CPU: " +
				"other processes held the cores (a busy machine, see machine in this record); compare wall-clock figures only with runs made under the same load"},
		{name: "hand-off", row: `{"n_prompt":0,"n_gen":16,"avg_ts":4000,"samples_ts":[4000],"samples_ns":[4000000],"engine_avg_ts":6400,"engine_samples_ts":[6400],"engine_samples_ns":[2500000],"eval_calls":16,"outside_samples_ns":[1500000],"sched_wait_samples_ns":[100000],"sched_run_samples_ns":[3900000]}`,
			want: "tokSOut tg16: the engine's own counter (engineTokSOut) is 1.60× rigor's wall-clock figure, more than the 1.25× they should agree within: " +
				"1.50 ms of each repetition's 4.00 ms went outside llama_decode, 0.094 ms for each of its 16 calls into node-llama-cpp; the runner's threads waited 0.100 ms in all for a CPU: " +
				"each call hands the batch to node-llama-cpp's worker thread and back, a cost every node-llama-cpp user pays, large against this model's 0.156 ms a token inside llama_decode; " +
				"quote tokSOut for node-llama-cpp, engineTokSOut for llama.cpp's compute alone"},
		{name: "hand-off without scheduler statistics", row: `{"n_prompt":32,"n_gen":0,"avg_ts":4000,"samples_ts":[4000],"samples_ns":[8000000],"engine_avg_ts":6400,"engine_samples_ts":[6400],"engine_samples_ns":[5000000],"eval_calls":1,"outside_samples_ns":[3000000]}`,
			want: "tokSPrompt pp32: the engine's own counter (engineTokSPrompt) is 1.60× rigor's wall-clock figure, more than the 1.25× they should agree within: " +
				"3.00 ms of each repetition's 8.00 ms went outside llama_decode, 3.00 ms for each of its 1 calls into node-llama-cpp: " +
				"each call hands the batch to node-llama-cpp's worker thread and back, a cost every node-llama-cpp user pays, large against this model's 0.156 ms a token inside llama_decode; " +
				"quote tokSPrompt for node-llama-cpp, engineTokSPrompt for llama.cpp's compute alone"},
		{name: "hand-off, measured", row: `{"n_prompt":0,"n_gen":16,"avg_ts":4000,"samples_ts":[4000],"samples_ns":[4000000],"engine_avg_ts":6400,"engine_samples_ts":[6400],"engine_samples_ns":[2500000],"eval_calls":16,"idle_call_ns":80000,"outside_samples_ns":[1500000],"sched_wait_samples_ns":[3000000],"sched_run_samples_ns":[3900000]}`,
			want: "tokSOut tg16: the engine's own counter (engineTokSOut) is 1.60× rigor's wall-clock figure, more than the 1.25× they should agree within: " +
				"1.50 ms of each repetition's 4.00 ms went outside llama_decode, 0.094 ms for each of its 16 calls into node-llama-cpp (an empty call, the hand-off alone, took 0.080 ms); the runner's threads waited 3.00 ms in all for a CPU: " +
				"each call hands the batch to node-llama-cpp's worker thread and back, a cost every node-llama-cpp user pays, large against this model's 0.156 ms a token inside llama_decode; " +
				"quote tokSOut for node-llama-cpp, engineTokSOut for llama.cpp's compute alone"},
		{name: "hand-off and load", row: `{"n_prompt":0,"n_gen":16,"avg_ts":2000,"samples_ts":[2000],"samples_ns":[8000000],"engine_avg_ts":6400,"engine_samples_ts":[6400],"engine_samples_ns":[2500000],"eval_calls":16,"idle_call_ns":100000,"outside_samples_ns":[5500000]}`,
			want: "tokSOut tg16: the engine's own counter (engineTokSOut) is 3.20× rigor's wall-clock figure, more than the 1.25× they should agree within: " +
				"5.50 ms of each repetition's 8.00 ms went outside llama_decode, 0.344 ms for each of its 16 calls into node-llama-cpp (an empty call, the hand-off alone, took 0.100 ms): " +
				"other processes held the cores (a busy machine, see machine in this record); compare wall-clock figures only with runs made under the same load; and " +
				"each call hands the batch to node-llama-cpp's worker thread and back, a cost every node-llama-cpp user pays, large against this model's 0.156 ms a token inside llama_decode; " +
				"quote tokSOut for node-llama-cpp, engineTokSOut for llama.cpp's compute alone"},
		{name: "load, measured", row: `{"n_prompt":32,"n_gen":0,"avg_ts":3000,"samples_ts":[3000],"samples_ns":[10666667],"engine_avg_ts":6000,"engine_samples_ts":[6000],"engine_samples_ns":[5333333],"eval_calls":1,"idle_call_ns":30000,"outside_samples_ns":[5333334],"sched_wait_samples_ns":[100],"sched_run_samples_ns":[1]}`,
			want: "tokSPrompt pp32: the engine's own counter (engineTokSPrompt) is 2.00× rigor's wall-clock figure, more than the 1.25× they should agree within: " +
				"5.33 ms of each repetition's 10.7 ms went outside llama_decode, 5.33 ms for each of its 1 calls into node-llama-cpp (an empty call, the hand-off alone, took 0.030 ms); the runner's threads waited 0.000 ms in all for a CPU: " +
				"the calls took far longer than an empty one, yet the runner's threads hardly waited for a CPU (see machine in this record for what else the machine did)"},
		{name: "load, measured, waiting", row: `{"n_prompt":32,"n_gen":0,"avg_ts":3000,"samples_ts":[3000],"samples_ns":[10666667],"engine_avg_ts":6000,"engine_samples_ts":[6000],"engine_samples_ns":[5333333],"eval_calls":1,"idle_call_ns":30000,"outside_samples_ns":[5333334],"sched_wait_samples_ns":[4000000],"sched_run_samples_ns":[1]}`,
			want: "tokSPrompt pp32: the engine's own counter (engineTokSPrompt) is 2.00× rigor's wall-clock figure, more than the 1.25× they should agree within: " +
				"5.33 ms of each repetition's 10.7 ms went outside llama_decode, 5.33 ms for each of its 1 calls into node-llama-cpp (an empty call, the hand-off alone, took 0.030 ms); the runner's threads waited 4.00 ms in all for a CPU: " +
				"other processes held the cores (a busy machine, see machine in this record); compare wall-clock figures only with runs made under the same load"},
		{name: "public API", row: `{"n_prompt":0,"n_gen":8,"avg_ts":2000,"samples_ts":[2000],"samples_ns":[4000000],"engine_avg_ts":5000,"engine_samples_ts":[5000],"engine_samples_ns":[1600000],"outside_samples_ns":[2400000],"sched_wait_samples_ns":[0],"sched_run_samples_ns":[4000000],"runner_api":"public"}`,
			want: "tokSOut tg8: the engine's own counter (engineTokSOut) is 2.50× rigor's wall-clock figure, more than the 1.25× they should agree within: " +
				"2.40 ms of each repetition's 4.00 ms went outside llama_decode; the runner's threads waited 0.000 ms in all for a CPU: " +
				"the public sequence API (--api public) schedules every token in JavaScript and samples it on the worker thread; quote tokSOut for node-llama-cpp, engineTokSOut for llama.cpp's compute alone"},
		{name: "older runner", row: `{"n_prompt":32,"n_gen":0,"avg_ts":3000,"samples_ts":[3000],"samples_ns":[10666667],"engine_avg_ts":6000,"engine_samples_ts":[6000],"engine_samples_ns":[5333333]}`,
			want: "tokSPrompt pp32: the engine's own counter (engineTokSPrompt) is 2.00× rigor's wall-clock figure, more than the 1.25× they should agree within: " +
				"the runner did not record where the time outside llama_decode went (a runner older than this rigor)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rows, _, err := llamabench.ParseJSON([]byte("[" + c.row + "]"))
			if err != nil {
				t.Fatal(err)
			}
			got := disagreements(rows)
			if c.want == "" {
				if len(got) != 0 {
					t.Errorf("got %q, want no warning", got)
				}
				return
			}
			if len(got) != 1 || got[0] != c.want {
				t.Errorf("got  %q\nwant %q", got, c.want)
			}
			checkExplained(t, Outcome{Rows: rows, Warnings: got})
		})
	}
}
