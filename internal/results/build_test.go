package results

import (
	"slices"
	"testing"
)

func TestCPUFeatures(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
	}{
		// node-llama-cpp 3.22.1's prebuilt linux-x64 binary on an AVX-512 machine.
		{"CPU : SSE3 = 1 | SSSE3 = 1 | AVX = 1 | AVX2 = 1 | F16C = 1 | FMA = 1 | BMI2 = 1 | AVX512 = 1 | AVX512_VBMI = 1 | AVX512_VNNI = 1 | AVX512_BF16 = 1 | LLAMAFILE = 1 | REPACK = 1 |",
			[]string{"SSE3", "SSSE3", "AVX", "AVX2", "F16C", "FMA", "BMI2", "AVX512", "AVX512_VBMI", "AVX512_VNNI", "AVX512_BF16"}},
		// Another backend's entries are not CPU features.
		{"CUDA : ARCHS = 890 | USE_GRAPHS = 1 | PEER_MAX_BATCH_SIZE = 128 | CPU : SSE3 = 1 | AVX2 = 1 | OPENMP = 1 |", []string{"SSE3", "AVX2"}},
		// Older llama.cpp: every feature with its value, no backend named.
		{"AVX = 1 | AVX_VNNI = 0 | AVX2 = 1 | AVX512 = 0 | FMA = 1 | NEON = 0 | LLAMAFILE = 1 |", []string{"AVX", "AVX2", "FMA"}},
		{"", nil},
		{"garbage without structure", nil},
		{"CPU : AVX2 = 1 | AVX2 = 1 |", []string{"AVX2"}},
	} {
		if got := CPUFeatures(c.in); !slices.Equal(got, c.want) {
			t.Errorf("CPUFeatures(%q):\ngot  %q\nwant %q", c.in, got, c.want)
		}
	}
}

func TestBuildSummary(t *testing.T) {
	for _, c := range []struct {
		b    *Build
		want string
	}{
		{nil, ""},
		{&Build{Backends: "CPU", CPU: "AMD EPYC"}, ""},
		{&Build{Flavour: "prebuilt", CPUFeatures: []string{"AVX2", "FMA"}}, "prebuilt (AVX2 FMA)"},
		{&Build{Flavour: "localBuild"}, "localBuild"},
		{&Build{CPUFeatures: []string{"AVX512"}}, "unknown flavour (AVX512)"},
	} {
		if got := c.b.Summary(); got != c.want {
			t.Errorf("%+v: got %q, want %q", c.b, got, c.want)
		}
	}
}
