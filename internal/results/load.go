package results

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"time"
)

// LoadError says why a record file could not be loaded: the file, and what
// is wrong with it (at a line and column when the JSON is malformed).
type LoadError struct {
	Path string
	// Line and Col locate a syntax or type error; 0 when not known.
	Line, Col int
	Err       error
}

func (e *LoadError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d:%d: %v", e.Path, e.Line, e.Col, e.Err)
	}
	return fmt.Sprintf("%s: %v", e.Path, e.Err)
}

func (e *LoadError) Unwrap() error { return e.Err }

// ErrTruncated is wrapped by a [LoadError] for a record that ends before
// its JSON does (a write cut short, a bad merge).
var ErrTruncated = errors.New("truncated")

// ErrSchema is wrapped by a [LoadError] for a record without a schema
// version this rigor knows.
var ErrSchema = errors.New("unsupported schema version")

// Load reads and decodes a record file. Errors are *[LoadError]s naming
// the file; a missing file wraps [ErrNotFound] as well as fs.ErrNotExist.
//
// A symlink is refused, not read: records are regular files, and one
// linked out of results/ (a results branch, a hand edit) could make rigor
// read any file as a record.
func Load(path string) (*Run, error) {
	data, err := readNoFollow(path)
	if errors.Is(err, errSymlink) {
		target, _ := os.Readlink(path)
		return nil, &LoadError{Path: path, Err: fmt.Errorf("a symlink (to %s), not a record: records are regular files, so it was not read", target)}
	}
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, &LoadError{Path: path, Err: &kindError{msg: "no such file", kinds: []error{ErrNotFound, os.ErrNotExist}}}
		}
		return nil, &LoadError{Path: path, Err: err}
	}
	r, err := Decode(data)
	if err != nil {
		var le *LoadError
		if errors.As(err, &le) {
			le.Path = path
			return nil, le
		}
		return nil, &LoadError{Path: path, Err: err}
	}
	return r, nil
}

// Decode decodes and checks one record. Unknown fields are ignored (a
// newer rigor of the same schema may add some); a missing or newer schema
// version, a missing id, experiment or status, an unknown status and a
// metric without a name are errors. Errors are *[LoadError]s without a
// path.
func Decode(data []byte) (*Run, error) {
	var r Run
	if err := unmarshalRecord(data, &r); err != nil {
		return nil, err
	}
	if err := check(&r); err != nil {
		return nil, &LoadError{Err: err}
	}
	return &r, nil
}

// decodeSummary decodes of a record only what choosing the runs to
// compare needs (id, experiment, point, start, status, invocation), with
// [Decode]'s checks of those fields: the metrics, samples and
// configuration are parsed over, not kept.
func decodeSummary(data []byte) (*Summary, error) {
	var h struct {
		Schema     int       `json:"schema"`
		ID         string    `json:"id"`
		Experiment string    `json:"experiment"`
		Point      string    `json:"point"`
		Status     string    `json:"status"`
		Invocation string    `json:"invocation"`
		Start      time.Time `json:"start"`
	}
	if err := unmarshalRecord(data, &h); err != nil {
		return nil, err
	}
	r := Run{Schema: h.Schema, ID: h.ID, Experiment: h.Experiment, Point: h.Point, Status: h.Status}
	if err := check(&r); err != nil {
		return nil, &LoadError{Err: err}
	}
	return &Summary{ID: h.ID, Experiment: h.Experiment, Point: r.Point, Start: h.Start.UTC(), Status: h.Status, Invocation: h.Invocation}, nil
}

// unmarshalRecord decodes a record's JSON into v; errors are
// *[LoadError]s without a path, saying where the JSON is broken.
func unmarshalRecord(data []byte, v any) error {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return &LoadError{Err: fmt.Errorf("empty file: %w", ErrTruncated)}
	}
	if trimmed[0] != '{' {
		line, col := position(data, bytes.Index(data, trimmed[:1]))
		return &LoadError{Line: line, Col: col, Err: errors.New("not a run record: expected a JSON object")}
	}
	err := json.Unmarshal(data, v)
	if err == nil {
		return nil
	}
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se) && se.Error() == "unexpected end of JSON input":
		return &LoadError{Err: fmt.Errorf("%w: the JSON ends after %d bytes", ErrTruncated, len(data))}
	case errors.As(err, &se):
		line, col := position(data, int(se.Offset)-1)
		return &LoadError{Line: line, Col: col, Err: fmt.Errorf("malformed JSON: %s", se.Error())}
	case errors.As(err, &te):
		line, col := position(data, int(te.Offset)-1)
		field := te.Field
		if field == "" {
			field = "value"
		}
		return &LoadError{Line: line, Col: col, Err: fmt.Errorf("%s: got JSON %s, want %s", field, te.Value, te.Type)}
	}
	return &LoadError{Err: fmt.Errorf("malformed record: %v", err)}
}

func check(r *Run) error {
	switch {
	case r.Schema == 0:
		return &kindError{msg: `no "schema" field: not a rigor run record`, kinds: []error{ErrSchema}}
	case r.Schema < 0 || r.Schema > SchemaVersion:
		return fmt.Errorf("%w %d: this rigor reads schema %d; upgrade rigor", ErrSchema, r.Schema, SchemaVersion)
	case r.ID == "":
		return errors.New(`missing "id"`)
	case r.Experiment == "":
		return errors.New(`missing "experiment"`)
	}
	switch r.Status {
	case StatusOK, StatusFailed, StatusCrashed, StatusTimeout, StatusInterrupted:
	case "":
		return errors.New(`missing "status"`)
	default:
		return fmt.Errorf("unknown status %q", r.Status)
	}
	if r.Point == "" {
		r.Point = r.Experiment
	}
	for i, m := range r.Metrics {
		if m.Name == "" {
			return fmt.Errorf("metrics[%d]: missing \"name\"", i)
		}
	}
	return nil
}

// position converts a byte offset into a 1-based line and column.
func position(data []byte, off int) (line, col int) {
	if off < 0 {
		off = 0
	}
	if off > len(data) {
		off = len(data)
	}
	line = 1 + bytes.Count(data[:off], []byte{'\n'})
	col = off - bytes.LastIndexByte(data[:off], '\n')
	return line, col
}

var errSymlink = errors.New("a symlink")

// readNoFollow reads a file that is not a symlink. The file opened must
// be the one checked (os.SameFile), so a swap in between is caught too.
func readNoFollow(path string) ([]byte, error) {
	li, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if li.Mode()&os.ModeSymlink != 0 {
		return nil, errSymlink
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !os.SameFile(li, fi) {
		return nil, errSymlink
	}
	data, err := io.ReadAll(f)
	if err == nil {
		readCounts.records.Add(1)
		readCounts.bytes.Add(int64(len(data)))
	}
	return data, err
}

// readCounts is what this process has read of the store; see [Reads].
var readCounts struct {
	records, bytes, dirEntries, indexBytes atomic.Int64
	revRecords, revBytes, revRuns          atomic.Int64
}

// ReadCounts counts what a process has read of the results store.
type ReadCounts struct {
	// Records and Bytes count the record files read from the working
	// tree ([Load]) and their bytes.
	Records, Bytes int64
	// DirEntries counts the entries of the directories listed to find
	// records (not the index's scan).
	DirEntries int64
	// IndexBytes counts the bytes of the run-id map read (ids.go).
	IndexBytes int64
	// RevisionRecords and RevisionBytes count the records read at a git
	// revision (ID@REV) and their bytes; RevisionRuns those of them
	// decoded whole into runs, the others being only summarized to choose
	// the runs to compare ([Store.LatestAt]).
	RevisionRecords, RevisionBytes, RevisionRuns int64
}

// Reads returns what this process has read of results stores so far:
// tests assert by these counts, not by times, that a verb's cost does not
// grow with the records of other experiments.
func Reads() ReadCounts {
	return ReadCounts{Records: readCounts.records.Load(), Bytes: readCounts.bytes.Load(), DirEntries: readCounts.dirEntries.Load(), IndexBytes: readCounts.indexBytes.Load(),
		RevisionRecords: readCounts.revRecords.Load(), RevisionBytes: readCounts.revBytes.Load(), RevisionRuns: readCounts.revRuns.Load()}
}
