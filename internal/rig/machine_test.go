package rig

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// writeFiles writes path → content under root. A content starting with
// "-> " makes a symlink to the rest instead.
func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for p, content := range files {
		full := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if target, ok := strings.CutPrefix(content, "-> "); ok {
			if err := os.Symlink(target, full); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// pciCard returns the sysfs files of one PCI display device at bdf, and
// /sys/class/drm/<card>/device pointing at it the way the kernel lays it
// out. extra holds more files relative to the PCI device directory.
func pciCard(card, bdf, vendor, device, driver string, extra map[string]string) map[string]string {
	dev := "sys/devices/pci0000:00/" + bdf
	files := map[string]string{
		dev + "/vendor":                            vendor + "\n",
		dev + "/device":                            device + "\n",
		dev + "/uevent":                            fmt.Sprintf("DRIVER=%s\nPCI_CLASS=30000\nPCI_ID=%s:%s\nPCI_SUBSYS_ID=8086:1100\nPCI_SLOT_NAME=%s\nMODALIAS=pci:v0000%sd0000%s\n", driver, strings.ToUpper(vendor[2:]), strings.ToUpper(device[2:]), bdf, vendor[2:], device[2:]),
		"sys/class/drm/" + card + "/device":        "-> ../../../devices/pci0000:00/" + bdf,
		"sys/class/drm/" + card + "/dev":           "226:1\n",
		"sys/class/drm/" + card + "-DP-1/status":   "disconnected\n",
		"sys/class/drm/renderD1" + card[4:] + "/d": "",
	}
	for k, v := range extra {
		files[dev+"/"+k] = v
	}
	return files
}

func merge(ms ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range ms {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

const b70VRAM = "34359738368\n" // xe tile0/physical_vram_size_bytes: 32 GiB

// b70Box is the sysfs and procfs of the seeds' rig: an EPYC 9015 with 16 GB,
// an ASPEED BMC display as card0 and four Arc Pro B70 on the xe driver.
func b70Box(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	files := merge(
		map[string]string{
			"proc/cpuinfo":              string(readTestdata(t, "proc/cpuinfo-epyc9015")),
			"proc/meminfo":              string(readTestdata(t, "proc/meminfo-16g")),
			"etc/os-release":            string(readTestdata(t, "proc/os-release-ubuntu-24.04.4")),
			"proc/sys/kernel/osrelease": "6.14.0-37-generic\n",
			"proc/sys/kernel/hostname":  "b70box\n",
			"sys/class/drm/version":     "drm 1.1.0 20060810\n",
		},
		pciCard("card0", "0000:c2:00.0", "0x1a03", "0x2000", "ast", nil),
		pciCard("card1", "0000:03:00.0", "0x8086", "0xe223", "xe", map[string]string{"tile0/physical_vram_size_bytes": b70VRAM}),
		pciCard("card2", "0000:23:00.0", "0x8086", "0xe223", "xe", map[string]string{"tile0/physical_vram_size_bytes": b70VRAM}),
		pciCard("card3", "0000:43:00.0", "0x8086", "0xe223", "xe", map[string]string{"tile0/physical_vram_size_bytes": b70VRAM}),
		pciCard("card4", "0000:63:00.0", "0x8086", "0xe223", "xe", map[string]string{"tile0/physical_vram_size_bytes": b70VRAM}),
	)
	writeFiles(t, root, files)
	return root
}

func TestReadDRM(t *testing.T) {
	root := t.TempDir()
	files := merge(
		pciCard("card0", "0000:c2:00.0", "0x1a03", "0x2000", "ast", nil), // BMC: not a GPU vendor
		pciCard("card1", "0000:03:00.0", "0x8086", "0xe223", "xe", map[string]string{
			"tile0/physical_vram_size_bytes": "17179869184\n",
			"tile1/physical_vram_size_bytes": "17179869184\n",
		}),
		pciCard("card2", "0000:0b:00.0", "0x1002", "0x744c", "amdgpu", map[string]string{
			"mem_info_vram_total": "25753026560\n",
			"product_name":        "Radeon RX 7900 XTX\n",
		}),
		pciCard("card3", "0000:00:02.0", "0x8086", "0xa780", "i915", nil), // iGPU: skipped
		pciCard("card4", "0000:29:00.0", "0x8086", "0x56a0", "i915", nil),
		pciCard("card5", "0000:01:00.0", "0x10de", "0x2684", "nvidia", map[string]string{
			"product_name": "\n", // present but empty, as on many cards
		}),
		map[string]string{"sys/class/drm/card4/lmem_total_bytes": "17163091968\n"},
	)
	writeFiles(t, root, files)
	// card4 without PCI_SLOT_NAME, the BDF then comes from the symlink
	// target, and without device/device, the PCI id then comes from uevent.
	writeFiles(t, root, map[string]string{"sys/devices/pci0000:00/0000:29:00.0/uevent": "DRIVER=i915\nPCI_ID=8086:56A0\n"})
	os.Remove(filepath.Join(root, "sys/devices/pci0000:00/0000:29:00.0/device"))

	got, err := ReadDRM(filepath.Join(root, "sys/class/drm"))
	if err != nil {
		t.Fatal(err)
	}
	want := []GPU{
		{Index: 0, Vendor: "intel", MemoryGB: 32, PCIBusID: "0000:03:00.0", Source: "sysfs", Driver: "xe", PCIID: "8086:e223"},
		{Index: 1, Vendor: "amd", Name: "Radeon RX 7900 XTX", MemoryGB: 24, PCIBusID: "0000:0b:00.0", Source: "sysfs", Driver: "amdgpu", PCIID: "1002:744c"},
		{Index: 2, Vendor: "intel", MemoryGB: 16, PCIBusID: "0000:29:00.0", Source: "sysfs", Driver: "i915", PCIID: "8086:56a0"},
		{Index: 3, Vendor: "nvidia", PCIBusID: "0000:01:00.0", Source: "sysfs", Driver: "nvidia", PCIID: "10de:2684"},
	}
	if !slices.Equal(got, want) {
		t.Errorf("ReadDRM:\ngot  %+v\nwant %+v", got, want)
	}

	if _, err := ReadDRM(filepath.Join(root, "nonexistent")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("ReadDRM(missing dir) error = %v, want one wrapping ErrNotExist", err)
	}
}

// fakeTools stands in for the commands on PATH: name → function of the
// arguments. It records every call.
type fakeTools struct {
	mu    sync.Mutex
	tools map[string]func(ctx context.Context, args []string) ([]byte, error)
	calls []string
}

func (f *fakeTools) lookPath(name string) (string, error) {
	if _, ok := f.tools[name]; ok {
		return "/usr/bin/" + name, nil
	}
	return "", fmt.Errorf("exec: %q: executable file not found in $PATH", name)
}

func (f *fakeTools) run(ctx context.Context, name string, args ...string) ([]byte, error) {
	f.mu.Lock()
	f.calls = append(f.calls, strings.Join(append([]string{name}, args...), " "))
	f.mu.Unlock()
	fn, ok := f.tools[name]
	if !ok {
		return nil, fmt.Errorf("%s not installed", name)
	}
	return fn(ctx, args)
}

func (f *fakeTools) opts(root string) DetectOptions {
	return DetectOptions{Root: root, Run: f.run, LookPath: f.lookPath}
}

func output(s string) func(context.Context, []string) ([]byte, error) {
	return func(context.Context, []string) ([]byte, error) { return []byte(s), nil }
}

func failing(msg string) func(context.Context, []string) ([]byte, error) {
	return func(context.Context, []string) ([]byte, error) { return nil, errors.New(msg) }
}

// toolchain is the compilers of an Ubuntu 24.04 build box, as their
// --version prints them.
func toolchain(tools map[string]func(context.Context, []string) ([]byte, error)) {
	tools["cmake"] = output("cmake version 3.28.3\n\nCMake suite maintained and supported by Kitware (kitware.com/cmake).\n")
	tools["cc"] = output("cc (Ubuntu 13.3.0-6ubuntu2~24.04) 13.3.0\nCopyright (C) 2023 Free Software Foundation, Inc.\n")
	tools["g++"] = output("g++ (Ubuntu 13.3.0-6ubuntu2~24.04) 13.3.0\nCopyright (C) 2023 Free Software Foundation, Inc.\n")
	tools["python3"] = output("Python 3.12.3\n")
	tools["nvcc"] = output("nvcc: NVIDIA (R) Cuda compiler driver\nCopyright (c) 2005-2025 NVIDIA Corporation\nBuilt on Wed_Jan_15_19:20:09_PST_2025\nCuda compilation tools, release 12.8, V12.8.61\nBuild cuda_12.8.r12.8/compiler.35404655_0\n")
	tools["icpx"] = output("Intel(R) oneAPI DPC++/C++ Compiler 2025.0.4 (2025.0.4.20241205)\nTarget: x86_64-unknown-linux-gnu\n")
}

func TestDetect_B70WithSyclLs(t *testing.T) {
	root := b70Box(t)
	f := &fakeTools{tools: map[string]func(context.Context, []string) ([]byte, error){
		"sycl-ls": output(string(readTestdata(t, "sycl-ls/b70x4.txt"))),
	}}
	toolchain(f.tools)
	r, err := Detect(context.Background(), f.opts(root))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := r.Summary(), "4× Intel Arc Pro B70 32 GB, AMD EPYC 9015, 16 GB, Ubuntu 24.04.4 LTS"; got != want {
		t.Errorf("Summary() = %q, want %q", got, want)
	}
	check := func(what string, got, want any) {
		t.Helper()
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s = %v, want %v", what, got, want)
		}
	}
	check("Hostname", r.Hostname, "b70box")
	check("Kernel", r.Kernel, "6.14.0-37-generic")
	check("AcceleratorModelName", r.AcceleratorModelName, "Intel Arc Pro B70")
	check("AcceleratorsPerNode", r.AcceleratorsPerNode, 4)
	check("AcceleratorMemoryCapacityGB", r.AcceleratorMemoryCapacityGB, 32)
	check("AcceleratorDriverVersion", r.AcceleratorDriverVersion, "1.6.33276+22")
	check("HostProcessorModelName", r.HostProcessorModelName, "AMD EPYC 9015 8-Core Processor")
	check("HostProcessorCoreCount", r.HostProcessorCoreCount, 16)
	check("HostMemoryCapacityGB", r.HostMemoryCapacityGB, 15.6)
	check("Notes", r.Notes, []string{"not on PATH: nvidia-smi, amd-smi, rocm-smi, xpu-smi"})
	check("Toolchain", r.Toolchain, map[string]string{
		"cmake":   "cmake version 3.28.3",
		"cc":      "cc (Ubuntu 13.3.0-6ubuntu2~24.04) 13.3.0",
		"g++":     "g++ (Ubuntu 13.3.0-6ubuntu2~24.04) 13.3.0",
		"python3": "Python 3.12.3",
		"nvcc":    "Cuda compilation tools, release 12.8, V12.8.61",
		"icpx":    "Intel(R) oneAPI DPC++/C++ Compiler 2025.0.4 (2025.0.4.20241205)",
	})
	for i, g := range r.Accelerators {
		want := GPU{Index: i, Vendor: "intel", Name: "Intel Arc Pro B70", RawName: "Intel(R) Arc(TM) Pro B70 Graphics",
			MemoryGB: 32, DriverVersion: "1.6.33276+22", Source: "sycl-ls", Driver: "xe", PCIID: "8086:e223"}
		if g != want {
			t.Errorf("GPU %d:\ngot  %+v\nwant %+v", i, g, want)
		}
	}
}

func TestDetect_B70WithXpuSMI(t *testing.T) {
	root := b70Box(t)
	f := &fakeTools{tools: map[string]func(context.Context, []string) ([]byte, error){
		"xpu-smi": func(_ context.Context, args []string) ([]byte, error) {
			switch strings.Join(args, " ") {
			case "discovery -j":
				return readTestdata(t, "xpu-smi/discovery-b70x4.json"), nil
			case "discovery -d 0 -j":
				return readTestdata(t, "xpu-smi/discovery-d0-string-memory.json"), nil
			case "config -d 0 -j", "config -d 1 -j":
				return readTestdata(t, "xpu-smi/config-b70-d0.json"), nil
			}
			return nil, errors.New("exit status 1")
		},
		"sycl-ls": failing("sycl-ls must not run when xpu-smi answered"),
	}}
	r, err := Detect(context.Background(), f.opts(root))
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Accelerators) != 4 {
		t.Fatalf("got %d GPUs, want 4: %+v", len(r.Accelerators), r.Accelerators)
	}
	g0 := r.Accelerators[0]
	if g0.DriverVersion != "1.6.33276+22" || g0.MemoryGB != 32 || g0.Driver != "xe" || g0.Source != "xpu-smi" {
		t.Errorf("GPU 0 = %+v, want xpu-smi's details merged with sysfs's driver", g0)
	}
	// Devices 1-3 have no details: sysfs supplies their memory by PCI address.
	for _, g := range r.Accelerators[1:] {
		if g.MemoryGB != 32 || g.Driver != "xe" || g.DriverVersion != "" {
			t.Errorf("GPU %d = %+v, want 32 GiB and driver xe from sysfs, no driver version", g.Index, g)
		}
	}
	// Power limits: xpu-smi config's sustained limit, where it answered.
	if r.Accelerators[0].PowerLimitW != 230 || r.Accelerators[1].PowerLimitW != 230 || r.Accelerators[2].PowerLimitW != 0 {
		t.Errorf("power limits %v, %v, %v; want 230, 230 and none (config failed)",
			r.Accelerators[0].PowerLimitW, r.Accelerators[1].PowerLimitW, r.Accelerators[2].PowerLimitW)
	}
	if got := r.Facts()["gpu"].(map[string]any)["powerLimitW"]; !reflect.DeepEqual(got, []any{230, 230}) {
		t.Errorf("gpu.powerLimitW = %#v, want the two reported limits", got)
	}
	if !slices.Contains(r.Notes, "xpu-smi discovery -d 3 -j: exit status 1") {
		t.Errorf("Notes = %q, want the failed detail query noted", r.Notes)
	}
	if slices.ContainsFunc(f.calls, func(c string) bool { return strings.HasPrefix(c, "sycl-ls") }) {
		t.Errorf("calls = %q, want no sycl-ls once xpu-smi found the Intel GPUs", f.calls)
	}
}

func TestDetect_SysfsOnly(t *testing.T) {
	root := b70Box(t)
	f := &fakeTools{tools: map[string]func(context.Context, []string) ([]byte, error){}}
	r, err := Detect(context.Background(), f.opts(root))
	if err != nil {
		t.Fatal(err)
	}
	if r.AcceleratorsPerNode != 4 || r.AcceleratorMemoryCapacityGB != 32 || r.AcceleratorModelName != "" {
		t.Errorf("got %d GPUs of %v GiB named %q, want 4 unnamed GPUs of 32 GiB from sysfs", r.AcceleratorsPerNode, r.AcceleratorMemoryCapacityGB, r.AcceleratorModelName)
	}
	if got, want := r.Summary(), "4× intel GPU 8086:e223 32 GB, AMD EPYC 9015, 16 GB, Ubuntu 24.04.4 LTS"; got != want {
		t.Errorf("Summary() = %q, want %q", got, want)
	}
	if want := []string{"not on PATH: nvidia-smi, amd-smi, rocm-smi, xpu-smi, sycl-ls"}; !slices.Equal(r.Notes, want) {
		t.Errorf("Notes = %q, want %q", r.Notes, want)
	}
	if r.Toolchain != nil {
		t.Errorf("Toolchain = %v, want none when nothing is on PATH", r.Toolchain)
	}
}

func TestDetect_NvidiaSMIFailsFallsBackToProcfs(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, merge(
		map[string]string{
			"proc/cpuinfo":               string(readTestdata(t, "proc/cpuinfo-epyc9015")),
			"proc/driver/nvidia/version": string(readTestdata(t, "proc/nvidia-version-proprietary")),
			"proc/driver/nvidia/gpus/0000:01:00.0/information": string(readTestdata(t, "proc/nvidia-information-4090")),
			"proc/sys/kernel/osrelease":                        "6.8.0-51-generic\n",
		},
		pciCard("card0", "0000:01:00.0", "0x10de", "0x2684", "nvidia", nil),
	))
	f := &fakeTools{tools: map[string]func(context.Context, []string) ([]byte, error){
		"nvidia-smi": failing("exit status 9: NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running."),
	}}
	r, err := Detect(context.Background(), f.opts(root))
	if err != nil {
		t.Fatal(err)
	}
	want := []GPU{{Index: 0, Vendor: "nvidia", Name: "NVIDIA GeForce RTX 4090", DriverVersion: "570.86.15",
		UUID: "GPU-3b5f2c1a-7d4e-4f6b-9a2c-1e8d7b6a9c1e", PCIBusID: "0000:01:00.0", Source: "procfs", Driver: "nvidia", PCIID: "10de:2684"}}
	if !slices.Equal(r.Accelerators, want) {
		t.Errorf("Accelerators:\ngot  %+v\nwant %+v", r.Accelerators, want)
	}
	wantNote := "nvidia-smi " + strings.Join(NvidiaSMIArgs, " ") + ": exit status 9: NVIDIA-SMI has failed"
	if !slices.ContainsFunc(r.Notes, func(n string) bool { return strings.HasPrefix(n, wantNote) }) {
		t.Errorf("Notes = %q, want one starting %q", r.Notes, wantNote)
	}
	for _, n := range []string{"reading /proc/meminfo: no such file or directory", "no /etc/os-release or /usr/lib/os-release"} {
		if !slices.Contains(r.Notes, n) {
			t.Errorf("Notes = %q, want %q", r.Notes, n)
		}
	}
	if r.Summary() != "1× NVIDIA GeForce RTX 4090, AMD EPYC 9015" {
		t.Errorf("Summary() = %q, want %q", r.Summary(), "1× NVIDIA GeForce RTX 4090, AMD EPYC 9015")
	}
}

func TestDetect_AmdSMIBrokenUsesRocmSMI(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, merge(
		pciCard("card1", "0000:03:00.0", "0x1002", "0x7551", "amdgpu", map[string]string{"mem_info_vram_total": "34342961152\n"}),
		pciCard("card2", "0000:83:00.0", "0x1002", "0x7551", "amdgpu", map[string]string{"mem_info_vram_total": "34342961152\n"}),
	))
	f := &fakeTools{tools: map[string]func(context.Context, []string) ([]byte, error){
		"amd-smi":  output("WARNING: amdgpu driver not loaded\n"),
		"rocm-smi": output(string(readTestdata(t, "rocm-smi/warning-before-json.txt"))),
	}}
	r, err := Detect(context.Background(), f.opts(root))
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Accelerators) != 2 {
		t.Fatalf("got %d GPUs, want 2 (sysfs must not add the cards rocm-smi reported): %+v", len(r.Accelerators), r.Accelerators)
	}
	for _, g := range r.Accelerators {
		if g.Source != "rocm-smi" || g.Driver != "amdgpu" || g.PCIID != "1002:7551" || g.Arch != "gfx1201" {
			t.Errorf("GPU %d = %+v, want rocm-smi's GPU completed with sysfs's driver and PCI id", g.Index, g)
		}
	}
	if !slices.Contains(r.Notes, "amd-smi: parsing amd-smi output: no JSON value found") {
		t.Errorf("Notes = %q, want amd-smi's unparseable output noted", r.Notes)
	}
	if got, want := r.Facts()["gpu"], map[string]any{"name": "AMD Radeon AI PRO R9700", "vendor": "amd", "count": 2, "vramGB": 32.0, "driver": "6.16.13"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Facts()[gpu] = %v, want %v", got, want)
	}
}

func TestDetect_Timeout(t *testing.T) {
	f := &fakeTools{tools: map[string]func(context.Context, []string) ([]byte, error){
		"nvidia-smi": func(ctx context.Context, _ []string) ([]byte, error) {
			<-ctx.Done() // a hung driver
			return nil, ctx.Err()
		},
	}}
	opts := f.opts(t.TempDir())
	opts.Timeout = 1 // nanosecond: the deadline has passed by the time Run looks
	r, err := Detect(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(r.Notes, func(n string) bool {
		return strings.HasPrefix(n, "nvidia-smi ") && strings.HasSuffix(n, ": timed out after 1ns")
	}) {
		t.Errorf("Notes = %q, want nvidia-smi's timeout noted", r.Notes)
	}
}

func TestDetect_Canceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	f := &fakeTools{tools: map[string]func(context.Context, []string) ([]byte, error){"nvidia-smi": output("")}}
	if r, err := Detect(ctx, f.opts(t.TempDir())); !errors.Is(err, context.Canceled) {
		t.Errorf("Detect(canceled) = %+v, %v; want context.Canceled", r, err)
	}
}

func TestDetect_RigFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "rig.json")
	gpu := `{"index":%d,"vendor":"intel","name":"Intel Arc Pro B70","memory_gb":32}`
	js := fmt.Sprintf(`{"hostname":"fake","accelerators":[`+gpu+`,`+gpu+`,`+gpu+`,`+gpu+`],
		"host_processor_model_name":"AMD EPYC 9015 8-Core Processor","host_memory_capacity_gb":15.6,
		"operating_system":"Ubuntu 24.04.4 LTS"}`, 0, 1, 2, 3)
	writeFiles(t, dir, map[string]string{"rig.json": js, "bad.json": `{"accelerator_model":"typo"}`})
	f := &fakeTools{tools: map[string]func(context.Context, []string) ([]byte, error){"nvidia-smi": failing("must not run")}}
	withRig := func(p string) DetectOptions {
		o := f.opts(t.TempDir())
		o.RigFile = p
		return o
	}
	r, err := Detect(context.Background(), withRig(path))
	if err != nil {
		t.Fatal(err)
	}
	if len(f.calls) != 0 {
		t.Errorf("calls = %q, want none with %s set", f.calls, RigFileEnv)
	}
	if got, want := r.Summary(), "4× Intel Arc Pro B70 32 GB, AMD EPYC 9015, 16 GB, Ubuntu 24.04.4 LTS"; got != want {
		t.Errorf("Summary() = %q, want %q", got, want)
	}
	if r.AcceleratorsPerNode != 4 || r.AcceleratorModelName != "Intel Arc Pro B70" || r.AcceleratorMemoryCapacityGB != 32 {
		t.Errorf("summary fields = %d, %q, %v; want them derived from the 4 accelerators", r.AcceleratorsPerNode, r.AcceleratorModelName, r.AcceleratorMemoryCapacityGB)
	}

	if _, err := Detect(context.Background(), withRig(filepath.Join(dir, "bad.json"))); err == nil || !strings.Contains(err.Error(), "accelerator_model") {
		t.Errorf("Detect with a misspelt key: error = %v, want one naming the key", err)
	}
	if _, err := Detect(context.Background(), withRig(filepath.Join(dir, "missing.json"))); !errors.Is(err, os.ErrNotExist) || !strings.HasPrefix(err.Error(), RigFileEnv) {
		t.Errorf("Detect with a missing file: error = %v, want ErrNotExist prefixed with %s", err, RigFileEnv)
	}
}

// TestDetect_ThisMachine runs the real detection: whatever the machine has,
// it must not fail, and Linux always has a kernel release, CPUs and RAM.
func TestDetect_ThisMachine(t *testing.T) {
	if _, err := os.Stat("/proc/cpuinfo"); err != nil {
		t.Skip("no /proc/cpuinfo")
	}
	t.Setenv(RigFileEnv, "")
	r, err := Detect(context.Background(), DetectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Kernel == "" || r.HostProcessorCoreCount == 0 || r.HostMemoryCapacityGB == 0 || r.Arch == "" {
		t.Errorf("Detect() = %+v, want kernel, CPU count, RAM and arch filled", r)
	}
	t.Logf("%s; notes %q; toolchain %q", r.Summary(), r.Notes, r.Toolchain)
}

func TestRunCommand(t *testing.T) {
	out, err := runCommand(context.Background(), "sh", "-c", "printf 'hi\\n'; echo 'noise' >&2")
	if err != nil || string(out) != "hi\n" {
		t.Errorf("runCommand(succeeding sh) = %q, %v; want stdout only", out, err)
	}
	_, err = runCommand(context.Background(), "sh", "-c", "echo; echo 'NVIDIA-SMI has failed' >&2; exit 9")
	if err == nil || err.Error() != "exit status 9: NVIDIA-SMI has failed" {
		t.Errorf("runCommand(failing sh) error = %v, want %q", err, "exit status 9: NVIDIA-SMI has failed")
	}
}

func TestDetect_AmdSMIPreferred(t *testing.T) {
	f := &fakeTools{tools: map[string]func(context.Context, []string) ([]byte, error){
		"amd-smi":  output(string(readTestdata(t, "amd-smi/rocm7-gpu_data-warning.txt"))),
		"rocm-smi": failing("rocm-smi must not run when amd-smi answered"),
	}}
	r, err := Detect(context.Background(), f.opts(t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := r.Summary(), "2× AMD Radeon AI PRO R9700 32 GB"; got != want {
		t.Errorf("Summary() = %q, want %q", got, want)
	}
	if slices.ContainsFunc(f.calls, func(c string) bool { return strings.HasPrefix(c, "rocm-smi") }) {
		t.Errorf("calls = %q, want no rocm-smi once amd-smi answered", f.calls)
	}
}

// The toolchain's versions are asked once, then read from the cache until
// an executable changes.
func TestDetect_toolchainCache(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "cmake")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	calls := 0
	opts := DetectOptions{
		Root:  t.TempDir(),
		Cache: filepath.Join(dir, "cache"),
		LookPath: func(name string) (string, error) {
			if name == "cmake" {
				return bin, nil
			}
			return "", exec.ErrNotFound
		},
		Run: func(ctx context.Context, name string, args ...string) ([]byte, error) {
			if name == "cmake" {
				calls++
				return []byte("cmake version 3.25.1\n"), nil
			}
			return nil, exec.ErrNotFound
		},
	}
	for i := 0; i < 2; i++ {
		r, err := Detect(context.Background(), opts)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.Toolchain["cmake"]; got != "cmake version 3.25.1" {
			t.Fatalf("run %d: toolchain cmake = %q", i, got)
		}
	}
	if calls != 1 {
		t.Errorf("cmake --version ran %d times, want 1 (the second from the cache)", calls)
	}
	// A changed executable is asked again.
	future := time.Now().Add(time.Hour)
	os.Chtimes(bin, future, future)
	if _, err := Detect(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	if calls != 2 {
		t.Errorf("after the executable changed, cmake --version ran %d times, want 2", calls)
	}
}
