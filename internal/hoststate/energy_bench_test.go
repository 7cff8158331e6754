package hoststate

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// cpuSeconds is this process's CPU time and that of its reaped children.
func cpuSeconds(b *testing.B) float64 {
	b.Helper()
	var self, kids syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &self); err != nil {
		b.Fatal(err)
	}
	if err := syscall.Getrusage(syscall.RUSAGE_CHILDREN, &kids); err != nil {
		b.Fatal(err)
	}
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return tv(self.Utime) + tv(self.Stime) + tv(kids.Utime) + tv(kids.Stime)
}

// benchTick measures one power sample: wall time per tick (ns/op) and the
// CPU it costs, rigor's and the tools' (cpu-ms/tick); at the default 100
// ms interval a run pays ten ticks a second (BENCHMARKS.md, issue 32).
func benchTick(b *testing.B, opts Options) {
	m := newPowerMeter(opts)
	ctx := context.Background()
	m.readLimits(ctx)
	t0 := time.Now()
	cpu0 := cpuSeconds(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		m.tick(ctx, t0.Add(time.Duration(i)*DefaultPowerInterval))
	}
	b.StopTimer()
	b.ReportMetric((cpuSeconds(b)-cpu0)*1000/float64(b.N), "cpu-ms/tick")
}

// BenchmarkPowerTick_rapl reads a package and a DRAM counter.
func BenchmarkPowerTick_rapl(b *testing.B) {
	root := b.TempDir()
	for name, body := range map[string]string{
		"class/powercap/intel-rapl:0/name": "package-0\n", "class/powercap/intel-rapl:0/energy_uj": "123456789\n",
		"class/powercap/intel-rapl:0/max_energy_range_uj": "262143328850\n",
		"class/powercap/intel-rapl:0:1/name":              "dram\n", "class/powercap/intel-rapl:0:1/energy_uj": "98765\n",
	} {
		p := filepath.Join(root, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(body), 0o644)
	}
	benchTick(b, Options{SysRoot: root, LookPath: (&fakeTools{}).look})
}

// BenchmarkPowerTick_nvidiaScript runs a stand-in nvidia-smi (a shell
// script printing two GPUs) each tick: the cost of starting a tool, not
// of NVML itself, which only a machine with the driver can measure.
func BenchmarkPowerTick_nvidiaScript(b *testing.B) {
	dir := b.TempDir()
	tool := filepath.Join(dir, "nvidia-smi")
	os.WriteFile(tool, []byte("#!/bin/sh\necho '0, 312.45, 450.00, 450.00, 81234567'\necho '1, 296.10, 300.00, 300.00, 64012345'\n"), 0o755)
	benchTick(b, Options{SysRoot: b.TempDir(), LookPath: func(name string) (string, error) {
		if name == "nvidia-smi" {
			return tool, nil
		}
		return "", os.ErrNotExist
	}, Run: func(ctx context.Context, name string, args ...string) ([]byte, error) {
		return runCommand(ctx, tool, args...)
	}})
}
