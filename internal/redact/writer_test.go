package redact

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"testing"
	"text/tabwriter"
	"time"
)

// sink records what reaches the underlying writer, write by write; the
// tail timer writes from another goroutine.
type sink struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	writes int
}

func (s *sink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.writes++
	return s.buf.Write(p)
}

func (s *sink) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

// A secret written in pieces within one line is found: the writer
// redacts lines, not writes.
func TestWriter_SplitLine(t *testing.T) {
	var s sink
	w := NewWriter(&s, nil)
	for _, p := range []string{"env HF_TO", "KEN=sekrit", "-value-1", "23 next", "\nsecond line\n"} {
		fmt.Fprint(w, p)
	}
	if got, want := s.String(), "env HF_TOKEN=<redacted> next\nsecond line\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// A table written cell by cell reaches the underlying writer a line at a
// time, redacted.
func TestWriter_Table(t *testing.T) {
	var s sink
	w := NewWriter(&s, nil)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tPOINT\tMETRIC")
	const rows = 500
	for i := range rows {
		fmt.Fprintf(tw, "r%d\tlab/x[t=%d]\ttokSOut %d tok/s\n", i, i, i)
	}
	fmt.Fprintln(tw, "leak\tAPI_KEY=abc-def-123456\tAuthorization: Bearer xyz.123456")
	if err := tw.Flush(); err != nil {
		t.Fatal(err)
	}
	out := s.String()
	if strings.Contains(out, "abc-def-123456") || strings.Contains(out, "xyz.123456") {
		t.Errorf("secret in table output:\n%s", out)
	}
	if n := strings.Count(out, "\n"); n != rows+2 {
		t.Errorf("%d lines, want %d", n, rows+2)
	}
	if s.writes > rows+2 {
		t.Errorf("%d writes for %d lines: the writer passes cells on one by one", s.writes, rows+2)
	}
}

// A partial line is held until Flush, or until TailDelay passes.
func TestWriter_Tail(t *testing.T) {
	var s sink
	w := NewWriter(&s, nil)
	fmt.Fprint(w, "continue? TOKEN=abcdef123 ")
	w.mu.Lock()
	held := string(w.tail)
	w.mu.Unlock()
	if held == "" {
		t.Fatal("a partial line was not held")
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if got, want := s.String(), "continue? TOKEN=<redacted> "; got != want {
		t.Errorf("after Flush: %q, want %q", got, want)
	}

	var s2 sink
	w2 := NewWriter(&s2, nil)
	fmt.Fprint(w2, "building llama.cpp... ")
	deadline := time.Now().Add(30 * time.Second)
	for s2.String() == "" && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if got := s2.String(); got != "building llama.cpp... " {
		t.Errorf("the held partial line never came out on its own: %q", got)
	}
}

// A progress line redrawn in place (\r) goes out at once.
func TestWriter_Progress(t *testing.T) {
	var s sink
	w := NewWriter(&s, nil)
	fmt.Fprint(w, "\rrigor: pulling x 5%\x1b[K")
	if got := s.String(); got != "\rrigor: pulling x 5%\x1b[K" {
		t.Errorf("progress line held: %q", got)
	}
	fmt.Fprint(w, "line one\nline two\r\n")
	if got := s.String(); !strings.HasSuffix(got, "line two\r\n") {
		t.Errorf("CRLF lines held: %q", got)
	}
}

// A line without end is not held without bound.
func TestWriter_LongLine(t *testing.T) {
	var s sink
	w := NewWriter(&s, nil)
	chunk := strings.Repeat("x", 4096)
	n := MaxLine/len(chunk) + 2
	for i := range n {
		fmt.Fprint(w, chunk)
		// The timer may flush the held part at any moment (TailDelay);
		// whatever it does, the writer never holds more than MaxLine.
		w.mu.Lock()
		held := len(w.tail)
		w.mu.Unlock()
		if held > MaxLine {
			t.Fatalf("after %d bytes of one line, %d held, more than MaxLine (%d)", (i+1)*len(chunk), held, MaxLine)
		}
	}
	w.Flush()
	if got, want := len(s.String()), n*len(chunk); got != want {
		t.Errorf("%d bytes written of a %d-byte line", got, want)
	}
}

// scan finds every name part and token prefix the rules depend on, in
// any case.
func TestScan(t *testing.T) {
	for _, p := range nameParts {
		for _, v := range []string{p, strings.ToUpper(p), "x_" + p + "_y"} {
			if scan(v)&hasNamePart == 0 {
				t.Errorf("scan(%q) misses the name part", v)
			}
		}
	}
	for _, p := range tokenPrefixes {
		for _, v := range []string{p, strings.ToUpper(p), "(" + p} {
			if scan(v)&hasTokenWord == 0 {
				t.Errorf("scan(%q) misses the token prefix", v)
			}
		}
	}
	for _, v := range []string{"Bearer", "BASIC", "token", "Proxy-Authorization"} {
		if scan(v)&(hasScheme|hasAuthz) == 0 {
			t.Errorf("scan(%q) misses the scheme", v)
		}
	}
	if c := scan("20260508T032753Z-0000    lab/sweepA[t=1,ub=16]   2026-05-08 03:27  ok      0000000  tokSOut tg64 14.00 tok/s (n=3)\n"); c != 0 {
		t.Errorf("scan of a results row = %b, want 0", c)
	}
}
