package rig

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// addSeeds adds every file under testdata/<dirs> to the fuzz corpus.
func addSeeds(f *testing.F, globs ...string) {
	f.Helper()
	for _, g := range globs {
		files, err := filepath.Glob(filepath.Join("testdata", g))
		if err != nil {
			f.Fatal(err)
		}
		for _, p := range files {
			b, err := os.ReadFile(p)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(b)
		}
	}
}

// checkParsed holds for every parser's result: the GPUs encode as JSON (no
// NaN or infinite sizes), sizes are not negative, names are normalized and
// PCI addresses lower-case.
func checkParsed(t *testing.T, in []byte, gpus []GPU) {
	t.Helper()
	if _, err := json.Marshal(gpus); err != nil {
		t.Fatalf("input %q: result does not encode: %v", in, err)
	}
	for _, g := range gpus {
		if g.MemoryGB < 0 {
			t.Errorf("input %q: negative memory %v", in, g.MemoryGB)
		}
		if NormalizeName(g.Name) != g.Name {
			t.Errorf("input %q: name %q is not normalized (want %q)", in, g.Name, NormalizeName(g.Name))
		}
		if g.RawName != "" && NormalizeName(g.RawName) != g.Name {
			t.Errorf("input %q: raw name %q does not normalize to name %q", in, g.RawName, g.Name)
		}
		if g.PCIBusID != strings.ToLower(g.PCIBusID) {
			t.Errorf("input %q: PCI address %q is not lower-case", in, g.PCIBusID)
		}
	}
}

func fuzzGPUParser(f *testing.F, parse func([]byte) ([]GPU, error), globs ...string) {
	addSeeds(f, globs...)
	f.Fuzz(func(t *testing.T, in []byte) {
		gpus, err := parse(in)
		if err != nil {
			if gpus != nil {
				t.Errorf("input %q: got GPUs %+v with error %v", in, gpus, err)
			}
			return
		}
		checkParsed(t, in, gpus)
	})
}

func FuzzParseNvidiaSMI(f *testing.F) { fuzzGPUParser(f, ParseNvidiaSMI, "nvidia-smi/*") }
func FuzzParseRocmSMI(f *testing.F)   { fuzzGPUParser(f, ParseRocmSMI, "rocm-smi/*") }
func FuzzParseAmdSMI(f *testing.F)    { fuzzGPUParser(f, ParseAmdSMI, "amd-smi/*") }
func FuzzParseXpuSMI(f *testing.F)    { fuzzGPUParser(f, ParseXpuSMI, "xpu-smi/*") }
func FuzzParseSyclLs(f *testing.F)    { fuzzGPUParser(f, ParseSyclLs, "sycl-ls/*") }

func FuzzParseNvidiaGPUInformation(f *testing.F) {
	addSeeds(f, "proc/nvidia-information-*")
	f.Fuzz(func(t *testing.T, in []byte) {
		g, err := ParseNvidiaGPUInformation(in)
		if err != nil {
			return
		}
		if g.Name == "" {
			t.Errorf("input %q: no error but no name", in)
		}
		checkParsed(t, in, []GPU{g})
	})
}

func FuzzParseProc(f *testing.F) {
	addSeeds(f, "proc/*")
	f.Fuzz(func(t *testing.T, in []byte) {
		if c, err := ParseCPUInfo(in); err == nil && c.LogicalCPUs <= 0 {
			t.Errorf("ParseCPUInfo(%q) = %+v without error, want CPUs", in, c)
		}
		if n, err := ParseMemInfo(in); err == nil && !strings.Contains(string(in), "MemTotal") {
			t.Errorf("ParseMemInfo(%q) = %d without a MemTotal line", in, n)
		}
		if v, err := ParseNvidiaVersion(in); err == nil && !nvidiaVersionRE.MatchString(v) {
			t.Errorf("ParseNvidiaVersion(%q) = %q, not a version", in, v)
		}
		m := ParseOSRelease(in)
		for k := range m {
			if k == "" || strings.ContainsAny(k, " \t=\n") {
				t.Errorf("ParseOSRelease(%q): bad key %q", in, k)
			}
		}
	})
}
