package rig

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseCPUInfo(t *testing.T) {
	for _, tt := range []struct {
		file string
		want CPUInfo
	}{
		{"proc/cpuinfo-epyc9015", CPUInfo{ModelName: "AMD EPYC 9015 8-Core Processor", LogicalCPUs: 16}},
		{"proc/cpuinfo-rpi4", CPUInfo{ModelName: "Raspberry Pi 4 Model B Rev 1.4", LogicalCPUs: 4}},
	} {
		got, err := ParseCPUInfo(readTestdata(t, tt.file))
		if err != nil {
			t.Errorf("ParseCPUInfo(%s): %v", tt.file, err)
			continue
		}
		if got != tt.want {
			t.Errorf("ParseCPUInfo(%s) = %+v, want %+v", tt.file, got, tt.want)
		}
	}
	if got, err := ParseCPUInfo([]byte("model name : Foo\n")); err == nil {
		t.Errorf("ParseCPUInfo(no processor lines) = %+v, want an error", got)
	}
}

func TestParseMemInfo(t *testing.T) {
	got, err := ParseMemInfo(readTestdata(t, "proc/meminfo-16g"))
	if want := uint64(16318412) * 1024; err != nil || got != want {
		t.Errorf("ParseMemInfo(meminfo-16g) = %d, %v; want %d", got, err, want)
	}
	for _, in := range []string{
		"MemFree: 12 kB\n",
		"MemTotal: lots kB\n",
		"MemTotal: 12 MB\n",
		"MemTotal: 18446744073709551615 kB\n",
		"MemTotal:\n",
	} {
		if got, err := ParseMemInfo([]byte(in)); err == nil {
			t.Errorf("ParseMemInfo(%q) = %d, want an error", in, got)
		}
	}
}

func TestParseOSRelease(t *testing.T) {
	m := ParseOSRelease(readTestdata(t, "proc/os-release-ubuntu-24.04.4"))
	for k, want := range map[string]string{"PRETTY_NAME": "Ubuntu 24.04.4 LTS", "VERSION_CODENAME": "noble", "ID": "ubuntu"} {
		if m[k] != want {
			t.Errorf("ParseOSRelease(ubuntu)[%s] = %q, want %q", k, m[k], want)
		}
	}
	if got, want := osName(m), "Ubuntu 24.04.4 LTS"; got != want {
		t.Errorf("osName(ubuntu) = %q, want %q", got, want)
	}
	m = ParseOSRelease(readTestdata(t, "proc/os-release-no-pretty"))
	want := map[string]string{"NAME": "Tiny Linux", "VERSION": `3.1 "Pebble"`, "ID": "tiny"}
	if !reflect.DeepEqual(m, want) {
		t.Errorf("ParseOSRelease(no-pretty) = %q, want %q", m, want)
	}
	if got, want := osName(m), `Tiny Linux 3.1 "Pebble"`; got != want {
		t.Errorf("osName(no-pretty) = %q, want %q", got, want)
	}
}

func TestParseNvidiaVersion(t *testing.T) {
	for _, tt := range []struct{ file, want string }{
		{"proc/nvidia-version-proprietary", "570.86.15"},
		{"proc/nvidia-version-open-aarch64", "580.95.05"},
	} {
		got, err := ParseNvidiaVersion(readTestdata(t, tt.file))
		if err != nil || got != tt.want {
			t.Errorf("ParseNvidiaVersion(%s) = %q, %v; want %q", tt.file, got, err, tt.want)
		}
	}
	for _, in := range []string{"", "GCC version: gcc 12\n", "NVRM version: NVIDIA UNIX x86_64 Kernel Module\n"} {
		if got, err := ParseNvidiaVersion([]byte(in)); err == nil {
			t.Errorf("ParseNvidiaVersion(%q) = %q, want an error", in, got)
		}
	}
}

func TestParseNvidiaGPUInformation(t *testing.T) {
	got, err := ParseNvidiaGPUInformation(readTestdata(t, "proc/nvidia-information-4090"))
	want := GPU{Index: 0, Vendor: "nvidia", Name: "NVIDIA GeForce RTX 4090", UUID: "GPU-3b5f2c1a-7d4e-4f6b-9a2c-1e8d7b6a9c1e",
		PCIBusID: "0000:01:00.0", Source: "procfs", Driver: "nvidia"}
	if err != nil || got != want {
		t.Errorf("ParseNvidiaGPUInformation(4090) = %+v, %v\nwant %+v", got, err, want)
	}
	if _, err := ParseNvidiaGPUInformation([]byte("IRQ: 180\n")); err == nil || !strings.Contains(err.Error(), "no Model") {
		t.Errorf("ParseNvidiaGPUInformation(no Model) error = %v, want one about the missing Model line", err)
	}
}

func TestShortCPUName(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"AMD EPYC 9015 8-Core Processor", "AMD EPYC 9015"},
		{"AMD Ryzen 9 7950X 16-Core Processor", "AMD Ryzen 9 7950X"},
		{"Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz", "Intel Xeon Gold 6338"},
		{"13th Gen Intel(R) Core(TM) i5-13400", "13th Gen Intel Core i5-13400"},
		{"AMD Ryzen 7 8700G w/ Radeon 780M Graphics", "AMD Ryzen 7 8700G"},
		{"AMD Ryzen AI MAX+ 395 w/ Radeon 8060S", "AMD Ryzen AI MAX+ 395"},
		{"Raspberry Pi 4 Model B Rev 1.4", "Raspberry Pi 4 Model B Rev 1.4"},
		{"", ""},
	} {
		if got := ShortCPUName(tt.in); got != tt.want {
			t.Errorf("ShortCPUName(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
