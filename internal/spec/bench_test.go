package spec

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// genModule writes 1,000 experiments in 10 packages: half written out in
// full, half derived from those by unification, and every tenth derived one
// a 3-point sweep.
func genModule(tb testing.TB) string {
	files := map[string]string{}
	for p := 0; p < 10; p++ {
		var b strings.Builder
		fmt.Fprintf(&b, "package p%d\n\nimport \"github.com/rigorbench/rigor/schema\"\n\n", p)
		for i := 0; i < 50; i++ {
			fmt.Fprintf(&b, `e%d: schema.#Experiment & {
	description: "generated experiment %d of package %d"
	model: {hf: "org/model-%d-GGUF", files: ["m-Q4_K_M-*-of-00002.gguf"], quant: "Q4_K_M"}
	#requires: gpu: {vendor: "nvidia", count: >=%d, vramGB: >=24}
	engine: {
		family: "ik_llama.cpp"
		source: {git: "https://github.com/ikawrakow/ik_llama.cpp", ref: "9a26522"}
		build: backend: "cuda"
		rpc: {servers: 2, basePort: %d}
	}
	bench: {p: 0, n: 64, r: *3 | int}
	flags: {ngl: 99, sm: "layer", ts: "1/1", fa: 1, nkvo: *1 | int, ub: *%d | int, ctk: "f16", ctv: "f16", t: %d, rtr: 1, fmoe: 1}
	env: GGML_CUDA_GRAPHS: "%d"
	quality: {kvCache: "f16", speculative: false, expertReduction: false}
	tags: ["gen", "p%d"]
}
`, i, i, p, i, 1+i%4, 50000+i*2, 32<<(i%3), 1+i%8, i%2, p)
			if i%10 == 0 {
				fmt.Fprintf(&b, "d%d: e%d & {bench: r: 1, flags: nkvo: 0, sweep: flags: ub: [16, 32, 64]}\n", i, i)
			} else {
				fmt.Fprintf(&b, "d%d: e%d & {flags: nkvo: 0}\n", i, i)
			}
		}
		files[fmt.Sprintf("experiments/p%d/gen.cue", p)] = b.String()
	}
	return writeModule(tb, files)
}

// BenchmarkLoad1000 loads, validates, expands and decodes 1,000 experiments;
// the cue-export sub-benchmark runs the stock cue tool's export over the same
// files, for comparison (it validates less and expands nothing).
func BenchmarkLoad1000(b *testing.B) {
	root := genModule(b)
	b.Run("rigor", func(b *testing.B) {
		for b.Loop() {
			set, err := Load(Options{Root: root})
			if err != nil {
				b.Fatal(err)
			}
			if len(set.Problems) > 0 {
				b.Fatal(set.Problems[0])
			}
			if n := len(set.Experiments); n != 1000 {
				b.Fatalf("%d experiments, want 1000", n)
			}
		}
	})
	b.Run("cue-export", func(b *testing.B) {
		cue := cueBinary(b)
		// cue export needs the schema on disk; rigor overlays its embedded copy.
		copySchema(b, root)
		for b.Loop() {
			cmd := exec.Command(cue, "export", "./experiments/...")
			cmd.Dir = root
			cmd.Stdout = nil
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("cue export: %v\n%s", err, out)
			}
		}
	})
}

func cueBinary(b *testing.B) string {
	out, err := exec.Command("go", "tool", "-n", "cue").Output()
	if err != nil {
		b.Skipf("no cue tool: %v", err)
	}
	return strings.TrimSpace(string(out))
}

func copySchema(b *testing.B, root string) {
	entries, _ := os.ReadDir("../../schema")
	dir := root + "/cue.mod/pkg/github.com/rigorbench/rigor/schema"
	os.MkdirAll(dir, 0o755)
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".cue") {
			data, err := os.ReadFile("../../schema/" + e.Name())
			if err != nil {
				b.Fatal(err)
			}
			os.WriteFile(dir+"/"+e.Name(), data, 0o644)
		}
	}
}
