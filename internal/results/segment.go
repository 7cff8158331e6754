package results

import (
	"bytes"
	"strconv"
	"strings"
	"time"
)

// A segment file is text, one line per record after a header line, fields
// separated by tabs; a tab, newline or backslash inside a field is escaped
// as \t, \n or \\. It is read at every listing, so it is kept small and
// quick to parse: a year of records (100,000) is about 20 MB, parsed in a
// fraction of a second, where JSON took seconds.
//
//	rigor-index <version> <dir>
//	name size mtime ctime ino  id experiment point start status error
//	  commit ref version accelerator accelerators invocation
//	  import-sha256 import-label metric-count {name test unit n mean}...
//
// experiment is empty when it is the directory, point when it equals the
// experiment; start is
// Unix nanoseconds (UTC); import-sha256 is "-" for a record that was not
// imported.
const segmentMagic = "rigor-index"

// segmentFields is the number of fields before the metrics.
const segmentFields = 20

func encodeSegment(seg *segment) []byte {
	var b bytes.Buffer
	b.WriteString(segmentMagic)
	b.WriteByte('\t')
	b.WriteString(strconv.Itoa(seg.Version))
	b.WriteByte('\t')
	writeField(&b, seg.Dir)
	b.WriteByte('\n')
	var num []byte
	for _, e := range seg.Records {
		x := e.Summary
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
func decodeSegment(data []byte, dir string) (seg *segment, ok bool) {
	text := string(data)
	head, rest, found := strings.Cut(text, "\n")
	if !found || head != segmentMagic+"\t"+strconv.Itoa(indexVersion)+"\t"+fieldEscaper.Replace(dir) {
		return nil, false
	}
	seg = &segment{Version: indexVersion, Dir: dir}
	in := interner{}
	var f []string
	for rest != "" {
		var line string
		line, rest, found = strings.Cut(rest, "\n")
		if !found {
			return nil, false // a segment cut short
		}
		f = splitTabs(line, f[:0])
		if len(f) < segmentFields {
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
		if err1 != nil || err2 != nil || nm < 0 || len(f) != segmentFields+5*nm {
			return nil, false
		}
		// Fields are copied out of the segment's text (which is then
		// let go) and repeated ones shared: at 100,000 records this
		// is a third of the memory of keeping the text.
		x := &Summary{ID: field(f[5]), Experiment: in.get(f[6]), Point: in.get(f[7]),
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
			x.Metrics = make([]MetricSummary, nm)
			for i := range nm {
				g := f[segmentFields+5*i:]
				n, err1 := strconv.Atoi(g[3])
				mean, err2 := strconv.ParseFloat(g[4], 64)
				if err1 != nil || err2 != nil {
					return nil, false
				}
				x.Metrics[i] = MetricSummary{Name: in.get(g[0]), Test: in.get(g[1]), Unit: in.get(g[2]), N: n, Mean: mean}
			}
		}
		seg.Records = append(seg.Records, segmentEntry{Name: field(f[0]),
			Key: fileKey{Size: nums[0], Mtime: nums[1], Ctime: nums[2], Ino: uint64(nums[3])}, Summary: x})
	}
	return seg, true
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
	in[s] = v
	return v
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
