package interop

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
)

// MaxImportBytes bounds the size of a file [ReadInput] accepts: every
// format rigor imports is a summary of a few runs, kilobytes to a few
// megabytes; anything near this is not one, and reading it whole would
// only cost memory.
var MaxImportBytes int64 = 64 << 20

// ErrTooLarge is wrapped by the error for an input larger than
// [MaxImportBytes].
var ErrTooLarge = errors.New("too large for a results file")

// sniffLimit bounds the white space read before the first character that
// says what the input is.
const sniffLimit = 1 << 20

// ReadInput reads an input to import in bounded memory, failing as soon as
// its first bytes show it is none of [ImportFormats]: every one is JSON (an
// object, an array, or JSON lines), so the first character after white
// space must be '{' or '['. A file of zeros, a binary, a model file or an
// archive is refused after one buffer, not after reading it whole; a JSON
// input larger than [MaxImportBytes] is refused when the limit is reached.
func ReadInput(r io.Reader) ([]byte, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	// The white space is kept: errors name lines and columns.
	var lead []byte
	for {
		b, err := br.ReadByte()
		if err == io.EOF {
			return nil, errors.New("the file is empty")
		}
		if err != nil {
			return nil, err
		}
		switch b {
		case ' ', '\t', '\r', '\n':
			lead = append(lead, b)
			if len(lead) > sniffLimit {
				return nil, fmt.Errorf("%w: more than %d MiB of white space and nothing else", ErrUnknownFormat, sniffLimit>>20)
			}
			continue
		case '{', '[':
		default:
			peek, _ := br.Peek(29)
			return nil, fmt.Errorf("%w: not JSON (starts with %q)", ErrUnknownFormat, describeStart(append([]byte{b}, peek...)))
		}
		if err := br.UnreadByte(); err != nil {
			return nil, err
		}
		break
	}
	data, err := io.ReadAll(io.LimitReader(br, MaxImportBytes+1))
	if err != nil {
		return nil, err
	}
	if len(lead) > 0 {
		data = append(lead, data...)
	}
	if int64(len(data)) > MaxImportBytes {
		return nil, fmt.Errorf("%w: more than %d MiB", ErrTooLarge, MaxImportBytes>>20)
	}
	return data, nil
}

// ReadFile is [ReadInput] on a file.
func ReadFile(name string) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadInput(f)
}

// describeStart shows the first bytes of an input as text when they are
// text, and as a description when they are binary.
func describeStart(b []byte) string {
	if line := firstLine(b); len(line) > 0 {
		b = line
	}
	for _, c := range b {
		if c < 0x20 && c != '\t' || c == 0x7f {
			return fmt.Sprintf("binary data: % x", b[:min(len(b), 8)])
		}
	}
	return shorten(string(b), 30)
}
