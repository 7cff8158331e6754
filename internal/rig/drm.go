package rig

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

var drmCardRE = regexp.MustCompile(`^card([0-9]+)$`)

// intelIntegratedBDF is where every Intel integrated GPU sits; discrete
// cards never do. ReadDRM skips it so that a desktop's iGPU is not counted
// as an accelerator.
const intelIntegratedBDF = "0000:00:02.0"

// ReadDRM lists the GPUs under dir, a directory laid out like
// /sys/class/drm, without any vendor tool. It reads cardN entries only
// (cardN-DP-1 connectors and renderD nodes are skipped) and, for each, the
// PCI device behind cardN/device:
//
//   - device/vendor: 0x10de NVIDIA, 0x1002 AMD, 0x8086 Intel; other vendors
//     (a server's BMC display, virtio) are skipped;
//   - device/device, and device/uevent for DRIVER and PCI_SLOT_NAME (else
//     the BDF is the basename of the device symlink's target);
//   - VRAM: amdgpu device/mem_info_vram_total, xe's
//     device/tile*/physical_vram_size_bytes summed over tiles, or the
//     out-of-tree i915's cardN/lmem_total_bytes;
//   - the name: amdgpu's device/product_name when it has one. sysfs has no
//     marketing name otherwise, so Name is often empty.
//
// The Intel integrated GPU at 0000:00:02.0 is skipped. A card whose files
// cannot be read is skipped, not an error; only an unreadable dir is.
func ReadDRM(dir string) ([]GPU, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("reading drm devices: %w", err)
	}
	type card struct {
		n   int
		gpu GPU
	}
	var cards []card
	seen := map[string]bool{}
	for _, e := range ents {
		m := drmCardRE.FindStringSubmatch(e.Name())
		if m == nil {
			continue
		}
		n, err := strconv.Atoi(m[1])
		if err != nil {
			continue
		}
		g, ok := readDRMCard(filepath.Join(dir, e.Name()))
		if !ok {
			continue
		}
		if g.PCIBusID != "" {
			if seen[g.PCIBusID] {
				continue
			}
			seen[g.PCIBusID] = true
		}
		cards = append(cards, card{n, g})
	}
	sort.Slice(cards, func(i, j int) bool { return cards[i].n < cards[j].n })
	gpus := make([]GPU, len(cards))
	for i, c := range cards {
		c.gpu.Index = i
		gpus[i] = c.gpu
	}
	return gpus, nil
}

// readDRMCard reads one cardN directory; ok is false when it is not a GPU
// rigor counts.
func readDRMCard(cardDir string) (GPU, bool) {
	dev := filepath.Join(cardDir, "device")
	vendorID := readTrim(filepath.Join(dev, "vendor"))
	vendor := vendorFromPCI(vendorID)
	if vendor == "" {
		return GPU{}, false
	}
	g := GPU{Vendor: vendor, Source: "sysfs"}
	if vid, did := pciHex(readTrim(filepath.Join(dev, "vendor"))), pciHex(readTrim(filepath.Join(dev, "device"))); vid != "" && did != "" {
		g.PCIID = vid + ":" + did
	}
	uevent := parseKeyValues(readBytes(filepath.Join(dev, "uevent")))
	g.Driver = uevent["DRIVER"]
	g.PCIBusID = normalizeBDF(uevent["PCI_SLOT_NAME"])
	if g.PCIBusID == "" {
		if target, err := filepath.EvalSymlinks(dev); err == nil {
			if b := filepath.Base(target); strings.Count(b, ":") == 2 {
				g.PCIBusID = normalizeBDF(b)
			}
		}
	}
	if g.PCIID == "" {
		if id := strings.ToLower(uevent["PCI_ID"]); strings.Count(id, ":") == 1 {
			g.PCIID = id
		}
	}
	if vendor == "intel" && g.PCIBusID == intelIntegratedBDF {
		return GPU{}, false
	}
	if b, ok := parseUint(readTrim(filepath.Join(dev, "mem_info_vram_total"))); ok {
		g.MemoryGB = gib(float64(b))
	} else if tiles, _ := filepath.Glob(filepath.Join(dev, "tile[0-9]*", "physical_vram_size_bytes")); len(tiles) > 0 {
		var sum float64
		for _, t := range tiles {
			if b, ok := parseUint(readTrim(t)); ok {
				sum += float64(b)
			}
		}
		g.MemoryGB = gib(sum)
	} else if b, ok := parseUint(readTrim(filepath.Join(cardDir, "lmem_total_bytes"))); ok {
		g.MemoryGB = gib(float64(b))
	}
	g.setName(clean(readTrim(filepath.Join(dev, "product_name"))))
	return g, true
}

// parseUint parses a decimal or 0x-hex unsigned number.
func parseUint(s string) (uint64, bool) {
	if s == "" {
		return 0, false
	}
	if h, ok := strings.CutPrefix(strings.ToLower(s), "0x"); ok {
		n, err := strconv.ParseUint(h, 16, 64)
		return n, err == nil
	}
	n, err := strconv.ParseUint(s, 10, 64)
	return n, err == nil
}

// readBytes reads a small file, returning nil when it cannot. sysfs files
// are a page at most; the limit guards against a fake tree gone wrong.
func readBytes(path string) []byte {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	buf := make([]byte, 64*1024)
	n, _ := f.Read(buf)
	return buf[:n]
}

func readTrim(path string) string {
	return strings.TrimSpace(string(readBytes(path)))
}

// parseKeyValues reads KEY=value lines (uevent files); values are taken
// verbatim, without unquoting.
func parseKeyValues(b []byte) map[string]string {
	m := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), "=")
		if ok && k != "" {
			m[k] = strings.TrimSpace(v)
		}
	}
	return m
}
