package logtail

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLines(t *testing.T) {
	for _, c := range []struct {
		in   string
		n    int
		want string
	}{
		{"", 3, ""},
		{"\n\n", 3, ""},
		{"a\nb\nc\n", 2, "b\nc"},
		{"a\r\nb\r\n\r\n", 5, "a\nb"},
		{"a\n\nb\n", 3, "a\n\nb"},
		{"one", 0, ""},
		{"x\xffy\n", 1, "x?y"},
	} {
		if got := Lines([]byte(c.in), c.n); got != c.want {
			t.Errorf("Lines(%q, %d) = %q, want %q", c.in, c.n, got, c.want)
		}
	}
}

func TestCompact(t *testing.T) {
	if got, want := Compact([]byte("a\n\n  b \nc\n\n"), 2), "b | c"; got != want {
		t.Errorf("Compact = %q, want %q", got, want)
	}
	if got := Compact(nil, 3); got != "" {
		t.Errorf("Compact(nil) = %q", got)
	}
}

func TestFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "log")
	big := strings.Repeat("x", MaxRead) + "\nlast line\n"
	if err := os.WriteFile(p, []byte("first\n"+big), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := File(p, 1); got != "last line" {
		t.Errorf("File = %q, want the last line", got)
	}
	if got := len(Read(p)); got != MaxRead {
		t.Errorf("Read read %d bytes, want at most %d", got, MaxRead)
	}
	if got := File(filepath.Join(t.TempDir(), "missing"), 3); got != "" {
		t.Errorf("File(missing) = %q", got)
	}
}
