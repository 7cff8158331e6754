package llamabench

import (
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/rigorbench/rigor/internal/results"
)

// seedFixtures adds every fixture's stdout (and stderr, rc) to a corpus.
func seedFixtures(f *testing.F, add func(fx fixture)) {
	f.Helper()
	for _, name := range fixtureNames(f, fixtureDir) {
		add(readFixture(f, name))
	}
}

// FuzzParseJSON checks that ParseJSON never panics, and that cutting a
// complete output short anywhere yields a prefix of its rows without an
// error, as a crash mid-output does.
func FuzzParseJSON(f *testing.F) {
	seedFixtures(f, func(fx fixture) { f.Add(fx.stdout, uint16(len(fx.stdout)/2)) })
	f.Add([]byte(`[{"a": "}]\"", "b": [1, {"c": -nan}]}, {"test": "tg1"}]`), uint16(9))
	f.Add([]byte("{\"x\": 1}\n{\"y\": inf}\n"), uint16(3))
	f.Fuzz(func(t *testing.T, data []byte, cut uint16) {
		rows, complete, err := ParseJSON(data)
		for i, r := range rows {
			if r.Fields == nil {
				t.Fatalf("row %d of %q has nil Fields", i, data)
			}
			for _, m := range r.Metrics() {
				if m.Name == "" || m.Unit != "tok/s" {
					t.Fatalf("row %d of %q: bad metric %+v", i, data, m)
				}
			}
		}
		if err != nil || !complete || len(data) == 0 {
			return
		}
		c := int(cut) % len(data)
		prows, _, perr := ParseJSON(data[:c])
		if perr != nil {
			t.Fatalf("ParseJSON(%q) is complete, but its prefix %q fails: %v", data, data[:c], perr)
		}
		if len(prows) > len(rows) {
			t.Fatalf("prefix %q of %q has %d rows, the whole %d", data[:c], data, len(prows), len(rows))
		}
		for i := range prows {
			if !reflect.DeepEqual(prows[i].Fields, rows[i].Fields) {
				t.Fatalf("prefix %q of %q: row %d = %v, want %v", data[:c], data, i, prows[i].Fields, rows[i].Fields)
			}
		}
	})
}

// FuzzClassify checks Classify's contract on any output: a known status,
// an error exactly when not ok, rows kept on a crash, a bounded log tail.
func FuzzClassify(f *testing.F) {
	seedFixtures(f, func(fx fixture) { f.Add(fx.stdout, fx.stderr, fx.rc, false) })
	f.Add([]byte("["), []byte("error: invalid parameter for argument: \n"), -1, true)
	f.Fuzz(func(t *testing.T, stdout, stderr []byte, rc int, signaled bool) {
		o := Classify(stdout, stderr, rc, signaled)
		switch o.Status {
		case results.StatusOK:
			if o.Error != "" || o.LogTail != "" || len(o.Rows) == 0 {
				t.Fatalf("ok outcome %+v: want rows, no error, no log tail", o)
			}
			if rc != 0 || signaled {
				t.Fatalf("ok outcome for exit %d signaled %v", rc, signaled)
			}
		case results.StatusCrashed:
			if len(o.Rows) == 0 || o.Error == "" {
				t.Fatalf("crashed outcome %+v: want rows and an error", o)
			}
		case results.StatusFailed:
			if o.Error == "" {
				t.Fatalf("failed outcome %+v: want an error", o)
			}
		default:
			t.Fatalf("unknown status %q", o.Status)
		}
		if !utf8.ValidString(o.Error) || !utf8.ValidString(o.LogTail) {
			t.Fatalf("invalid UTF-8 in error %q or log tail %q", o.Error, o.LogTail)
		}
		if n := strings.Count(o.LogTail, "\n") + 1; n > outTailLines {
			t.Fatalf("log tail has %d lines, want at most %d", n, outTailLines)
		}
	})
}
