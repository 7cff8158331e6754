package rig

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// XpuSMIArgs are the arguments [ParseXpuSMI] expects xpu-smi to have been
// run with to list devices; append "-d", id before "-j" for one device's
// details.
var XpuSMIArgs = []string{"discovery", "-j"}

// xpuDevice is one device of `xpu-smi discovery -j`, or the detail object of
// `xpu-smi discovery -d N -j`.
type xpuDevice struct {
	DeviceID         json.RawMessage `json:"device_id"`
	DeviceName       json.RawMessage `json:"device_name"`
	DeviceType       json.RawMessage `json:"device_type"`
	PCIBDFAddress    json.RawMessage `json:"pci_bdf_address"`
	PCIDeviceID      json.RawMessage `json:"pci_device_id"`
	PCIVendorID      json.RawMessage `json:"pci_vendor_id"`
	UUID             json.RawMessage `json:"uuid"`
	VendorName       json.RawMessage `json:"vendor_name"`
	MemoryPhysical   json.RawMessage `json:"memory_physical_size_byte"`
	DriverVersion    json.RawMessage `json:"driver_version"`
	KMDVersion       json.RawMessage `json:"kernel_version"`
	DeviceFunctionTy json.RawMessage `json:"device_function_type"`
}

// ParseXpuSMI parses `xpu-smi discovery -j`:
//
//	{"device_list":[{"device_id":0,"device_name":"Intel(R) Arc(TM) Pro B70 Graphics",
//	  "device_type":"GPU","pci_bdf_address":"0000:03:00.0","pci_device_id":"0xe223",
//	  "uuid":"…","vendor_name":"Intel(R) Corporation",…}]}
//
// and the single-device form `xpu-smi discovery -d N -j`, a flat object
// that adds memory_physical_size_byte (a string on some builds, a number on
// others) and driver_version. An error object {"error":"…","errno":N} is
// returned as an error. Devices whose device_type is not GPU are skipped.
func ParseXpuSMI(out []byte) ([]GPU, error) {
	v, err := decodeAfterNoise(out, "{", func() any { return new(map[string]json.RawMessage) })
	if err != nil {
		return nil, fmt.Errorf("parsing xpu-smi output: %w", err)
	}
	top := *v.(*map[string]json.RawMessage)
	if e, ok := top["error"]; ok {
		msg := str(e)
		if msg == "" {
			msg = strings.TrimSpace(string(e))
		}
		if n := str(top["errno"]); n != "" {
			return nil, fmt.Errorf("xpu-smi reported an error: %s (errno %s)", msg, n)
		}
		return nil, fmt.Errorf("xpu-smi reported an error: %s", msg)
	}
	var devs []xpuDevice
	switch {
	case top["device_list"] != nil:
		if err := json.Unmarshal(top["device_list"], &devs); err != nil {
			return nil, fmt.Errorf("parsing xpu-smi output: device_list: %w", err)
		}
	case top["device_id"] != nil:
		var d xpuDevice
		if err := json.Unmarshal(*rawOf(top), &d); err != nil {
			return nil, fmt.Errorf("parsing xpu-smi output: %w", err)
		}
		devs = []xpuDevice{d}
	default:
		return nil, fmt.Errorf("parsing xpu-smi output: object has neither device_list nor device_id")
	}
	var gpus []GPU
	for i, d := range devs {
		if t := str(d.DeviceType); t != "" && !strings.EqualFold(t, "gpu") {
			continue
		}
		g := GPU{Index: i, Vendor: "intel", Source: "xpu-smi"}
		if n, ok := number(d.DeviceID); ok && n == float64(int(n)) {
			g.Index = int(n)
		}
		g.setName(str(d.DeviceName))
		if v := vendorFromName(str(d.VendorName)); v != "" {
			g.Vendor = v
		}
		g.PCIBusID = normalizeBDF(str(d.PCIBDFAddress))
		g.UUID = str(d.UUID)
		vid := pciHex(str(d.PCIVendorID))
		if vid == "" && g.Vendor == "intel" {
			vid = "8086"
		}
		if did := pciHex(str(d.PCIDeviceID)); vid != "" && did != "" {
			g.PCIID = vid + ":" + did
		}
		if b, ok := number(d.MemoryPhysical); ok {
			g.MemoryGB = gib(b)
		}
		g.DriverVersion = str(d.DriverVersion)
		gpus = append(gpus, g)
	}
	return gpus, nil
}

// rawOf re-encodes a decoded object so it can be decoded again into a
// struct.
func rawOf(m map[string]json.RawMessage) *json.RawMessage {
	b, _ := json.Marshal(m) // cannot fail: the values are valid JSON
	r := json.RawMessage(b)
	return &r
}

// syclLine matches both sycl-ls formats:
//
//	[level_zero:gpu][level_zero:0] <platform>, <device> <version> [<driver>]
//	[ext_oneapi_level_zero:gpu:0] <platform>, <device> <version> [<driver>]
var (
	syclNewRE = regexp.MustCompile(`^\[([A-Za-z0-9_]+):([A-Za-z]+)\]\[([A-Za-z0-9_]+):([0-9]+)\]\s*(.*)$`)
	syclOldRE = regexp.MustCompile(`^\[([A-Za-z0-9_]+):([A-Za-z]+):([0-9]+)\]\s*(.*)$`)
	// A device version: "12.55.8", "1.3", "8.9", "gfx1100", "0.0".
	syclVersionRE = regexp.MustCompile(`^([0-9]+(\.[0-9]+)+|gfx[0-9a-f]+)$`)
)

// syclBackendRank orders backends by preference when one card shows up in
// several: Level Zero first, then the native CUDA and HIP backends, then
// OpenCL.
var syclBackendRank = map[string]int{"level_zero": 0, "cuda": 1, "hip": 2, "opencl": 3}

// ParseSyclLs parses sycl-ls output, one line per backend and device:
//
//	[level_zero:gpu][level_zero:0] Intel(R) oneAPI Unified Runtime over Level-Zero, Intel(R) Arc(TM) A770 Graphics 12.55.8 [1.3.29735+27]
//	[opencl:gpu][opencl:1] Intel(R) OpenCL Graphics, Intel(R) Arc(TM) A770 Graphics OpenCL 3.0 NEO  [24.22.29735.27]
//
// and the older (oneAPI ≤ 2024.0) form
// "[ext_oneapi_level_zero:gpu:0] Intel(R) Level-Zero, <device> 1.3 [1.3.26241]".
// Only GPUs are kept. The same card is listed once per backend, so for each
// vendor only the devices of its most preferred backend are returned
// (level_zero, then cuda, hip, opencl); the bracketed driver version becomes
// DriverVersion. Multi-tile parts exposed per tile stay one GPU per tile.
// Lines that are not device lines (warnings) are ignored.
func ParseSyclLs(out []byte) ([]GPU, error) {
	type entry struct {
		backend string
		gpu     GPU
	}
	var entries []entry
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		var backend, typ, idx, rest string
		if m := syclNewRE.FindStringSubmatch(line); m != nil {
			backend, typ, idx, rest = m[1], m[2], m[4], m[5]
		} else if m := syclOldRE.FindStringSubmatch(line); m != nil {
			backend, typ, idx, rest = m[1], m[2], m[3], m[4]
		} else {
			continue
		}
		if !strings.EqualFold(typ, "gpu") {
			continue
		}
		backend = strings.TrimPrefix(strings.ToLower(backend), "ext_oneapi_")
		n, err := strconv.Atoi(idx)
		if err != nil {
			continue // too many digits
		}
		name, driver := syclDevice(rest)
		g := GPU{Index: n, Source: "sycl-ls", DriverVersion: driver}
		g.setName(name)
		switch backend {
		case "cuda":
			g.Vendor = "nvidia"
		case "hip":
			g.Vendor = "amd"
		default:
			g.Vendor = vendorFromName(name)
		}
		entries = append(entries, entry{backend, g})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("parsing sycl-ls output: %w", err)
	}
	best := map[string]int{} // vendor → best backend rank
	rank := func(b string) int {
		if r, ok := syclBackendRank[b]; ok {
			return r
		}
		return len(syclBackendRank)
	}
	for _, e := range entries {
		if r, ok := best[e.gpu.Vendor]; !ok || rank(e.backend) < r {
			best[e.gpu.Vendor] = rank(e.backend)
		}
	}
	var gpus []GPU
	for _, e := range entries {
		if rank(e.backend) == best[e.gpu.Vendor] {
			gpus = append(gpus, e.gpu)
		}
	}
	return gpus, nil
}

// syclDevice splits "<platform>, <device> <version> [<driver>]" into the
// device name and the driver version.
func syclDevice(rest string) (name, driver string) {
	rest = strings.TrimSpace(rest)
	if i := strings.LastIndex(rest, "["); i >= 0 && strings.HasSuffix(rest, "]") {
		driver = strings.TrimSpace(rest[i+1 : len(rest)-1])
		rest = strings.TrimSpace(rest[:i])
	}
	if _, dev, ok := strings.Cut(rest, ", "); ok {
		rest = dev
	}
	if i := strings.Index(rest, " OpenCL "); i >= 0 {
		rest = rest[:i]
	} else {
		rest = strings.TrimSuffix(rest, " OpenCL")
	}
	f := strings.Fields(rest)
	if n := len(f); n > 1 && syclVersionRE.MatchString(f[n-1]) {
		f = f[:n-1]
	}
	return strings.Join(f, " "), clean(driver)
}
