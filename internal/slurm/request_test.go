package slurm

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"

	"github.com/rigorbench/rigor/schema"
)

// requires compiles an experiment's #requires against rigor's own schema,
// as the spec loader does.
func requires(t *testing.T, src string) cue.Value {
	t.Helper()
	b, err := schema.FS.ReadFile("requires.cue")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(b), "package schema", "", 1) + "\nx: #Requires & {" + src + "}\n"
	v := cuecontext.New().CompileString(text, cue.Filename("exp.cue"))
	if v.Err() != nil {
		t.Fatalf("compiling %q: %v", src, v.Err())
	}
	return v.LookupPath(cue.ParsePath("x"))
}

const testConfig = `
gres: "gpu"
features: {
	b70:  gpu: {name: "Intel Arc Pro B70", vendor: "intel", vramGB: 32}
	a100: gpu: {name: "NVIDIA A100-SXM4-80GB", vendor: "nvidia", vramGB: 80}
	h100: gpu: {name: "NVIDIA H100 80GB HBM3", vendor: "nvidia", vramGB: 80}
	deb12: os: "Debian GNU/Linux 12 (bookworm)"
}
gpuTypes: {
	a100: gpu: name: "NVIDIA A100-SXM4-80GB"
	h100: gpu: name: "NVIDIA H100 80GB HBM3"
	b70:  gpu: name: "Intel Arc Pro B70"
}
`

func TestFromRequires(t *testing.T) {
	cfg, err := ParseConfig("slurm.cue", []byte(testConfig))
	if err != nil {
		t.Fatal(err)
	}
	check := func(src string, want Request, wantArgs []string) {
		t.Helper()
		got, err := FromRequires(requires(t, src), cfg)
		if err != nil {
			t.Fatalf("FromRequires(%s): %v", src, err)
		}
		want.Gres = "gpu"
		if !reflect.DeepEqual(*got, want) {
			t.Errorf("FromRequires(%s):\ngot  %+v\nwant %+v", src, *got, want)
		}
		if args := got.Args(); !reflect.DeepEqual(args, wantArgs) {
			t.Errorf("FromRequires(%s).Args():\ngot  %q\nwant %q", src, args, wantArgs)
		}
	}
	// The seeds' own requirement: four B70s of at least 32 GB.
	check(`gpu: {name: =~"Arc Pro B70", count: 4, vramGB: >=32}`,
		Request{GPUs: 4, GPUType: "b70", Constraint: "b70"},
		[]string{"--gres=gpu:b70:4", "--constraint=b70"})
	// Any 80 GB NVIDIA GPU: two features, two GPU types, so no type.
	check(`gpu: {vendor: "nvidia", vramGB: >=80, count: >=2}`,
		Request{GPUs: 2, Constraint: "a100|h100"},
		[]string{"--gres=gpu:2", "--constraint=a100|h100"})
	// Several facts are ANDed; CPUs and memory are lower bounds.
	check(`gpu: {vendor: "nvidia", count: 1}, os: =~"Debian", cpu: cores: >8, ramGB: >=15.5`,
		Request{GPUs: 1, Constraint: "(a100|h100)&deb12", CPUs: 9, MemMB: 15872},
		[]string{"--gres=gpu:1", "--cpus-per-task=9", "--mem=15872M", "--constraint=(a100|h100)&deb12"})
	// Facts no mapping states are left to the node's own check.
	check(`gpu: {driver: "560.1"}, kernel: =~"^6\\."`,
		Request{NodeOnly: []string{`gpu.driver: "560.1"`, `kernel: =~"^6\\."`}},
		nil)
	// No #requires at all.
	got, err := FromRequires(cue.Value{}, cfg)
	if err != nil || !reflect.DeepEqual(*got, Request{Gres: "gpu"}) {
		t.Errorf("FromRequires(none) = %+v, %v; want an empty request", got, err)
	}
}

func TestFromRequires_unmet(t *testing.T) {
	cfg, err := ParseConfig("slurm.cue", []byte(testConfig))
	if err != nil {
		t.Fatal(err)
	}
	_, err = FromRequires(requires(t, `gpu: {name: =~"MI300", count: 1}`), cfg)
	var ue *UnmetError
	if !errors.As(err, &ue) {
		t.Fatalf("got %v, want an *UnmetError", err)
	}
	if ue.Path != "gpu.name" || ue.Want != `=~"MI300"` || ue.Pos.Filename() != "exp.cue" {
		t.Errorf("got %+v (at %s), want gpu.name =~\"MI300\" at exp.cue", ue, ue.Pos)
	}
	if want := `#requires.gpu.name: =~"MI300": no feature in slurm.cue has a matching gpu.name (declared: a100="NVIDIA A100-SXM4-80GB", b70="Intel Arc Pro B70", h100="NVIDIA H100 80GB HBM3")`; err.Error() != want {
		t.Errorf("got  %s\nwant %s", err, want)
	}
}

func TestParseConfig_errors(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{`partition: 3`, "partition: conflicting values"},
		{`features: b70: gpu: name: 3`, "features.b70.gpu.name: conflicting values"},
		{`sbatchArgs: ["qos=high"]`, `sbatchArgs.0: invalid value "qos=high"`},
		{`partiton: "gpu"`, "partiton: field not allowed"},
		{`partition: "gpu`, "string literal not terminated"},
	} {
		_, err := ParseConfig("slurm.cue", []byte(tc.src))
		var ce *ConfigError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseConfig(%s): got %v, want a ConfigError containing %q", tc.src, err, tc.want)
		}
	}
}
