package rig

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// RocmSMIArgs are the arguments [ParseRocmSMI] expects rocm-smi to have been
// run with.
var RocmSMIArgs = []string{
	"--showproductname", "--showmeminfo", "vram", "--showdriverversion",
	"--showbus", "--showuniqueid", "--json",
}

// AmdSMIArgs are the arguments [ParseAmdSMI] expects amd-smi to have been run
// with.
var AmdSMIArgs = []string{"static", "--json"}

var cardKeyRE = regexp.MustCompile(`^card([0-9]+)$`)

// ParseRocmSMI parses rocm-smi's JSON ([RocmSMIArgs]): one object keyed by
// card0, card1, … plus "system", every value a string:
//
//	{"card0":{"Card Series":"AMD Radeon AI PRO R9700","GFX Version":"gfx1201",
//	  "VRAM Total Memory (B)":"34342961152","PCI Bus":"0000:03:00.0",…},
//	 "system":{"Driver version":"6.16.13"}}
//
// Keys are matched case-insensitively (older rocm-smi writes "Card series",
// newer "Card Series"), numbers are accepted where strings are expected, and
// warnings printed before the JSON are skipped. The GPUs come back ordered
// by card number.
func ParseRocmSMI(out []byte) ([]GPU, error) {
	v, err := decodeAfterNoise(out, "{", func() any { return new(map[string]json.RawMessage) })
	if err != nil {
		return nil, fmt.Errorf("parsing rocm-smi output: %w", err)
	}
	top := *v.(*map[string]json.RawMessage)
	driver := ""
	for k, raw := range top {
		if strings.EqualFold(k, "system") {
			if sys, err := lowerKeys(raw); err == nil {
				driver = str(sys["driver version"])
			}
		}
	}
	var gpus []GPU
	for k, raw := range top {
		m := cardKeyRE.FindStringSubmatch(strings.ToLower(k))
		if m == nil {
			continue
		}
		idx, err := strconv.Atoi(m[1])
		if err != nil {
			return nil, fmt.Errorf("parsing rocm-smi output: %s: bad card number", k)
		}
		card, err := lowerKeys(raw)
		if err != nil {
			return nil, fmt.Errorf("parsing rocm-smi output: %s: %w", k, err)
		}
		g := GPU{Index: idx, Vendor: "amd", Source: "rocm-smi", DriverVersion: driver}
		name := str(card["card series"])
		if name == "" {
			name = str(card["marketing name"])
		}
		if name == "" {
			name = str(card["device name"])
		}
		g.setName(name)
		if v := vendorFromName(str(card["card vendor"])); v != "" {
			g.Vendor = v
		}
		g.Arch = strings.ToLower(str(card["gfx version"]))
		if b, ok := number(card["vram total memory (b)"]); ok {
			g.MemoryGB = gib(b)
		}
		g.PCIBusID = normalizeBDF(str(card["pci bus"]))
		g.UUID = str(card["unique id"])
		if d := str(card["driver version"]); d != "" {
			g.DriverVersion = d
		}
		gpus = append(gpus, g)
	}
	sort.Slice(gpus, func(i, j int) bool { return gpus[i].Index < gpus[j].Index })
	return gpus, nil
}

// amdSMIGPU is one GPU of `amd-smi static --json`. Fields are raw so that
// strings, numbers and "N/A" are all accepted.
type amdSMIGPU struct {
	GPU  json.RawMessage `json:"gpu"`
	Asic struct {
		MarketName            json.RawMessage `json:"market_name"`
		VendorName            json.RawMessage `json:"vendor_name"`
		VendorID              json.RawMessage `json:"vendor_id"`
		DeviceID              json.RawMessage `json:"device_id"`
		TargetGraphicsVersion json.RawMessage `json:"target_graphics_version"`
		PCIBDF                json.RawMessage `json:"pci_bdf"`
		ASICSerial            json.RawMessage `json:"asic_serial"`
	} `json:"asic"`
	Bus struct {
		BDF json.RawMessage `json:"bdf"`
	} `json:"bus"`
	Board struct {
		ProductName json.RawMessage `json:"product_name"`
	} `json:"board"`
	Driver struct {
		Name    json.RawMessage `json:"name"`
		Version json.RawMessage `json:"version"`
	} `json:"driver"`
	VRAM struct {
		Size json.RawMessage `json:"size"`
	} `json:"vram"`
}

// ParseAmdSMI parses `amd-smi static --json` ([AmdSMIArgs]). The top level is
// a list of GPUs in ROCm 6.x and {"gpu_data":[…]} in ROCm 7.x; each GPU has
// gpu, asic{market_name, target_graphics_version, …}, bus{bdf},
// driver{name, version} and vram{size}, where size is {"value":32624,
// "unit":"MB"} or, in older releases, "32624 MB". "N/A" values are left
// empty and warnings before the JSON are skipped.
func ParseAmdSMI(out []byte) ([]GPU, error) {
	v, err := decodeAfterNoise(out, "[{", func() any { return new(json.RawMessage) })
	if err != nil {
		return nil, fmt.Errorf("parsing amd-smi output: %w", err)
	}
	raw := *v.(*json.RawMessage)
	var list []amdSMIGPU
	switch raw[0] {
	case '[':
		if err := json.Unmarshal(raw, &list); err != nil {
			return nil, fmt.Errorf("parsing amd-smi output: %w", err)
		}
	default:
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(raw, &obj); err != nil {
			return nil, fmt.Errorf("parsing amd-smi output: %w", err)
		}
		switch {
		case obj["gpu_data"] != nil:
			if err := json.Unmarshal(obj["gpu_data"], &list); err != nil {
				return nil, fmt.Errorf("parsing amd-smi output: gpu_data: %w", err)
			}
		case obj["gpu"] != nil:
			var one amdSMIGPU
			if err := json.Unmarshal(raw, &one); err != nil {
				return nil, fmt.Errorf("parsing amd-smi output: %w", err)
			}
			list = []amdSMIGPU{one}
		case obj["error"] != nil:
			return nil, fmt.Errorf("amd-smi reported an error: %s", str(obj["error"]))
		default:
			return nil, fmt.Errorf("parsing amd-smi output: object has neither gpu_data nor gpu")
		}
	}
	gpus := make([]GPU, 0, len(list))
	for i, a := range list {
		g := GPU{Index: i, Vendor: "amd", Source: "amd-smi"}
		if n, ok := number(a.GPU); ok && n == float64(int(n)) {
			g.Index = int(n)
		}
		name := str(a.Asic.MarketName)
		if name == "" {
			name = str(a.Board.ProductName)
		}
		g.setName(name)
		if v := vendorFromPCI(str(a.Asic.VendorID)); v != "" {
			g.Vendor = v
		}
		if vid, did := pciHex(str(a.Asic.VendorID)), pciHex(str(a.Asic.DeviceID)); vid != "" && did != "" {
			g.PCIID = vid + ":" + did
		}
		g.Arch = strings.ToLower(str(a.Asic.TargetGraphicsVersion))
		g.PCIBusID = normalizeBDF(str(a.Bus.BDF))
		if g.PCIBusID == "" {
			g.PCIBusID = normalizeBDF(str(a.Asic.PCIBDF))
		}
		g.Driver = str(a.Driver.Name)
		g.DriverVersion = str(a.Driver.Version)
		g.MemoryGB = amdSMISize(a.VRAM.Size)
		gpus = append(gpus, g)
	}
	return gpus, nil
}

// pciHex renders a PCI id ("0x7551", "7551", "29777") as four lower-case hex
// digits, or "" when it is not a number.
func pciHex(s string) string {
	if s == "" {
		return ""
	}
	var n uint64
	var err error
	if h, ok := strings.CutPrefix(strings.ToLower(s), "0x"); ok {
		n, err = strconv.ParseUint(h, 16, 64)
	} else {
		n, err = strconv.ParseUint(s, 10, 64)
	}
	if err != nil || n > 0xffff {
		return ""
	}
	return fmt.Sprintf("%04x", n)
}

// amdSMISize reads amd-smi's vram size, {"value":N,"unit":"MB"}, "N MB" or a
// bare number of MB (amd-smi's MB are MiB), and returns GiB.
func amdSMISize(raw json.RawMessage) float64 {
	var value, unit string
	var obj struct {
		Value json.RawMessage `json:"value"`
		Unit  json.RawMessage `json:"unit"`
	}
	if len(raw) > 0 && raw[0] == '{' {
		if json.Unmarshal(raw, &obj) != nil {
			return 0
		}
		value, unit = str(obj.Value), str(obj.Unit)
	} else {
		f := strings.Fields(str(raw))
		switch len(f) {
		case 1:
			value = f[0]
		case 2:
			value, unit = f[0], f[1]
		default:
			return 0
		}
	}
	n, err := strconv.ParseFloat(value, 64)
	if err != nil || n < 0 {
		return 0
	}
	mult := float64(1 << 20)
	switch strings.ToUpper(unit) {
	case "B":
		mult = 1
	case "KB", "KIB":
		mult = 1 << 10
	case "", "MB", "MIB":
		mult = 1 << 20
	case "GB", "GIB":
		mult = 1 << 30
	default:
		return 0
	}
	return gib(n * mult)
}
