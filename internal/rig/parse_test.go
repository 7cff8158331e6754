package rig

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func readTestdata(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", filepath.FromSlash(name)))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// gpuTest is one recorded output and the GPUs it must parse to; wantErr,
// when set, is a substring of the expected error.
type gpuTest struct {
	file    string
	want    []GPU
	wantErr string
}

func checkGPUs(t *testing.T, parse func([]byte) ([]GPU, error), tests []gpuTest) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			in := readTestdata(t, tt.file)
			got, err := parse(in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("parsing %s: got error %v, want one containing %q", tt.file, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("parsing %s: %v", tt.file, err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("parsing %s: got %d GPUs %+v, want %d %+v", tt.file, len(got), got, len(tt.want), tt.want)
			}
			for i := range got {
				if !reflect.DeepEqual(got[i], tt.want[i]) {
					t.Errorf("parsing %s: GPU %d:\ngot  %+v\nwant %+v", tt.file, i, got[i], tt.want[i])
				}
			}
		})
	}
}

func TestParseNvidiaSMI(t *testing.T) {
	rtx4090 := GPU{Index: 0, Vendor: "nvidia", Name: "NVIDIA GeForce RTX 4090", MemoryGB: 24, DriverVersion: "570.86.15",
		UUID: "GPU-3b5f2c1a-7d4e-4f6b-9a2c-1e8d7b6a9c1e", PCIBusID: "0000:01:00.0", Arch: "sm_89", Source: "nvidia-smi"}
	checkGPUs(t, ParseNvidiaSMI, []gpuTest{
		{file: "nvidia-smi/rtx4090.csv", want: []GPU{rtx4090}},
		{file: "nvidia-smi/4090-3090.csv", want: []GPU{rtx4090, {Index: 1, Vendor: "nvidia", Name: "NVIDIA GeForce RTX 3090",
			MemoryGB: 24, DriverVersion: "570.86.15", UUID: "GPU-8e0d4c7f-51a2-6b93-d0e4-7f2a9c3b5d18", PCIBusID: "0000:21:00.0",
			Arch: "sm_86", Source: "nvidia-smi"}}},
		// DGX Spark's GB10 has unified memory: memory.total is [N/A].
		{file: "nvidia-smi/gb10-na-memory.csv", want: []GPU{{Index: 0, Vendor: "nvidia", Name: "NVIDIA GB10", DriverVersion: "580.95.05",
			UUID: "GPU-a41c7e3d-92b8-4f05-b6d1-0c7e2f9a8b34", PCIBusID: "000f:01:00.0", Arch: "sm_121", Source: "nvidia-smi"}}},
		{file: "nvidia-smi/vgpu-not-supported.csv", want: []GPU{{Index: 0, Vendor: "nvidia", Name: "GRID A100D-20C", MemoryGB: 20,
			DriverVersion: "535.129.03", UUID: "GPU-5c2e9a71-0b4d-3f86-a7e2-d19c4b8f6a03", PCIBusID: "0000:02:00.0", Source: "nvidia-smi"}}},
		// Drivers older than ~510 refuse compute_cap and print this on stdout.
		{file: "nvidia-smi/old-driver-error.txt", wantErr: "line 1: got 1 fields, want 7"},
	})
}

func TestParseNvidiaSMI_Errors(t *testing.T) {
	for _, in := range []string{
		"x, GPU-1, NVIDIA A100, 00000000:01:00.0, 40960, 550.54.15, 8.0\n",
		"0, GPU-1, NVIDIA A100, 00000000:01:00.0, lots, 550.54.15, 8.0\n",
		"0, GPU-1, NVIDIA A100\n",
	} {
		if got, err := ParseNvidiaSMI([]byte(in)); err == nil {
			t.Errorf("ParseNvidiaSMI(%q) = %+v, want an error", in, got)
		}
	}
	if got, err := ParseNvidiaSMI([]byte("\n\n")); err != nil || len(got) != 0 {
		t.Errorf("ParseNvidiaSMI(blank lines) = %+v, %v; want no GPUs and no error", got, err)
	}
}

func TestParseRocmSMI(t *testing.T) {
	r9700 := func(i int, bdf, uid string) GPU {
		return GPU{Index: i, Vendor: "amd", Name: "AMD Radeon AI PRO R9700", MemoryGB: 32, DriverVersion: "6.16.13",
			UUID: uid, PCIBusID: bdf, Arch: "gfx1201", Source: "rocm-smi"}
	}
	two := []GPU{r9700(0, "0000:03:00.0", "0x5a1e92c3b7d04f61"), r9700(1, "0000:83:00.0", "0x7c03d4e8a1f25b96")}
	checkGPUs(t, ParseRocmSMI, []gpuTest{
		{file: "rocm-smi/r9700-x2.json", want: two},
		{file: "rocm-smi/warning-before-json.txt", want: two},
		{file: "rocm-smi/old-spelling-7900xtx.json", want: []GPU{{Index: 0, Vendor: "amd",
			Name: "Navi 31 [Radeon RX 7900 XT/7900 XTX]", MemoryGB: 24, DriverVersion: "6.2.4",
			UUID: "0x9246a1e3c5b07d28", PCIBusID: "0000:0b:00.0", Source: "rocm-smi"}}},
		{file: "rocm-smi/empty.json", want: nil},
		{file: "nvidia-smi/old-driver-error.txt", wantErr: "parsing rocm-smi output"},
	})
}

func TestParseAmdSMI(t *testing.T) {
	r9700 := func(i int, bdf string) GPU {
		return GPU{Index: i, Vendor: "amd", Name: "AMD Radeon AI PRO R9700", MemoryGB: 32, DriverVersion: "6.16.13",
			PCIBusID: bdf, Arch: "gfx1201", Source: "amd-smi", Driver: "amdgpu", PCIID: "1002:7551"}
	}
	checkGPUs(t, ParseAmdSMI, []gpuTest{
		{file: "amd-smi/rocm6-list-7900xtx.json", want: []GPU{{Index: 0, Vendor: "amd", Name: "AMD Radeon RX 7900 XTX",
			MemoryGB: 24, DriverVersion: "6.8.5", PCIBusID: "0000:0b:00.0", Arch: "gfx1100", Source: "amd-smi",
			Driver: "amdgpu", PCIID: "1002:744c"}}},
		{file: "amd-smi/rocm60-size-string.json", want: []GPU{{Index: 0, Vendor: "amd", Name: "AMD Instinct MI210",
			MemoryGB: 64, DriverVersion: "6.3.6", PCIBusID: "0000:c3:00.0", Source: "amd-smi",
			Driver: "amdgpu", PCIID: "1002:740f"}}},
		{file: "amd-smi/rocm7-gpu_data-warning.txt", want: []GPU{r9700(0, "0000:03:00.0"), r9700(1, "0000:83:00.0")}},
		{file: "rocm-smi/r9700-x2.json", wantErr: "neither gpu_data nor gpu"},
		{file: "nvidia-smi/rtx4090.csv", wantErr: "parsing amd-smi output"},
	})
}

func TestParseXpuSMI(t *testing.T) {
	b70 := func(i int, bdf, uuid string) GPU {
		return GPU{Index: i, Vendor: "intel", Name: "Intel Arc Pro B70", RawName: "Intel(R) Arc(TM) Pro B70 Graphics",
			UUID: uuid, PCIBusID: bdf, Source: "xpu-smi", PCIID: "8086:e223"}
	}
	d0 := b70(0, "0000:03:00.0", "00000000-0000-0003-0000-0000e2238086")
	d0.MemoryGB, d0.DriverVersion = 32, "1.6.33276+22"
	checkGPUs(t, ParseXpuSMI, []gpuTest{
		{file: "xpu-smi/discovery-b70x4.json", want: []GPU{
			b70(0, "0000:03:00.0", "00000000-0000-0003-0000-0000e2238086"),
			b70(1, "0000:23:00.0", "00000000-0000-0023-0000-0000e2238086"),
			b70(2, "0000:43:00.0", "00000000-0000-0043-0000-0000e2238086"),
			b70(3, "0000:63:00.0", "00000000-0000-0063-0000-0000e2238086"),
		}},
		{file: "xpu-smi/discovery-d0-string-memory.json", want: []GPU{d0}},
		{file: "xpu-smi/discovery-d0-number-memory.json", want: []GPU{{Index: 0, Vendor: "intel",
			Name: "Intel Data Center GPU Max 1100", RawName: "Intel(R) Data Center GPU Max 1100", MemoryGB: 48,
			DriverVersion: "I915_23.10.72_PSB_231129.76", UUID: "01000000-0000-0000-0000-0029000000bd",
			PCIBusID: "0000:29:00.0", Source: "xpu-smi", PCIID: "8086:0bda"}}},
		{file: "xpu-smi/error-level-zero.json", wantErr: "xpu-smi reported an error: Level Zero Initialization Error (errno 3)"},
		{file: "rocm-smi/r9700-x2.json", wantErr: "neither device_list nor device_id"},
	})
}

func TestParseSyclLs(t *testing.T) {
	b70 := func(i int) GPU {
		return GPU{Index: i, Vendor: "intel", Name: "Intel Arc Pro B70", RawName: "Intel(R) Arc(TM) Pro B70 Graphics",
			DriverVersion: "1.6.33276+22", Source: "sycl-ls"}
	}
	a770 := GPU{Index: 0, Vendor: "intel", Name: "Intel Arc A770", RawName: "Intel(R) Arc(TM) A770 Graphics",
		DriverVersion: "1.3.29735+27", Source: "sycl-ls"}
	checkGPUs(t, ParseSyclLs, []gpuTest{
		// Four cards, each listed by Level Zero and by OpenCL: four GPUs.
		{file: "sycl-ls/b70x4.txt", want: []GPU{b70(0), b70(1), b70(2), b70(3)}},
		{file: "sycl-ls/a770-doc.txt", want: []GPU{a770}},
		{file: "sycl-ls/old-oneapi-2024.0.txt", want: []GPU{
			{Index: 0, Vendor: "intel", Name: "Intel Arc A770", RawName: "Intel(R) Arc(TM) A770 Graphics",
				DriverVersion: "1.3.27191", Source: "sycl-ls"},
			{Index: 0, Vendor: "nvidia", Name: "NVIDIA GeForce RTX 3090", DriverVersion: "CUDA 12.2", Source: "sycl-ls"},
		}},
		{file: "sycl-ls/warnings-selector.txt", want: []GPU{b70(0)}},
		{file: "sycl-ls/hip-cuda.txt", want: []GPU{
			{Index: 0, Vendor: "nvidia", Name: "NVIDIA GeForce RTX 4090", DriverVersion: "CUDA 12.8", Source: "sycl-ls"},
			{Index: 0, Vendor: "amd", Name: "AMD Radeon RX 7900 XTX", DriverVersion: "HIP 60342.13", Source: "sycl-ls"},
		}},
	})
}

func TestNormalizeName(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"Intel(R) Arc(TM) Pro B70 Graphics", "Intel Arc Pro B70"},
		{"Intel(R) Arc(TM) A770 Graphics", "Intel Arc A770"},
		{"NVIDIA GeForce RTX 4090", "NVIDIA GeForce RTX 4090"},
		{"AMD Radeon AI PRO R9700", "AMD Radeon AI PRO R9700"},
		{"Intel(R) Graphics", "Intel Graphics"},
		{"Intel® Data Center GPU Max 1550", "Intel Data Center GPU Max 1550"},
		{"  Intel(R)  UHD Graphics 770 ", "Intel UHD Graphics 770"},
		{"", ""},
	} {
		if got := NormalizeName(tt.in); got != tt.want {
			t.Errorf("NormalizeName(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestNormalizeBDF(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"00000000:01:00.0", "0000:01:00.0"},
		{"0000000F:01:00.0", "000f:01:00.0"},
		{"0000:0B:00.0", "0000:0b:00.0"},
		{"03:00.0", "0000:03:00.0"},
		{"10000:01:00.0", "10000:01:00.0"}, // VMD domains are five digits
		{"", ""},
	} {
		if got := normalizeBDF(tt.in); got != tt.want {
			t.Errorf("normalizeBDF(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
