package llamabench

import "testing"

func TestBuild(t *testing.T) {
	if b := Build(nil); b != nil {
		t.Errorf("no rows: %+v, want nil", *b)
	}
	if b := Build([]Row{{Test: "pp8"}}); b != nil {
		t.Errorf("rows naming nothing: %+v, want nil", *b)
	}
	b := Build([]Row{{Test: "pp8"}, {Backends: "CUDA,RPC", CPUInfo: " AMD EPYC 9654 ", GPUInfo: "NVIDIA GeForce RTX 4090"}})
	if b == nil || b.Backends != "CUDA,RPC" || b.CPU != "AMD EPYC 9654" || b.GPU != "NVIDIA GeForce RTX 4090" || b.Flavour != "" || b.Summary() != "" {
		t.Errorf("build: %+v", b)
	}
}
