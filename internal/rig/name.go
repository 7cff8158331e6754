package rig

import (
	"math"
	"strings"
)

// NormalizeName turns a vendor tool's marketing string into the name rigor
// records and matches against: trademark marks "(R)", "(TM)", "®", "™" are
// removed, a trailing "Graphics" is dropped when a model name remains, and
// runs of spaces collapse. "Intel(R) Arc(TM) Pro B70 Graphics" becomes
// "Intel Arc Pro B70"; "NVIDIA GeForce RTX 4090" is unchanged.
//
// The raw string is kept in [GPU.RawName] so nothing is lost.
func NormalizeName(s string) string {
	for _, mark := range []string{"(R)", "(r)", "(TM)", "(tm)", "(Tm)", "®", "™"} {
		s = strings.ReplaceAll(s, mark, " ")
	}
	words := strings.Fields(s)
	// "Intel(R) Graphics" alone names no model: keep the word then.
	for n := len(words); n > 2 && strings.EqualFold(words[n-1], "Graphics"); n-- {
		words = words[:n-1]
	}
	return strings.Join(words, " ")
}

// setName fills g.Name and g.RawName from a tool's raw name.
func (g *GPU) setName(raw string) {
	raw = strings.TrimSpace(raw)
	g.Name = NormalizeName(raw)
	g.RawName = ""
	if raw != g.Name {
		g.RawName = raw
	}
}

// vendorFromName guesses the vendor from a marketing name or a vendor
// string, returning "" when it cannot tell.
func vendorFromName(s string) string {
	l := strings.ToLower(s)
	switch {
	case strings.Contains(l, "nvidia"), strings.Contains(l, "geforce"), strings.Contains(l, "quadro"), strings.Contains(l, "tesla"):
		return "nvidia"
	case hasWord(l, "amd"), strings.Contains(l, "radeon"), strings.Contains(l, "instinct"), strings.Contains(l, "advanced micro devices"):
		return "amd"
	case strings.Contains(l, "intel"), hasWord(l, "arc"):
		return "intel"
	}
	return ""
}

// hasWord reports whether w is one of the space-separated words of s.
func hasWord(s, w string) bool {
	for _, f := range strings.Fields(s) {
		if f == w {
			return true
		}
	}
	return false
}

// vendorFromPCI maps a PCI vendor id ("0x10de", "10de") to rigor's vendor
// name, or "" for anything that is not a GPU vendor rigor knows.
func vendorFromPCI(id string) string {
	id = strings.ToLower(strings.TrimPrefix(strings.TrimSpace(id), "0x"))
	switch id {
	case "10de":
		return "nvidia"
	case "1002":
		return "amd"
	case "8086":
		return "intel"
	}
	return ""
}

// normalizeBDF rewrites a PCI address to the lower-case sysfs form
// "0000:03:00.0": nvidia-smi's 8-digit domain "00000000:01:00.0" is cut to
// four digits and a missing domain gets "0000:". Anything else is returned
// trimmed and lower-cased.
func normalizeBDF(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	if s == "" {
		return ""
	}
	parts := strings.Split(s, ":")
	switch len(parts) {
	case 2: // "03:00.0"
		return "0000:" + s
	case 3:
		dom := parts[0]
		if len(dom) > 4 && strings.Trim(dom[:len(dom)-4], "0") == "" {
			dom = dom[len(dom)-4:]
		}
		return dom + ":" + parts[1] + ":" + parts[2]
	}
	return s
}

// gib converts bytes to GiB rounded to 0.1, so that a card sold as 24 GB
// that reports 24564 MiB reads 24 and not 23.99.
// Sizes that are not finite (a hostile or broken tool) read 0.
func gib(bytes float64) float64 {
	v := math.Round(bytes/(1<<30)*10) / 10
	if math.IsInf(v, 0) || math.IsNaN(v) || v < 0 {
		return 0
	}
	return v
}

// unknownValue reports whether a tool printed a placeholder instead of a
// value: "[N/A]", "[Not Supported]", "N/A", "" and the like.
func unknownValue(s string) bool {
	s = strings.TrimSpace(s)
	if s == "" {
		return true
	}
	switch strings.ToLower(strings.Trim(s, "[]")) {
	case "n/a", "na", "not supported", "unknown", "none", "unsupported", "insufficient permissions", "gpu is lost", "requested functionality has been deprecated":
		return true
	}
	return false
}

// clean returns s trimmed, or "" when it is a placeholder (see unknownValue).
func clean(s string) string {
	if unknownValue(s) {
		return ""
	}
	return strings.TrimSpace(s)
}
