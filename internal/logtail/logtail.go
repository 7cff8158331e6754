// Package logtail keeps the end of a log: the one way rigor quotes what an
// engine, a build or a worker printed last, in records, errors and hints.
package logtail

import (
	"os"
	"strings"
)

// MaxRead bounds how much of a file [File] reads: its last 64 KiB.
const MaxRead = 64 << 10

// Lines returns the last n lines of b joined by "\n", with trailing empty
// lines and carriage returns dropped and invalid UTF-8 replaced by "?".
func Lines(b []byte, n int) string {
	s := strings.ReplaceAll(strings.ToValidUTF8(string(b), "?"), "\r\n", "\n")
	s = strings.TrimRight(s, "\n\r\t ")
	if s == "" || n <= 0 {
		return ""
	}
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// Compact returns the last n non-empty lines of b, trimmed and joined by
// " | ": a log's end inside a one-line message.
func Compact(b []byte, n int) string {
	lines := strings.Split(strings.ToValidUTF8(string(b), "?"), "\n")
	var keep []string
	for i := len(lines) - 1; i >= 0 && len(keep) < n; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" {
			keep = append(keep, l)
		}
	}
	for i, j := 0, len(keep)-1; i < j; i, j = i+1, j-1 {
		keep[i], keep[j] = keep[j], keep[i]
	}
	return strings.Join(keep, " | ")
}

// Read returns at most the last [MaxRead] bytes of a file, or nil when it
// cannot be read.
func Read(path string) []byte {
	if path == "" {
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil
	}
	off := max(fi.Size()-MaxRead, 0)
	buf := make([]byte, fi.Size()-off)
	n, _ := f.ReadAt(buf, off)
	return buf[:n]
}

// File returns the last n lines of the file at path ([Lines]), reading at
// most its last [MaxRead] bytes; "" when it cannot be read.
func File(path string, n int) string { return Lines(Read(path), n) }
