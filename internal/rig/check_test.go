package rig_test

import (
	"strings"
	"testing"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"

	"github.com/rigorbench/rigor/internal/rig"
)

// b70Box is a 4× Arc Pro B70 rig.
func b70Box() *rig.Rig {
	r := &rig.Rig{HostProcessorModelName: "AMD EPYC 9015 8-Core Processor", HostProcessorCoreCount: 16, HostMemoryCapacityGB: 62.4, OperatingSystem: "Ubuntu 24.04.4 LTS", Arch: "linux/amd64"}
	for i := range 4 {
		r.Accelerators = append(r.Accelerators, rig.GPU{Index: i, Vendor: "intel", Name: "Intel Arc Pro B70", MemoryGB: 32})
	}
	return r
}

func TestCheck(t *testing.T) {
	ctx := cuecontext.New()
	for _, c := range []struct {
		requires string
		want     []string // Mismatch.String() of each, in order
	}{
		{`gpu: {name: "Intel Arc Pro B70", count: >=4, vramGB: >=24, vendor: "intel"}, ramGB: >=32`, nil},
		{`gpu: count: 4, arch: "linux/amd64", cpu: cores: >=8`, nil},
		{`gpu: name: "NVIDIA GeForce RTX 4090"`, []string{`gpu.name: want "NVIDIA GeForce RTX 4090", rig has "Intel Arc Pro B70"`}},
		{`gpu: count: >=8`, []string{`gpu.count: want >=8, rig has 4`}},
		{`gpu: vramGB: >=48`, []string{`gpu.vramGB: want >=48, rig has 32`}},
		{`gpu: driver: "1.2.3"`, []string{`gpu.driver: want "1.2.3", the rig does not report it`}},
		{`gpu: {count: >=8, name: =~"B70"}, ramGB: >=128, os: =~"^Ubuntu"`, []string{
			`gpu.count: want >=8, rig has 4`, `ramGB: want >=128, rig has 62.4`}},
		{`gpu: vendor: "nvidia" | "amd"`, []string{`gpu.vendor: want "nvidia" | "amd", rig has "intel"`}},
	} {
		v := ctx.CompileString("#requires: {"+c.requires+"}", cue.Filename("x.cue"))
		if err := v.Err(); err != nil {
			t.Fatalf("compiling %s: %v", c.requires, err)
		}
		req := v.LookupPath(cue.MakePath(cue.Def("requires")))
		got := rig.Check(req, b70Box())
		var gs []string
		for _, m := range got {
			gs = append(gs, m.String())
			if m.Pos.Filename() != "x.cue" || m.Pos.Line() != 1 || m.Pos.Column() < 2 {
				t.Errorf("Check(%s): %s at %v, want a position in x.cue:1", c.requires, m.Path, m.Pos)
			}
		}
		if strings.Join(gs, "\n") != strings.Join(c.want, "\n") {
			t.Errorf("Check(%s):\ngot  %q\nwant %q", c.requires, gs, c.want)
		}
	}
}

func TestCheck_noRequires(t *testing.T) {
	if got := rig.Check(cue.Value{}, b70Box()); got != nil {
		t.Errorf("Check of a missing #requires = %v, want nothing", got)
	}
}

func TestCheck_noGPU(t *testing.T) {
	ctx := cuecontext.New()
	req := ctx.CompileString(`{gpu: {count: >=1, name: "Intel Arc Pro B70"}}`)
	got := rig.Check(req, &rig.Rig{})
	if len(got) != 2 || got[0].Got != "0" || got[1].Got != "" {
		t.Errorf("Check on a rig without GPUs = %+v, want count 0 and name absent", got)
	}
}
