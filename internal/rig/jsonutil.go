package rig

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
)

// errNoJSON is returned by decodeAfterNoise when no JSON value was found.
var errNoJSON = errors.New("no JSON value found")

// maxJSONStarts bounds how many candidate openings decodeAfterNoise tries,
// so that hostile input cannot make it quadratic.
const maxJSONStarts = 32

// decodeAfterNoise decodes the first JSON value in out that starts at one of
// the bytes in opens ("{", "{[") and decodes into v. Vendor tools print
// warnings before their JSON ("WARNING: … [AMDSMI_STATUS_…]"), so a failed
// attempt moves on to the next opening. Text after the value is ignored.
func decodeAfterNoise(out []byte, opens string, v func() any) (any, error) {
	var firstErr error
	rest := out
	off := 0
	for tries := 0; tries < maxJSONStarts; tries++ {
		i := bytes.IndexAny(rest, opens)
		if i < 0 {
			break
		}
		dst := v()
		dec := json.NewDecoder(bytes.NewReader(rest[i:]))
		dec.UseNumber()
		err := dec.Decode(dst)
		if err == nil {
			return dst, nil
		}
		if firstErr == nil {
			firstErr = err
		}
		off += i + 1
		rest = out[off:]
	}
	if firstErr != nil {
		return nil, firstErr
	}
	return nil, errNoJSON
}

// str renders a JSON scalar as a string: strings as they are, numbers in
// their JSON spelling, booleans as true/false, anything else as "".
// Placeholders such as "N/A" become "".
func str(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return ""
	}
	switch raw[0] {
	case '"':
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return ""
		}
		return clean(s)
	case '{', '[', 'n':
		return ""
	}
	return string(raw)
}

// lowerKeys decodes a JSON object into a map with lower-cased keys, because
// rocm-smi's key case changed between versions ("Card series" then "Card
// Series").
func lowerKeys(raw json.RawMessage) (map[string]json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	out := make(map[string]json.RawMessage, len(m))
	for k, v := range m {
		out[strings.ToLower(strings.TrimSpace(k))] = v
	}
	return out, nil
}

// number parses a decimal or 0x-hex number out of a JSON scalar.
func number(raw json.RawMessage) (float64, bool) {
	s := str(raw)
	if s == "" {
		return 0, false
	}
	if h, ok := strings.CutPrefix(strings.ToLower(s), "0x"); ok {
		n, err := strconv.ParseUint(h, 16, 64)
		return float64(n), err == nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f < 0 {
		return 0, false
	}
	return f, true
}
