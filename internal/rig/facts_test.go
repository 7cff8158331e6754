package rig

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"
	cueerrors "cuelang.org/go/cue/errors"
)

func b70Rig() *Rig {
	r := &Rig{
		HostProcessorModelName: "AMD EPYC 9015 8-Core Processor",
		HostProcessorCoreCount: 16,
		HostMemoryCapacityGB:   15.6,
		OperatingSystem:        "Ubuntu 24.04.4 LTS",
		Kernel:                 "6.14.0-37-generic",
		Arch:                   "linux/amd64",
	}
	for i := range 4 {
		r.Accelerators = append(r.Accelerators, GPU{Index: i, Vendor: "intel", Name: "Intel Arc Pro B70",
			MemoryGB: 32, DriverVersion: "1.6.33276+22", Driver: "xe"})
	}
	return r
}

func TestRig_Facts(t *testing.T) {
	got := b70Rig().Facts()
	want := map[string]any{
		"gpu":    map[string]any{"name": "Intel Arc Pro B70", "vendor": "intel", "count": 4, "vramGB": 32, "driver": "1.6.33276+22"},
		"cpu":    map[string]any{"name": "AMD EPYC 9015 8-Core Processor", "cores": 16},
		"ramGB":  15.6,
		"os":     "Ubuntu 24.04.4 LTS",
		"kernel": "6.14.0-37-generic",
		"arch":   "linux/amd64",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Facts() of the B70 rig:\ngot  %#v\nwant %#v", got, want)
	}

	// Nothing known: only the GPU count, which is 0.
	if got, want := (&Rig{}).Facts(), map[string]any{"gpu": map[string]any{"count": 0}}; !reflect.DeepEqual(got, want) {
		t.Errorf("Facts() of an empty rig = %#v, want %#v", got, want)
	}

	mixed := &Rig{Accelerators: []GPU{
		{Vendor: "nvidia", Name: "NVIDIA GeForce RTX 4090", MemoryGB: 24, DriverVersion: "570.86.15"},
		{Vendor: "intel", Name: "Intel Arc A770", MemoryGB: 15.9, DriverVersion: "1.3.29735+27"},
	}}
	wantGPU := map[string]any{"name": "NVIDIA GeForce RTX 4090 + Intel Arc A770", "vendor": "nvidia + intel", "count": 2,
		"vramGB": 15.9, "driver": "570.86.15 + 1.3.29735+27"}
	if got := mixed.Facts()["gpu"]; !reflect.DeepEqual(got, wantGPU) {
		t.Errorf("Facts()[gpu] of a mixed rig = %#v, want %#v", got, wantGPU)
	}
	if got, want := mixed.Summary(), "1× NVIDIA GeForce RTX 4090 24 GB + 1× Intel Arc A770 15.9 GB"; got != want {
		t.Errorf("Summary() of a mixed rig = %q, want %q", got, want)
	}
	if got, want := (&Rig{}).Summary(), "no GPU"; got != want {
		t.Errorf("Summary() of an empty rig = %q, want %q", got, want)
	}
}

// TestRig_FactsRequires unifies Facts with #requires the way DESIGN.md
// describes (Unify, then Validate(cue.Concrete(true))), to pin that the
// shape and number kinds work with the constraints users write.
func TestRig_FactsRequires(t *testing.T) {
	r9700 := &Rig{Accelerators: []GPU{
		{Vendor: "amd", Name: "AMD Radeon AI PRO R9700", MemoryGB: 32},
		{Vendor: "amd", Name: "AMD Radeon AI PRO R9700", MemoryGB: 32},
	}}
	unnamed := &Rig{Accelerators: []GPU{{Vendor: "intel", MemoryGB: 32, PCIID: "8086:e223"}}}
	for _, tt := range []struct {
		name     string
		rig      *Rig
		requires string
		wantErr  []string // substrings; none means it must pass
	}{
		{"b70 matches", b70Rig(), `gpu: {name: =~"Arc Pro B70", count: 4, vramGB: >=32}`, nil},
		{"exact int vram", b70Rig(), `gpu: vramGB: 32, cpu: cores: >=8, ramGB: >=15`, nil},
		{"float bound on int", b70Rig(), `gpu: vramGB: >=31.5`, nil},
		{"wrong gpu", r9700, `gpu: {name: =~"Arc Pro B70", count: 4}`, []string{"gpu.name", "gpu.count"}},
		{"unknown name is incomplete", unnamed, `gpu: name: =~"Arc Pro B70"`, []string{"gpu.name", "incomplete"}},
		{"no gpu", &Rig{}, `gpu: count: >=1`, []string{"gpu.count", "out of bound >=1"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := cuecontext.New()
			req := ctx.CompileString(tt.requires)
			if req.Err() != nil {
				t.Fatal(req.Err())
			}
			v := req.Unify(ctx.Encode(tt.rig.Facts()))
			err := v.Validate(cue.Concrete(true))
			if len(tt.wantErr) == 0 {
				if err != nil {
					t.Errorf("requires %s on %s: got %v, want no error", tt.requires, tt.rig.Summary(), err)
				}
				return
			}
			if err == nil {
				t.Fatalf("requires %s on %s: got no error, want one mentioning %q", tt.requires, tt.rig.Summary(), tt.wantErr)
			}
			msg := fmt.Sprint(errorsDetails(err))
			for _, w := range tt.wantErr {
				if !strings.Contains(msg, w) {
					t.Errorf("requires %s on %s: got %q, want it to mention %q", tt.requires, tt.rig.Summary(), msg, w)
				}
			}
		})
	}
}

// errorsDetails flattens every CUE error in err, not only the first.
func errorsDetails(err error) string {
	var sb strings.Builder
	for _, e := range cueerrors.Errors(err) {
		sb.WriteString(e.Error())
		sb.WriteString("\n")
	}
	return sb.String()
}

// gpu.powerLimitW is one number when every GPU has the same limit (the
// enforced one where it is told apart) and the list otherwise, so that
// `powerLimitW: 450` fails on a rig with one GPU capped at 300.
func TestRig_FactsPowerLimit(t *testing.T) {
	r := &Rig{Accelerators: []GPU{
		{Index: 0, Vendor: "nvidia", Name: "NVIDIA GeForce RTX 4090", PowerLimitW: 450, EnforcedPowerLimitW: 450},
		{Index: 1, Vendor: "nvidia", Name: "NVIDIA GeForce RTX 4090", PowerLimitW: 450, EnforcedPowerLimitW: 300},
	}}
	gpu := r.Facts()["gpu"].(map[string]any)
	if got := gpu["powerLimitW"]; !reflect.DeepEqual(got, []any{450, 300}) {
		t.Errorf("one capped: got %#v, want [450 300]", got)
	}
	r.Accelerators[1].EnforcedPowerLimitW = 450
	if got := r.Facts()["gpu"].(map[string]any)["powerLimitW"]; got != 450 {
		t.Errorf("both at 450: got %#v", got)
	}
	if _, ok := b70Rig().Facts()["gpu"].(map[string]any)["powerLimitW"]; ok {
		t.Error("no limit reported: the fact must be absent")
	}
}
