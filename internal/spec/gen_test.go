package spec

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestGenerateModule writes a module for the scale measurements in
// BENCHMARKS.md, outside the checkout:
//
//	RIGOR_GEN_MODULE=/tmp/m10k RIGOR_GEN_EXPERIMENTS=10000 go test -run TestGenerateModule ./internal/spec
//
// Packages of 100 experiments shaped like experiments/minimax-m27-b70: a
// hidden base (_common, schema.#Experiment with defaults) and a hidden
// seed command line derived from it, then variants that each override a
// few flags; every tenth variant sweeps ubatch over three values. The
// schema is copied to cue.mod/pkg so that `cue export ./experiments/...`
// evaluates the same files.
func TestGenerateModule(t *testing.T) {
	root := os.Getenv("RIGOR_GEN_MODULE")
	if root == "" {
		t.Skip("RIGOR_GEN_MODULE is not set")
	}
	n, err := strconv.Atoi(os.Getenv("RIGOR_GEN_EXPERIMENTS"))
	if err != nil || n < 100 {
		t.Fatalf("RIGOR_GEN_EXPERIMENTS=%q: want a number of experiments, at least 100", os.Getenv("RIGOR_GEN_EXPERIMENTS"))
	}
	files := map[string]string{"cue.mod/module.cue": "module: \"example.com/lab@v0\"\nlanguage: version: \"v0.17.0\"\n"}
	for p := 0; p < n/100; p++ {
		pkg := fmt.Sprintf("rig%03d", p)
		files["experiments/"+pkg+"/base.cue"] = fmt.Sprintf(genBase, pkg, p, 50000+p*10)
		var b strings.Builder
		fmt.Fprintf(&b, "package %s\n", pkg)
		for i := range 100 {
			fmt.Fprintf(&b, `
// v%d is variant %d of rig %d.
v%d: _seed & {
	description: "variant %d: ub %d, nkvo %d, r%d"
	labels: ["variant %d of rig %d"]
	bench: r: %d
	flags: {nkvo: %d, sas: %d}
`, i, i, p, i, i, 16<<(i%4), i%2, 1+i%3, i, p, 1+i%3, i%2, i%2)
			if i%10 == 0 {
				b.WriteString("\tsweep: flags: ub: [16, 32, 64]\n")
			} else {
				fmt.Fprintf(&b, "\tflags: ub: %d\n", 16<<(i%4))
			}
			if i%7 == 0 {
				b.WriteString("\tflags: {ctk: \"q8_0\", ctv: \"f16\"}\n\tquality: {kvCache: \"q8_0/f16\", tradeoff: \"q8_0 K cache lowers K precision\"}\n")
			}
			b.WriteString("}\n")
		}
		files["experiments/"+pkg+"/runs.cue"] = b.String()
	}
	for name, content := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	schemaDir := filepath.Join(root, "cue.mod", "pkg", "github.com", "rigorbench", "rigor", "schema")
	os.MkdirAll(schemaDir, 0o755)
	ents, _ := os.ReadDir(filepath.Join("..", "..", "schema"))
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".cue") {
			data, err := os.ReadFile(filepath.Join("..", "..", "schema", e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			os.WriteFile(filepath.Join(schemaDir, e.Name()), data, 0o644)
		}
	}
}

const genBase = `package %[1]s

import "github.com/rigorbench/rigor/schema"

// _common is what every run of rig %[2]d shares.
_common: schema.#Experiment & {
	model: {
		hf:        "unsloth/MiniMax-M2.7-GGUF"
		revision:  "main"
		files:     ["UD-IQ4_XS/MiniMax-M2.7-UD-IQ4_XS-*-of-00004.gguf"]
		quant:     "UD-IQ4_XS"
		baseModel: "MiniMaxAI/MiniMax-M2.7"
		format:    "gguf"
	}
	#requires: gpu: {vendor: "intel", name: =~"Arc Pro B70", count: 4, vramGB: >=32}
	engine: {
		family: "ik_llama.cpp"
		source: {git: "https://github.com/ikawrakow/ik_llama.cpp", ref: "9a26522"}
		build: backend: "sycl"
		rpc: {servers: 4, basePort: %[3]d, device: 0}
	}
	bench: {p: 0, n: *64 | int, r: *3 | int}
	flags: {
		ngl:  99
		sm:   "layer"
		ts:   *"1/1/1/1" | string
		fa:   0
		nkvo: *0 | int
		ub:   *32 | int
		ctk:  *"f16" | _
		ctv:  *"f16" | _
		rtr:  1
		fmoe: 1
		muge: 1
		sas:  *0 | int
	}
	quality: {
		kvCache:         *"f16" | _
		speculative:     false
		expertReduction: false
	}
	notes: *[
		"KV cache remains f16.",
		"No speculative decoding.",
		"No expert dropping or smart expert reduction.",
		"No power-limit changes.",
	] | _
	tags: *["minimax", "b70", "rpc", "sycl"] | _
}

// _seed is the command line of the rig's runs.
_seed: _common & {
	flags: t: 4
	extraArgs: ["-no-mmad", "0"]
}
`
