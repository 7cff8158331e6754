package llamabench_test

import (
	"fmt"

	"github.com/rigorbench/rigor/internal/engine/llamabench"
)

// ik_llama.cpp over RPC prints its rows, then dies before closing the JSON
// array: the run is a crash, and its measurements are kept.
func ExampleClassify() {
	stdout := []byte(`[
  {
    "build_commit": "8337e4cd3",
    "rpc": "1",
    "n_prompt": 32,
    "n_gen": 0,
    "avg_ts": 11491.054159,
    "stddev_ts": 1854.474817,
    "test": "pp32",
    "samples_ns": [ 3143498, 2499538 ],
    "samples_ts": [ 10179.7, 12802.4 ]
  }`)
	stderr := []byte("double free or corruption (!prev)\n")

	o := llamabench.Classify(stdout, stderr, 134, false)
	fmt.Println(o.Status)
	fmt.Println(o.Error)
	for _, r := range o.Rows {
		for _, m := range r.Metrics() {
			fmt.Printf("%s %s: %.1f %s, samples %v\n", m.Name, m.Test, m.Value, m.Unit, m.Samples)
		}
	}
	// Output:
	// crashed
	// engine crashed (exit 134, SIGABRT) after 1 row: double free or corruption (!prev)
	// tokSPrompt pp32: 11491.1 tok/s, samples [10179.7 12802.4]
}

// A sweep over -ub runs as one llama-bench process ("-ub 16,32"); its rows
// are split back into the sweep's points.
func ExampleSplitRows() {
	rows, _, err := llamabench.ParseJSON([]byte(`[
{"n_ubatch": 16, "no_kv_offload": false, "n_prompt": 32, "n_gen": 0, "avg_ts": 100},
{"n_ubatch": 16, "no_kv_offload": false, "n_prompt": 0, "n_gen": 16, "avg_ts": 10},
{"n_ubatch": 32, "no_kv_offload": false, "n_prompt": 32, "n_gen": 0, "avg_ts": 200},
{"n_ubatch": 32, "no_kv_offload": false, "n_prompt": 0, "n_gen": 16, "avg_ts": 20}
]`))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, point := range []map[string]any{{"ub": 16, "nkvo": 0}, {"ub": 32, "nkvo": 0}} {
		key, fields, err := llamabench.FlagKey(point)
		if err != nil {
			fmt.Println(err)
			return
		}
		group := llamabench.SplitRows(rows, fields)[key]
		fmt.Printf("%s:", key)
		for _, r := range group.Rows {
			fmt.Printf(" %s=%g", r.Test, r.AvgTs)
		}
		fmt.Println()
	}
	// Output:
	// n_ubatch=16,no_kv_offload=0: pp32=100 tg16=10
	// n_ubatch=32,no_kv_offload=0: pp32=200 tg16=20
}
