package results

import (
	"bytes"
	"strconv"
	"strings"
	"time"
	"unsafe"
)

// A segment file is text, one line per record after a header line, fields
// separated by tabs; a tab, newline or backslash inside a field is escaped
// as \t, \n or \\. It is read at every listing, so it is kept small and
// quick to parse: a year of records (100,000) is about 20 MB, parsed in a
// fraction of a second, where JSON took seconds.
//
//	rigor-index <version> <dir> size mtime ctime ino subdir-count {subdir}...
//	name size mtime ctime ino  id experiment point start status error
//	  commit ref version accelerator accelerators invocation
//	  import-sha256 import-label metric-count {name test unit n mean}...
//	  end round swept host rig busy spec-digest lock-digest
//	  spec-hash lock-hash env-hash rig-hash directions {samples}...
//
// The header's stat is the directory's (zeros when its listing is not to
// be trusted, see [segment.DirKey]). experiment is empty when it is the directory, point when it equals the
// experiment; start is
// Unix nanoseconds (UTC), end too ("-" for none); import-sha256 is "-" for
// a record that was not imported; directions are the metrics' recorded
// directions, each quoted as Go quotes a string, comma-separated ("" when
// none has one). The fields from end on are the
// summary's [Detail], one samples field per metric (comma-separated, empty
// for fewer than two samples); they are parsed only when asked for.
const segmentMagic = "rigor-index"

// segmentFields is the number of fields before the metrics,
// detailFields the number of the detail's fields before the samples.
const (
	segmentFields = 20
	detailFields  = 13
)

func encodeSegment(seg *segment) []byte {
	var b bytes.Buffer
	b.WriteString(segmentMagic)
	b.WriteByte('\t')
	b.WriteString(strconv.Itoa(seg.Version))
	b.WriteByte('\t')
	writeField(&b, seg.Dir)
	var num []byte
	key := seg.DirKey
	for _, e := range seg.Records {
		if e.Summary.Detail == nil {
			key = fileKey{} // a record left out: the listing is not whole
		}
	}
	for _, n := range []int64{key.Size, key.Mtime, key.Ctime, int64(key.Ino), int64(len(seg.Subdirs))} {
		b.WriteByte('\t')
		num = strconv.AppendInt(num[:0], n, 10)
		b.Write(num)
	}
	for _, d := range seg.Subdirs {
		b.WriteByte('\t')
		writeField(&b, d)
	}
	b.WriteByte('\n')
	for _, e := range seg.Records {
		x := e.Summary
		d := x.Detail
		if d == nil {
			continue // not written: see [Store.writeSegment]
		}
		exp, point := x.Experiment, x.Point
		if point == exp {
			point = ""
		}
		if exp == seg.Dir {
			exp = ""
		}
		imp, label := "-", ""
		if x.Import != nil {
			imp, label = x.Import.SHA256, x.Import.Label
		}
		writeField(&b, e.Name)
		for _, n := range []int64{e.Key.Size, e.Key.Mtime, e.Key.Ctime, int64(e.Key.Ino)} {
			b.WriteByte('\t')
			num = strconv.AppendInt(num[:0], n, 10)
			b.Write(num)
		}
		for _, f := range []string{x.ID, exp, point} {
			b.WriteByte('\t')
			writeField(&b, f)
		}
		b.WriteByte('\t')
		num = strconv.AppendInt(num[:0], x.Start.UnixNano(), 10)
		b.Write(num)
		for _, f := range []string{x.Status, x.Error, x.Engine.Commit, x.Engine.Ref, x.Engine.Version, x.Accelerator} {
			b.WriteByte('\t')
			writeField(&b, f)
		}
		b.WriteByte('\t')
		b.WriteString(strconv.Itoa(x.Accelerators))
		for _, f := range []string{x.Invocation, imp, label} {
			b.WriteByte('\t')
			writeField(&b, f)
		}
		b.WriteByte('\t')
		b.WriteString(strconv.Itoa(len(x.Metrics)))
		for _, m := range x.Metrics {
			for _, f := range []string{m.Name, m.Test, m.Unit} {
				b.WriteByte('\t')
				writeField(&b, f)
			}
			b.WriteByte('\t')
			b.WriteString(strconv.Itoa(m.N))
			b.WriteByte('\t')
			num = strconv.AppendFloat(num[:0], m.Mean, 'g', -1, 64)
			b.Write(num)
		}
		b.WriteByte('\t')
		if d.End.IsZero() {
			b.WriteByte('-')
		} else {
			b.Write(strconv.AppendInt(num[:0], d.End.UnixNano(), 10))
		}
		b.WriteByte('\t')
		b.WriteString(strconv.Itoa(d.Round))
		for _, f := range []string{d.Swept, d.Host, d.Rig, d.Busy, d.SpecDigest, d.LockDigest,
			d.Hashes.Spec, d.Hashes.Lock, d.Hashes.Env, d.Hashes.Rig, encodeDirections(d.Directions)} {
			b.WriteByte('\t')
			writeField(&b, f)
		}
		for i := range x.Metrics {
			b.WriteByte('\t')
			if i < len(d.Samples) {
				for j, v := range d.Samples[i] {
					if j > 0 {
						b.WriteByte(',')
					}
					b.Write(strconv.AppendFloat(num[:0], v, 'g', -1, 64))
				}
			}
		}
		b.WriteByte('\n')
	}
	return b.Bytes()
}

var fieldEscaper = strings.NewReplacer(`\`, `\\`, "\t", `\t`, "\n", `\n`)

func writeField(b *bytes.Buffer, s string) {
	if strings.ContainsAny(s, "\\\t\n") {
		s = fieldEscaper.Replace(s)
	}
	b.WriteString(s)
}

func unescapeField(s string) string {
	if strings.IndexByte(s, '\\') < 0 {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\\' && i+1 < len(s) {
			i++
			switch s[i] {
			case 't':
				c = '\t'
			case 'n':
				c = '\n'
			default:
				c = s[i]
			}
		}
		b.WriteByte(c)
	}
	return b.String()
}

// decodeSegment parses a segment of the directory dir (the experiment of
// its records); ok is false for anything but a well-formed segment of
// this version and directory, which is then rebuilt.
//
// It is the bulk of reading the index, so it allocates per segment
// rather than per record: the summaries, their metrics and their ids and
// file names each in one block. Nothing it returns points into data.
func decodeSegment(data []byte, dir string, detail bool) (seg *segment, ok bool) {
	if len(data) == 0 {
		return nil, false
	}
	// The text is only read here: every value kept is copied out of it.
	text := unsafe.String(&data[0], len(data))
	head, rest, found := strings.Cut(text, "\n")
	if !found {
		return nil, false
	}
	if seg, ok = decodeSegmentHead(head, dir); !ok {
		return nil, false
	}
	count := strings.Count(rest, "\n")
	if count == 0 {
		return seg, rest == ""
	}
	sums := make([]Summary, count)
	seg.Records = make([]segmentEntry, count)
	metrics := make([]MetricSummary, 0, 2*count)
	// Names and ids are gathered into one string: offsets first.
	var names []byte
	type span struct{ name, id [2]int }
	spans := make([]span, count)
	in := interner{}
	var f []string
	for i := range count {
		var line string
		line, rest, _ = strings.Cut(rest, "\n")
		// The fields up to the metrics' are split now, the detail's
		// only when asked for (counted otherwise).
		var ok bool
		f, line, ok = cutFields(line, segmentFields, f[:0])
		if !ok {
			return nil, false
		}
		var nums [4]int64
		for i := range 4 {
			n, err := strconv.ParseInt(f[1+i], 10, 64)
			if err != nil {
				return nil, false
			}
			nums[i] = n
		}
		start, err := strconv.ParseInt(f[8], 10, 64)
		if err != nil {
			return nil, false
		}
		accels, err1 := strconv.Atoi(f[15])
		nm, err2 := strconv.Atoi(f[19])
		if err1 != nil || err2 != nil || nm < 0 {
			return nil, false
		}
		if f, line, ok = cutFields(line, 5*nm, f); !ok || strings.Count(line, "\t") != detailFields+nm-1 {
			return nil, false
		}
		sp := &spans[i]
		sp.name[0] = len(names)
		names = appendField(names, f[0])
		sp.name[1] = len(names)
		if id, name := unescapeField(f[5]), unescapeField(f[0]); len(name) == len(id)+len(".json") && strings.HasPrefix(name, id) && strings.HasSuffix(name, ".json") {
			sp.id = [2]int{sp.name[0], sp.name[1] - len(".json")}
		} else {
			sp.id[0] = len(names)
			names = append(names, id...)
			sp.id[1] = len(names)
		}
		// Values that repeat from record to record are shared.
		x := &sums[i]
		*x = Summary{Experiment: in.get(f[6]), Point: in.get(f[7]),
			Start: time.Unix(0, start).UTC(), Status: in.get(f[9]), Error: field(f[10]),
			Engine:      EngineRef{Commit: in.get(f[11]), Ref: in.get(f[12]), Version: in.get(f[13])},
			Accelerator: in.get(f[14]), Accelerators: accels, Invocation: in.get(f[16])}
		if x.Experiment == "" {
			x.Experiment = dir
		}
		if x.Point == "" {
			x.Point = x.Experiment
		}
		if f[17] != "-" {
			x.Import = &ImportKey{SHA256: field(f[17]), Label: field(f[18])}
		}
		if nm > 0 {
			if len(metrics)+nm > cap(metrics) {
				metrics = make([]MetricSummary, 0, max(nm, 2*(count-i)))
			}
			at := len(metrics)
			for j := range nm {
				g := f[segmentFields+5*j:]
				n, err1 := strconv.Atoi(g[3])
				mean, err2 := strconv.ParseFloat(g[4], 64)
				if err1 != nil || err2 != nil {
					return nil, false
				}
				metrics = append(metrics, MetricSummary{Name: in.get(g[0]), Test: in.get(g[1]), Unit: in.get(g[2]), N: n, Mean: mean})
			}
			x.Metrics = metrics[at:len(metrics):len(metrics)]
		}
		if detail {
			d, ok := decodeDetail(splitTabs(line, f[len(f):]), nm, in)
			if !ok {
				return nil, false
			}
			x.Detail = d
		}
		seg.Records[i] = segmentEntry{Key: fileKey{Size: nums[0], Mtime: nums[1], Ctime: nums[2], Ino: uint64(nums[3])}, Summary: x}
	}
	if rest != "" {
		return nil, false // a segment cut short
	}
	all := string(names)
	for i := range seg.Records {
		sp := spans[i]
		seg.Records[i].Name = all[sp.name[0]:sp.name[1]]
		sums[i].ID = all[sp.id[0]:sp.id[1]]
	}
	return seg, true
}

// decodeSegmentHead parses a segment's first line: the magic, the
// index version, the directory, its stat key and its subdirectories.
func decodeSegmentHead(head, dir string) (*segment, bool) {
	hf := splitTabs(head, nil)
	if len(hf) < 8 || hf[0] != segmentMagic || hf[1] != strconv.Itoa(indexVersion) || unescapeField(hf[2]) != dir {
		return nil, false
	}
	var dk [5]int64
	for i := range dk {
		n, err := strconv.ParseInt(hf[3+i], 10, 64)
		if err != nil {
			return nil, false
		}
		dk[i] = n
	}
	if dk[4] < 0 || int64(len(hf)) != 8+dk[4] {
		return nil, false
	}
	seg := &segment{Version: indexVersion, Dir: dir, DirKey: fileKey{Size: dk[0], Mtime: dk[1], Ctime: dk[2], Ino: uint64(dk[3])}}
	for _, d := range hf[8:] {
		seg.Subdirs = append(seg.Subdirs, field(d))
	}
	return seg, true
}

// decodeDetail parses a record's detail fields.
func decodeDetail(f []string, metrics int, in interner) (d *Detail, ok bool) {
	d = &Detail{Swept: in.get(f[2]), Host: in.get(f[3]), Rig: in.get(f[4]), Busy: in.get(f[5]),
		SpecDigest: in.get(f[6]), LockDigest: in.get(f[7]),
		Hashes: ConfigHashes{Spec: in.get(f[8]), Lock: in.get(f[9]), Env: in.get(f[10]), Rig: in.get(f[11])}}
	if f[0] != "-" {
		end, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return nil, false
		}
		d.End = time.Unix(0, end).UTC()
	}
	round, err := strconv.Atoi(f[1])
	if err != nil {
		return nil, false
	}
	d.Round = round
	if f[12] != "" {
		if d.Directions, ok = decodeDirections(unescapeField(f[12]), metrics, in); !ok {
			return nil, false
		}
	}
	for i, field := range f[detailFields : detailFields+metrics] {
		if field == "" {
			continue
		}
		if d.Samples == nil {
			d.Samples = make([][]float64, metrics)
		}
		for v := range strings.SplitSeq(field, ",") {
			x, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return nil, false
			}
			d.Samples[i] = append(d.Samples[i], x)
		}
	}
	return d, true
}

// encodeDirections is the directions field: each direction quoted,
// comma-separated; "" when no metric has one.
func encodeDirections(dirs []string) string {
	var b []byte
	for i, d := range dirs {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendQuote(b, d)
	}
	return string(b)
}

// decodeDirections parses the directions field of a record of n metrics.
func decodeDirections(s string, n int, in interner) ([]string, bool) {
	out := make([]string, 0, n)
	for len(out) < n {
		q, err := strconv.QuotedPrefix(s)
		if err != nil {
			return nil, false
		}
		d, err := strconv.Unquote(q)
		if err != nil {
			return nil, false
		}
		if v, ok := in[d]; ok {
			d = v
		} else {
			in[d] = d
		}
		out = append(out, d)
		s = s[len(q):]
		if len(out) < n {
			if !strings.HasPrefix(s, ",") {
				return nil, false
			}
			s = s[1:]
		}
	}
	return out, s == ""
}

// appendField appends a field unescaped.
func appendField(b []byte, s string) []byte {
	if strings.IndexByte(s, '\\') < 0 {
		return append(b, s...)
	}
	return append(b, unescapeField(s)...)
}

// field is a field unescaped and copied out of the segment's text.
func field(s string) string { return strings.Clone(unescapeField(s)) }

// interner shares the copies of values that repeat from record to record
// (status, engine commit, metric names).
type interner map[string]string

func (in interner) get(s string) string {
	if s == "" {
		return ""
	}
	if v, ok := in[s]; ok {
		return v
	}
	v := field(s)
	in[v] = v
	return v
}

// cutFields appends the first n tab-terminated fields of s to out and
// returns the rest; ok is false when s has fewer than n tabs.
func cutFields(s string, n int, out []string) ([]string, string, bool) {
	for range n {
		i := strings.IndexByte(s, '\t')
		if i < 0 {
			return out, "", false
		}
		out = append(out, s[:i])
		s = s[i+1:]
	}
	return out, s, true
}

func splitTabs(s string, out []string) []string {
	for {
		i := strings.IndexByte(s, '\t')
		if i < 0 {
			return append(out, s)
		}
		out = append(out, s[:i])
		s = s[i+1:]
	}
}
