package lock

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/rigorbench/rigor/internal/gitsrc"
	"github.com/rigorbench/rigor/internal/spec"
)

// Version is the lockfile schema version this package reads and writes.
const Version = 1

// Dir is the directory under the module root that holds the lockfiles.
const Dir = "lockfiles"

// Ext ends every lockfile name.
const Ext = ".lock.json"

// File is one lockfile: the locks of the experiments of one package.
type File struct {
	// Version is the schema version, [Version].
	Version int `json:"version"`
	// Rigor is the version of rigor that wrote the file.
	Rigor string `json:"rigor"`
	// Experiments maps an experiment id to its lock.
	Experiments map[string]*Entry `json:"experiments"`
}

// Entry is the lock of one experiment. All points of an experiment share
// its engine and model (sweeps only touch flags, bench and env).
type Entry struct {
	// SpecDigest is the digest of the experiment's canonical JSON (all its
	// points), see [SpecDigest].
	SpecDigest string `json:"specDigest"`
	// Engine is the locked engine.
	Engine EngineLock `json:"engine"`
	// Model is the locked model.
	Model ModelLock `json:"model"`
	// Corpus is the text quality.measure evaluates, by its name in the
	// experiment (or its file in the hub repo), with its bytes' sha256
	// and size.
	Corpus *CorpusLock `json:"corpus,omitempty"`
}

// CorpusLock is the locked corpus of quality.measure: a module file or a
// shipped corpus by its name (Path), or a file of a hub repo (HF, the
// revision written, the commit it resolved to, and the file's path in
// the repo). The fields of a name are those of a [FileLock].
type CorpusLock struct {
	Path     string `json:"path"`
	HF       string `json:"hf,omitempty"`
	Revision string `json:"revision,omitempty"`
	Commit   string `json:"commit,omitempty"`
	Size     int64  `json:"size"`
	SHA256   string `json:"sha256"`
	// BlobID is the git blob id of a hub file stored in git, not LFS.
	BlobID string `json:"blobId,omitempty"`
}

// EngineRequest is an engine source as the experiment wrote it.
type EngineRequest struct {
	Git    string `json:"git,omitempty"`
	Ref    string `json:"ref,omitempty"`
	NPM    string `json:"npm,omitempty"`
	Python string `json:"python,omitempty"`
	Path   string `json:"path,omitempty"`
	// URL is an endpoint's base URL (the endpoint family). It holds no
	// credentials: the spec refuses them, and the API key's value never
	// reaches a lockfile.
	URL string `json:"url,omitempty"`
}

// requestOf is the request a lockfile records for a source: a git URL
// without the credentials of its user information
// ([gitsrc.StripUserinfo]), which reach git from the experiment, in
// memory, and never a lockfile.
func requestOf(src spec.Source) EngineRequest {
	return EngineRequest{Git: gitsrc.StripUserinfo(src.Git), Ref: src.Ref, NPM: src.NPM, Python: src.Python, Path: src.Path, URL: src.URL}
}

// EngineLock is what an engine's source resolved to.
type EngineLock struct {
	// Family is the engine family, e.g. "ik_llama.cpp".
	Family string `json:"family"`
	// Requested is the source as written in the experiment.
	Requested EngineRequest `json:"requested"`
	// Commit is the full 40-hex commit of a git source.
	Commit string `json:"commit,omitempty"`
	// Kind says what the git ref was: branch, tag, annotated-tag or commit.
	Kind string `json:"kind,omitempty"`
	// Patches are the experiment's patches, in order, each proven to apply
	// strictly at Commit.
	Patches []PatchLock `json:"patches,omitempty"`
	// NPM is the exact npm package of an npm source.
	NPM *NPMLock `json:"npm,omitempty"`
	// Binaries are the hashed files of a prebuilt (path) or python source.
	Binaries []FileLock `json:"binaries,omitempty"`
	// Version is what the engine reports as its version, when known.
	Version string `json:"version,omitempty"`
	// Unpinned says why nothing of the engine is pinned (an endpoint rigor
	// did not start); empty for every engine the lock pins.
	Unpinned string `json:"unpinned,omitempty"`
}

// PatchLock is one patch file: its path relative to the module root, as
// written in the experiment, and its bytes' sha256 and size.
type PatchLock struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
}

// NPMLock is an exact npm package version with its integrity
// (dist.integrity, "sha512-…"). Platform is the prebuilt-binary package
// of node-llama-cpp for the platform that locked it.
type NPMLock struct {
	Package   string   `json:"package"`
	Version   string   `json:"version"`
	Integrity string   `json:"integrity"`
	Platform  *NPMLock `json:"platform,omitempty"`
}

// ModelRequest is a model as the experiment wrote it.
type ModelRequest struct {
	HF        string          `json:"hf,omitempty"`
	Revision  string          `json:"revision,omitempty"`
	Files     []string        `json:"files,omitempty"`
	Path      string          `json:"path,omitempty"`
	Synthetic *spec.Synthetic `json:"synthetic,omitempty"`
	// Name is the model's name as an endpoint serves it (the endpoint
	// family): nothing of its bytes is locked.
	Name string `json:"name,omitempty"`
}

// ModelLock is what a model resolved to.
type ModelLock struct {
	// Requested is the model as written in the experiment.
	Requested ModelRequest `json:"requested"`
	// Commit is the 40-hex commit of the Hugging Face repo.
	Commit string `json:"commit,omitempty"`
	// Files are the model's files, sorted by path: repo paths for a hub
	// model, paths as the experiment names them (path joined with the file)
	// for local files.
	Files []FileLock `json:"files,omitempty"`
	// Synthetic is the synthetic model file rigor writes.
	Synthetic *SyntheticLock `json:"synthetic,omitempty"`
}

// FileLock is one file with its size and sha256. BlobID is the git blob
// id of a small hub file stored in git rather than LFS, whose sha256 the
// hub does not publish. GGUF holds the header facts of a GGUF file when
// its bytes were at hand (gguf.Facts.Map).
type FileLock struct {
	Path   string         `json:"path"`
	Size   int64          `json:"size"`
	SHA256 string         `json:"sha256,omitempty"`
	BlobID string         `json:"blobId,omitempty"`
	GGUF   map[string]any `json:"gguf,omitempty"`
}

// SyntheticLock is the synthetic model file: its sha256, size and GGUF
// facts. It lives at <rigor cache>/models/synthetic/<sha256>.gguf.
type SyntheticLock struct {
	SHA256 string         `json:"sha256"`
	Size   int64          `json:"size"`
	GGUF   map[string]any `json:"gguf,omitempty"`
}

// Path returns the lockfile of the experiment package pkg (slash-separated,
// relative to experiments/) in the module at root:
// root/lockfiles/<pkg>.lock.json.
func Path(root, pkg string) string {
	return filepath.Join(root, Dir, filepath.FromSlash(pkg)+Ext)
}

// relPath is the lockfile path as errors show it.
func relPath(pkg string) string { return Dir + "/" + pkg + Ext }

// Encode returns the canonical bytes of f: indented JSON with sorted keys
// and a trailing newline.
func Encode(f *File) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(f); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Digest returns "sha256:<hex>" of the entry's compact canonical JSON.
func (e *Entry) Digest() string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(e); err != nil {
		// An Entry holds only strings, numbers, slices and maps of JSON
		// values; it always encodes.
		panic(err)
	}
	sum := sha256.Sum256(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// SpecDigest returns the digest of an experiment: "sha256:<hex>" of the
// JSON list of its points' canonical JSON, in point order. Reformatting
// the CUE files leaves it unchanged.
func SpecDigest(x *spec.Experiment) string {
	h := sha256.New()
	h.Write([]byte("["))
	for i, p := range x.Points {
		if i > 0 {
			h.Write([]byte(","))
		}
		h.Write(p.CanonicalJSON)
	}
	h.Write([]byte("]"))
	// #requires is part of what a lock pins: the same flags on a machine
	// the experiment no longer asks for are another experiment. (An
	// experiment without #requires keeps the digest it always had.)
	if len(x.RequiresLines) > 0 {
		h.Write([]byte("\n#requires\n" + strings.Join(x.RequiresLines, "\n")))
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// ParseError is a lockfile that cannot be read: a JSON syntax error with
// its line and column, or a field with a wrong value.
type ParseError struct {
	// File is the lockfile, relative to the module root.
	File string
	// Line and Col locate a syntax or type error; 0 when unknown.
	Line, Col int
	// Field is the JSON path of the wrong field, e.g.
	// "experiments.pkg/x.engine.commit"; empty for syntax errors.
	Field string
	Msg   string
}

// Error returns "file:line:col: field: msg".
func (e *ParseError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d:%d", e.Line, e.Col)
	}
	b.WriteString(": ")
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Hint tells the user how to repair the file.
func (e *ParseError) Hint() string {
	return "fix the file, or delete it and run 'rigor lock --update' to write it again"
}

// Read reads and validates the lockfile of package pkg. A missing file is
// an error wrapping fs.ErrNotExist; a broken one is a *[ParseError].
//
// A lockfile whose real path leaves the module (a symlink out of it) is a
// *[spec.EscapeError]: it is neither read nor written.
func Read(root, pkg string) (*File, error) {
	if _, err := spec.Confine(root, relPath(pkg)); err != nil {
		return nil, fmt.Errorf("reading lockfile: %w", err)
	}
	b, err := os.ReadFile(Path(root, pkg))
	if err != nil {
		return nil, fmt.Errorf("reading lockfile %s: %w", relPath(pkg), err)
	}
	return Parse(relPath(pkg), b)
}

// Parse decodes and validates lockfile bytes; name is used in errors.
func Parse(name string, b []byte) (*File, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	var f File
	if err := dec.Decode(&f); err != nil {
		return nil, jsonError(name, b, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		line, col := lineCol(b, int(dec.InputOffset()))
		return nil, &ParseError{File: name, Line: line, Col: col, Msg: "unexpected data after the top-level object"}
	}
	if err := f.validate(); err != nil {
		var pe *ParseError
		if errors.As(err, &pe) {
			pe.File = name
		}
		return nil, err
	}
	return &f, nil
}

func jsonError(name string, b []byte, err error) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		// Offset counts the bytes read, the offending one included.
		line, col := lineCol(b, int(se.Offset)-1)
		return &ParseError{File: name, Line: line, Col: col, Msg: "invalid JSON: " + se.Error()}
	case errors.As(err, &te):
		line, col := lineCol(b, int(te.Offset))
		return &ParseError{File: name, Line: line, Col: col, Field: te.Field, Msg: fmt.Sprintf("got a JSON %s, want %s", te.Value, goTypeName(te.Type.String()))}
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		line, col := lineCol(b, len(b))
		return &ParseError{File: name, Line: line, Col: col, Msg: "invalid JSON: unexpected end of file"}
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return &ParseError{File: name, Msg: "unknown field " + strings.TrimPrefix(err.Error(), "json: unknown field ")}
	}
	return &ParseError{File: name, Msg: err.Error()}
}

func goTypeName(t string) string {
	switch {
	case strings.HasPrefix(t, "int"), strings.HasPrefix(t, "uint"), t == "float64":
		return "a number"
	case t == "string":
		return "a string"
	case strings.HasPrefix(t, "[]"):
		return "a list"
	case strings.HasPrefix(t, "map"), strings.Contains(t, "lock."), strings.Contains(t, "spec."):
		return "an object"
	}
	return t
}

// lineCol converts a byte offset to a 1-based line and column.
func lineCol(b []byte, off int) (int, int) {
	off = max(0, min(off, len(b)))
	line := 1 + bytes.Count(b[:off], []byte("\n"))
	col := off - bytes.LastIndexByte(b[:off], '\n')
	return line, col
}

var (
	hex40  = regexp.MustCompile(`^[0-9a-f]{40}$`)
	hex64  = regexp.MustCompile(`^[0-9a-f]{64}$`)
	digest = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)
)

func (f *File) validate() error {
	bad := func(field, format string, args ...any) error {
		return &ParseError{Field: field, Msg: fmt.Sprintf(format, args...)}
	}
	if f.Version != Version {
		return bad("version", "unsupported lockfile version %d (this rigor reads version %d)", f.Version, Version)
	}
	if f.Experiments == nil {
		return bad("experiments", "missing")
	}
	ids := make([]string, 0, len(f.Experiments))
	for id := range f.Experiments {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		e := f.Experiments[id]
		p := "experiments." + id
		if e == nil {
			return bad(p, "null, want an object")
		}
		if !digest.MatchString(e.SpecDigest) {
			return bad(p+".specDigest", "%q is not sha256:<64 hex digits>", e.SpecDigest)
		}
		if e.Engine.Family == "" {
			return bad(p+".engine.family", "missing")
		}
		if e.Engine.Commit != "" && !hex40.MatchString(e.Engine.Commit) {
			return bad(p+".engine.commit", "%q is not a 40-hex commit", e.Engine.Commit)
		}
		for i, pl := range e.Engine.Patches {
			if pl.Path == "" {
				return bad(fmt.Sprintf("%s.engine.patches[%d].path", p, i), "missing")
			}
			if !hex64.MatchString(pl.SHA256) {
				return bad(fmt.Sprintf("%s.engine.patches[%d].sha256", p, i), "%q is not 64 hex digits", pl.SHA256)
			}
		}
		for i, fl := range e.Engine.Binaries {
			if err := fl.validate(fmt.Sprintf("%s.engine.binaries[%d]", p, i), true); err != nil {
				return err
			}
		}
		if e.Model.Commit != "" && !hex40.MatchString(e.Model.Commit) {
			return bad(p+".model.commit", "%q is not a 40-hex commit", e.Model.Commit)
		}
		for i, fl := range e.Model.Files {
			if err := fl.validate(fmt.Sprintf("%s.model.files[%d]", p, i), false); err != nil {
				return err
			}
		}
		if s := e.Model.Synthetic; s != nil && !hex64.MatchString(s.SHA256) {
			return bad(p+".model.synthetic.sha256", "%q is not 64 hex digits", s.SHA256)
		}
		if c := e.Corpus; c != nil {
			if c.Path == "" {
				return bad(p+".corpus.path", "missing")
			}
			if !hex64.MatchString(c.SHA256) {
				return bad(p+".corpus.sha256", "%q is not 64 hex digits", c.SHA256)
			}
			if c.HF != "" && !hex40.MatchString(c.Commit) {
				return bad(p+".corpus.commit", "%q is not a 40-hex commit", c.Commit)
			}
		}
	}
	return nil
}

func (fl FileLock) validate(p string, needSHA bool) error {
	if fl.Path == "" {
		return &ParseError{Field: p + ".path", Msg: "missing"}
	}
	if fl.Size < 0 {
		return &ParseError{Field: p + ".size", Msg: fmt.Sprintf("%d is negative", fl.Size)}
	}
	switch {
	case fl.SHA256 != "":
		if !hex64.MatchString(fl.SHA256) {
			return &ParseError{Field: p + ".sha256", Msg: fmt.Sprintf("%q is not 64 hex digits", fl.SHA256)}
		}
	case fl.BlobID != "" && !needSHA:
		if !hex40.MatchString(fl.BlobID) {
			return &ParseError{Field: p + ".blobId", Msg: fmt.Sprintf("%q is not 40 hex digits", fl.BlobID)}
		}
	default:
		return &ParseError{Field: p + ".sha256", Msg: "missing"}
	}
	return nil
}

// Write writes f as the lockfile of package pkg atomically: into a temp
// file beside it, synced, renamed over the old file, and the directory
// synced. When the file already holds the same bytes nothing is written.
// On error the old file is as it was and no temp file is left.
func Write(root, pkg string, f *File) error {
	b, err := Encode(f)
	if err != nil {
		return fmt.Errorf("encoding lockfile %s: %w", relPath(pkg), err)
	}
	if _, err := spec.Confine(root, relPath(pkg)); err != nil {
		return fmt.Errorf("writing lockfile: %w", err)
	}
	name := Path(root, pkg)
	if old, err := os.ReadFile(name); err == nil && bytes.Equal(old, b) {
		return nil
	}
	if err := writeAtomic(name, b); err != nil {
		return fmt.Errorf("writing lockfile %s: %w", relPath(pkg), err)
	}
	return nil
}

// writeAtomic replaces name with b: temp, fsync, rename, fsync dir.
func writeAtomic(name string, b []byte) (err error) {
	dir := filepath.Dir(name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(name)+".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err = tmp.Write(b); err != nil {
		return err
	}
	if err = tmp.Chmod(0o644); err != nil {
		return err
	}
	if err = tmp.Sync(); err != nil {
		return err
	}
	if err = tmp.Close(); err != nil {
		return err
	}
	if err = os.Rename(tmp.Name(), name); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
