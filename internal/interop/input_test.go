package interop

import (
	"bytes"
	"errors"
	"io"
	"runtime"
	"strings"
	"testing"
)

// counting is an endless reader of one byte that counts what was read.
type counting struct {
	b byte
	n int64
}

func (c *counting) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = c.b
	}
	c.n += int64(len(p))
	return len(p), nil
}

// TestReadInput_Zeros feeds an endless stream of zeros (a 1 GiB file of
// zeros took 101 s and 6.2 GB before): the input is refused after one
// buffer, in small memory.
func TestReadInput_Zeros(t *testing.T) {
	zeros := &counting{b: 0}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := ReadInput(zeros)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrUnknownFormat) || !strings.Contains(err.Error(), "binary data: 00 00") {
		t.Errorf("ReadInput(zeros) = %v, want ErrUnknownFormat naming binary data", err)
	}
	if zeros.n > 1<<20 {
		t.Errorf("ReadInput read %d bytes of zeros, want at most 1 MiB", zeros.n)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 4<<20 {
		t.Errorf("ReadInput allocated %d bytes for a stream of zeros, want under 4 MiB", alloc)
	}
}

// TestReadInput_Endless feeds JSON that never ends: refused at the limit,
// having read no more than it.
func TestReadInput_Endless(t *testing.T) {
	old := MaxImportBytes
	MaxImportBytes = 1 << 20
	defer func() { MaxImportBytes = old }()
	endless := &counting{b: ' '}
	_, err := ReadInput(io.MultiReader(strings.NewReader("["), endless))
	if !errors.Is(err, ErrTooLarge) {
		t.Errorf("ReadInput(endless JSON) = %v, want ErrTooLarge", err)
	}
	if endless.n > MaxImportBytes+128<<10 {
		t.Errorf("ReadInput read %d bytes, want about %d", endless.n, MaxImportBytes)
	}
	spaces := &counting{b: '\n'}
	if _, err := ReadInput(spaces); !errors.Is(err, ErrUnknownFormat) || spaces.n > 2*sniffLimit {
		t.Errorf("ReadInput(endless white space) = %v after %d bytes, want ErrUnknownFormat after about 1 MiB", err, spaces.n)
	}
}

func TestReadInput(t *testing.T) {
	for _, c := range []struct{ in, want, err string }{
		{"  \n{\"a\": 1}\n", "  \n{\"a\": 1}\n", ""},
		{"[1]", "[1]", ""},
		{"", "", "the file is empty"},
		{"   ", "", "the file is empty"},
		{"GGUF\x03\x00\x00\x00", "", "binary data: 47 47 55 46 03 00 00 00"},
		{"model,tokSOut\nx,1\n", "", `not JSON (starts with "model,tokSOut")`},
	} {
		got, err := ReadInput(strings.NewReader(c.in))
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("ReadInput(%q) error = %v, want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || !bytes.Equal(got, []byte(c.want)) {
			t.Errorf("ReadInput(%q) = %q, %v, want %q", c.in, got, err, c.want)
		}
	}
}
