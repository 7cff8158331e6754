package interop

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/rigorbench/rigor/internal/results"
	"github.com/rigorbench/rigor/internal/spec"

	"github.com/rigorbench/rigor/internal/suggest"
)

// Formats rigor imports and exports.
const (
	FormatSeedSummary  = "seed-summary"
	FormatLocalMaxxing = "localmaxxing"
	FormatRegistry     = "registry-v1"
	FormatLlamaBench   = "llama-bench-json"
)

// ImportFormats lists the formats [Import] reads.
var ImportFormats = []string{FormatSeedSummary, FormatLocalMaxxing, FormatRegistry, FormatLlamaBench}

// RegistrySchema is the local-ai-registry schema version rigor reads and
// writes.
const RegistrySchema = "local-ai-registry/v1"

// SourceFile is the name under which an imported file is kept beside each
// record it produced (the record's raw directory).
const SourceFile = "source.json"

// ImportOptions control [Import].
type ImportOptions struct {
	// Format is one of [ImportFormats]; "" detects it.
	Format string
	// Experiment links every run of the file to this experiment (or point)
	// id; "" links by labels or, for LocalMaxxing, by model and engine.
	Experiment string
	// Experiments are the module's experiments, loaded without problems.
	Experiments []*spec.Experiment
	// IDs are every experiment id of the module, for suggestions.
	IDs []string
	// Now is the import time (Provenance.ImportedAt).
	Now time.Time
}

// Imported is one run record made from a file, with the raw files to keep
// beside it.
type Imported struct {
	Run *results.Run
	Raw map[string][]byte
}

// FileError is a problem with an input file: it names the file, the
// format it was read as, and what is wrong.
type FileError struct {
	File   string
	Format string
	Err    error
}

func (e *FileError) Error() string {
	if e.Format == "" {
		return fmt.Sprintf("importing %s: %v", e.File, e.Err)
	}
	return fmt.Sprintf("importing %s (%s): %v", e.File, e.Format, e.Err)
}

func (e *FileError) Unwrap() error { return e.Err }

// ErrUnknownFormat is wrapped by the error for a file whose format
// [Detect] does not recognize.
var ErrUnknownFormat = errors.New("unknown format")

// ErrTruncated is wrapped by the error for a file that ends before its
// JSON does.
var ErrTruncated = errors.New("truncated JSON")

// Detect names the format of a file's content.
func Detect(data []byte) (string, error) {
	t := bytes.TrimSpace(data)
	if len(t) == 0 {
		return "", errors.New("the file is empty")
	}
	if t[0] == '[' {
		return FormatLlamaBench, nil
	}
	if t[0] != '{' {
		return "", fmt.Errorf("%w: not JSON (starts with %q)", ErrUnknownFormat, shorten(string(firstLine(t)), 30))
	}
	// llama-bench JSONL: one object per line with build_commit.
	if first := firstLine(t); bytes.Contains(first, []byte(`"build_commit"`)) && json.Valid(first) {
		return FormatLlamaBench, nil
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(t, &top); err != nil {
		return "", jsonError(t, err)
	}
	if d, ok := top["data"]; ok {
		var inner map[string]json.RawMessage
		if json.Unmarshal(d, &inner) == nil {
			if _, ok := inner["schema_version"]; ok {
				return FormatRegistry, nil
			}
		}
	}
	switch {
	case has(top, "schema_version"):
		return FormatRegistry, nil
	case has(top, "baseline") || has(top, "runs") && has(top, "engine"):
		return FormatSeedSummary, nil
	case has(top, "hfId") && has(top, "tokSOut"):
		return FormatLocalMaxxing, nil
	case has(top, "build_commit"):
		return FormatLlamaBench, nil
	}
	keys := make([]string, 0, len(top))
	for k := range top {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if len(keys) > 6 {
		keys = append(keys[:6], "…")
	}
	return "", fmt.Errorf("%w: a JSON object with keys %s is none of %s", ErrUnknownFormat, strings.Join(keys, ", "), strings.Join(ImportFormats, ", "))
}

func has(m map[string]json.RawMessage, k string) bool { _, ok := m[k]; return ok }

func firstLine(b []byte) []byte {
	l, _, _ := bytes.Cut(b, []byte{'\n'})
	return l
}

func shorten(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}

// jsonError describes a JSON decoding error with a line number, and says
// "truncated" for a file that ends early.
func jsonError(data []byte, err error) error {
	var se *json.SyntaxError
	if errors.Is(err, io.ErrUnexpectedEOF) || (errors.As(err, &se) && strings.Contains(err.Error(), "unexpected end of JSON")) {
		return fmt.Errorf("%w: the file ends at line %d before its JSON does", ErrTruncated, bytes.Count(data, []byte{'\n'})+1)
	}
	if errors.As(err, &se) {
		line := bytes.Count(data[:min(int(se.Offset), len(data))], []byte{'\n'}) + 1
		return fmt.Errorf("line %d: %v", line, err)
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		line := bytes.Count(data[:min(int(te.Offset), len(data))], []byte{'\n'}) + 1
		return fmt.Errorf("line %d: field %s: got JSON %s, want %s", line, te.Field, te.Value, te.Type)
	}
	return err
}

// decodeStrict decodes JSON into v, with a readable error.
func decodeStrict(data []byte, v any) error {
	if err := json.Unmarshal(data, v); err != nil {
		return jsonError(data, err)
	}
	return nil
}

// Import converts one file into run records. Every record of the file is
// built and checked before Import returns; on error it returns none. file
// is the path recorded in the provenance.
func Import(file string, data []byte, opts ImportOptions) ([]Imported, error) {
	format := opts.Format
	if format == "" {
		f, err := Detect(data)
		if err != nil {
			return nil, &FileError{File: file, Err: err}
		}
		format = f
	}
	sum := sha256.Sum256(data)
	c := &conv{file: file, data: data, sha: hex.EncodeToString(sum[:]), opts: opts, format: format}
	if opts.Experiment != "" {
		if _, err := c.findExperiment(opts.Experiment); err != nil {
			return nil, err
		}
	}
	var out []Imported
	var err error
	switch format {
	case FormatSeedSummary:
		out, err = c.seedSummary()
	case FormatLocalMaxxing:
		out, err = c.localMaxxing()
	case FormatRegistry:
		out, err = c.registry()
	case FormatLlamaBench:
		out, err = c.llamaBench()
	default:
		return nil, &FileError{File: file, Err: fmt.Errorf("unknown format %q (want one of %s)", format, strings.Join(ImportFormats, ", "))}
	}
	if err != nil {
		var nm *spec.NoMatchError
		var fe *FileError
		if errors.As(err, &nm) || errors.As(err, &fe) {
			return nil, err
		}
		return nil, &FileError{File: file, Format: format, Err: err}
	}
	seen := map[string]bool{}
	for _, im := range out {
		if seen[im.Run.ID] {
			return nil, &FileError{File: file, Format: format, Err: fmt.Errorf("two runs would get the id %s", im.Run.ID)}
		}
		seen[im.Run.ID] = true
		secrets := secretValues(im.Run)
		results.Redact(im.Run)
		for name, b := range im.Raw {
			for _, v := range secrets {
				b = bytes.ReplaceAll(b, []byte(v), []byte(results.Redacted))
			}
			im.Raw[name] = tokenLike.ReplaceAll(b, []byte(results.Redacted))
		}
	}
	return out, nil
}

// conv carries one file through its conversion.
type conv struct {
	file, sha, format string
	data              []byte
	opts              ImportOptions
}

// provenance returns the provenance of a run of the file.
func (c *conv) provenance(label, external string) *results.Provenance {
	return &results.Provenance{Kind: "import", Format: c.format, File: c.file, SHA256: c.sha,
		Label: label, ExternalID: external, ImportedAt: c.opts.Now.UTC()}
}

// runID names an imported run: its start time plus six hex digits of the
// file's sha256 and the label, so that the same file and label always
// give the same id.
func (c *conv) runID(start time.Time, label string) string {
	h := sha256.Sum256([]byte(c.sha + "\x00" + label))
	return start.UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(h[:3])
}

func (c *conv) raw() map[string][]byte {
	return map[string][]byte{SourceFile: c.data}
}

// findExperiment resolves an experiment or point id given by the user.
func (c *conv) findExperiment(id string) (*spec.Experiment, error) {
	expID, _ := spec.SplitPointID(id)
	for _, x := range c.opts.Experiments {
		if x.ID == expID {
			return x, nil
		}
	}
	return nil, &spec.NoMatchError{Patterns: []string{id}, Suggestions: Nearest(expID, c.opts.IDs, 3)}
}

// link finds the point a run belongs to: the point of --experiment, else
// the experiment whose labels hold label. index picks among the points of
// a sweep when the experiment lists one label per point.
func (c *conv) link(label string) (*spec.Point, string, error) {
	if c.opts.Experiment != "" {
		x, err := c.findExperiment(c.opts.Experiment)
		if err != nil {
			return nil, "", err
		}
		if _, axes := spec.SplitPointID(c.opts.Experiment); axes != "" {
			for _, p := range x.Points {
				if results.SamePoint(p.ID, c.opts.Experiment) {
					return p, "given with --experiment", nil
				}
			}
			return nil, "", fmt.Errorf("%s has no point %q", x.ID, c.opts.Experiment)
		}
		p, err := pickPoint(x, label)
		return p, "given with --experiment", err
	}
	if label == "" {
		return nil, "", nil
	}
	var found []*spec.Experiment
	for _, x := range c.opts.Experiments {
		for _, l := range x.Spec.Labels {
			if l == label {
				found = append(found, x)
				break
			}
		}
	}
	switch len(found) {
	case 0:
		return nil, "", nil
	case 1:
		p, err := pickPoint(found[0], label)
		return p, fmt.Sprintf("linked by its label %q", label), err
	}
	var ids []string
	for _, x := range found {
		ids = append(ids, x.ID)
	}
	return nil, "", &LinkError{Msg: fmt.Sprintf("run %q: label is in the labels of %s; give --experiment", label, strings.Join(ids, ", "))}
}

// pickPoint picks the point of an experiment: its only point, or the
// point at the label's index when the experiment lists one label per
// point (a sweep).
func pickPoint(x *spec.Experiment, label string) (*spec.Point, error) {
	if len(x.Points) == 1 {
		return x.Points[0], nil
	}
	if len(x.Spec.Labels) == len(x.Points) {
		for i, l := range x.Spec.Labels {
			if l == label {
				return x.Points[i], nil
			}
		}
	}
	var ids []string
	for _, p := range x.Points {
		ids = append(ids, p.ID)
	}
	return nil, fmt.Errorf("%s is a sweep of %d points and the run %q names none of them; give a point id with --experiment (one of %s)", x.ID, len(x.Points), label, strings.Join(ids, ", "))
}

// apply links a run to a point: experiment, point, sweep coordinates and
// the point's effective configuration.
func apply(r *results.Run, p *spec.Point, how string) {
	r.Experiment = p.Experiment.ID
	r.Point = p.ID
	r.Swept = p.SweptMap()
	r.Spec = append(json.RawMessage(nil), p.CanonicalJSON...)
	r.SpecDigest = p.Digest
	r.Unverified = append(r.Unverified, fmt.Sprintf("spec: the configuration of %s (%s); the source does not record rigor's configuration", p.ID, how))
}

// noLink is the error for a run that no experiment claims.
func (c *conv) noLink(label, why string) error {
	msg := fmt.Sprintf("run %q is linked to no experiment", label)
	if label == "" {
		msg = "the record is linked to no experiment"
	}
	if why != "" {
		msg += ": " + why
	}
	return &LinkError{Msg: msg + "; give --experiment ID or add the label to an experiment's labels"}
}

// LinkError is a record that rigor cannot link to one experiment by
// itself: no experiment claims it, or several do. --experiment says which.
type LinkError struct{ Msg string }

func (e *LinkError) Error() string { return e.Msg }

var hex40 = regexp.MustCompile(`^[0-9a-f]{40}$`)
var hexShort = regexp.MustCompile(`^[0-9a-fA-F]{7,39}$`)

// commitFacts fills an engine commit, marking a short one unverified.
func commitFacts(r *results.Run, commit string) {
	switch {
	case commit == "":
	case hex40.MatchString(commit):
		r.Engine.Commit = commit
	case hexShort.MatchString(commit):
		r.Engine.Ref = commit
		r.Unverified = append(r.Unverified, "engine.commit: short sha "+commit)
	default:
		r.Engine.Ref = commit
		r.Unverified = append(r.Unverified, "engine.commit: "+commit+" is not a commit")
	}
}

// revisionFacts fills a model revision, marking a branch name unverified.
func revisionFacts(r *results.Run, rev string) {
	if rev == "" {
		r.Unverified = append(r.Unverified, "model.revision: not recorded")
		return
	}
	if hex40.MatchString(rev) {
		r.Model.Commit = rev
		r.Model.Revision = rev
		return
	}
	r.Model.Revision = rev
	r.Unverified = append(r.Unverified, "model.revision: "+rev+" is a branch name, not a commit")
}

// Nearest returns up to n ids closest to s by edit distance, nearest
// first, leaving out those too far to be a typo.
func Nearest(s string, ids []string, n int) []string {
	type cand struct {
		id string
		d  int
	}
	var cs []cand
	for _, id := range ids {
		d := suggest.Distance(strings.ToLower(s), strings.ToLower(id))
		limit := max(3, len([]rune(s))/5)
		if d <= limit {
			cs = append(cs, cand{id, d})
		}
	}
	sort.SliceStable(cs, func(i, j int) bool {
		if cs[i].d != cs[j].d {
			return cs[i].d < cs[j].d
		}
		return cs[i].id < cs[j].id
	})
	var out []string
	for i := 0; i < len(cs) && i < n; i++ {
		out = append(out, cs[i].id)
	}
	return out
}

// benchInt reads an integer from a point's bench section.
func benchInt(p *spec.Point, key string) (int, bool) {
	if p == nil {
		return 0, false
	}
	return toInt(p.Spec.Bench[key])
}

func toInt(v any) (int, bool) {
	switch x := v.(type) {
	case int:
		return x, true
	case int64:
		return int(x), true
	case float64:
		if x == float64(int(x)) {
			return int(x), true
		}
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return int(i), true
		}
	}
	return 0, false
}

// splitCommand splits a command snippet as a shell would for simple
// words (single and double quotes, no expansion), and separates the
// leading NAME=value assignments.
func splitCommand(s string) (env map[string]string, argv []string) {
	var words []string
	var cur strings.Builder
	inWord := false
	quote := rune(0)
	for _, r := range s {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				cur.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote = r
			inWord = true
		case r == ' ' || r == '\t' || r == '\n':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	i := 0
	for ; i < len(words); i++ {
		k, v, ok := strings.Cut(words[i], "=")
		if !ok || !isEnvName(k) {
			break
		}
		if env == nil {
			env = map[string]string{}
		}
		env[k] = v
	}
	return env, words[i:]
}

func isEnvName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if !(r == '_' || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

var stampRe = regexp.MustCompile(`(\d{8}T\d{6}Z)`)

// stampOf finds a UTC timestamp such as 20260508T032753Z in paths.
func stampOf(paths ...string) (time.Time, bool) {
	for _, p := range paths {
		if m := stampRe.FindString(p); m != "" {
			if t, err := time.Parse("20060102T150405Z", m); err == nil {
				return t, true
			}
		}
	}
	return time.Time{}, false
}

// secretValues returns the secret values a run's processes carry (the
// values [results.Redact] replaces), so that the raw source kept beside
// the record can be scrubbed of them too.
func secretValues(r *results.Run) []string {
	var out []string
	for _, p := range r.Processes {
		for k, v := range p.Env {
			if results.SecretName(k) && len(v) >= 6 && v != results.Redacted {
				out = append(out, v)
			}
		}
		red := results.RedactArgv(p.Argv)
		for i, w := range p.Argv {
			if i < len(red) && red[i] != w && len(w) >= 6 {
				if _, v, ok := strings.Cut(w, "="); ok && strings.HasPrefix(w, "-") {
					w = v
				}
				out = append(out, w)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out
}
