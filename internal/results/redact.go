package results

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"

	"github.com/rigorbench/rigor/internal/redact"
)

// Redacted replaces a secret value in a record.
const Redacted = redact.Mark

// SecretName reports whether an environment variable or option name looks
// like it holds a secret ([redact.SecretName]).
func SecretName(name string) bool { return redact.SecretName(name) }

// RedactEnv returns a copy of env with secrets redacted ([redact.Env]).
func RedactEnv(env map[string]string) map[string]string { return redact.Env(env) }

// RedactArgv returns a copy of argv with secrets redacted ([redact.Argv]).
func RedactArgv(argv []string) []string { return redact.Argv(argv) }

// Redact removes secrets from a run in place: the environment and argv of
// every process ([redact.Env], [redact.Argv]), the spec, and any
// occurrence of a secret value in argv, the error, the log tail, the
// warnings and the notes (a token echoed in an error message). Secret
// values become [Redacted]; see [RedactWith] for fingerprints.
func Redact(r *Run) {
	RedactWith(r, nil)
}

// RedactWith is [Redact] that replaces the value of a secret environment
// variable with its keyed fingerprint ([Fingerprinter.Redacted]), so that
// diff can tell whether it changed without showing it; nil writes plain
// [Redacted] values. A value already redacted (plain or fingerprinted)
// stays as it is, so redacting twice changes nothing.
func RedactWith(r *Run, fp *Fingerprinter) {
	s := scrubberOf(r)
	r.known = s
	for i := range r.Processes {
		p := &r.Processes[i]
		p.Env = redactEnv(p.Env, fp)
		p.Argv = redact.Argv(p.Argv)
		for j := range p.Argv {
			p.Argv[j] = s.String(p.Argv[j])
		}
	}
	r.Spec = redactJSON(r.Spec, s)
	r.Error = s.String(r.Error)
	r.LogTail = s.String(r.LogTail)
	for i := range r.Warnings {
		r.Warnings[i] = s.String(r.Warnings[i])
	}
	r.Notes = s.String(r.Notes)
}

// redactEnv is [redact.Env] keeping redacted values and writing
// fingerprints when fp is not nil.
func redactEnv(env map[string]string, fp *Fingerprinter) map[string]string {
	if env == nil {
		return nil
	}
	out := make(map[string]string, len(env))
	for k, v := range env {
		switch {
		case isRedacted(v):
		case fp != nil && v != "" && SecretName(k):
			v = fp.Redacted(v)
		default:
			v = redact.EnvValue(k, v)
		}
		out[k] = v
	}
	return out
}

// scrubberOf returns a scrubber that knows the secret values a run
// carries: secret-named variables of its processes and of its spec's env
// section, secret option values and URL credentials in their argv.
func scrubberOf(r *Run) *redact.Scrubber {
	s := redact.NewScrubber()
	s.Merge(r.known)
	for _, p := range r.Processes {
		for k, v := range p.Env {
			if !isRedacted(v) {
				s.AddEnv(k, v)
			}
		}
		s.AddArgv(p.Argv)
	}
	var tree struct {
		Env       map[string]string `json:"env"`
		ExtraArgs []string          `json:"extraArgs"`
	}
	if json.Unmarshal(r.Spec, &tree) == nil {
		for k, v := range tree.Env {
			s.AddEnv(k, v)
		}
		s.AddArgv(tree.ExtraArgs)
	}
	// URL credentials anywhere in the spec (a git source's userinfo).
	s.Add(redact.URLCredentials(string(r.Spec))...)
	return s
}

// KnowSecrets tells the run secret values it does not carry itself (an
// API key a process got through its SecretEnv, HF_TOKEN, an .npmrc
// token), so that [RedactWith] and [Store.Write] remove them wherever
// they appear: in any field of the record and in the raw outputs, an
// engine printing one bare included. Nothing of s is encoded.
func (r *Run) KnowSecrets(s *redact.Scrubber) {
	if s == nil {
		return
	}
	if r.known == nil {
		r.known = redact.NewScrubber()
	}
	r.known.Merge(s)
}

// collectSecrets returns the secret values a run carries, longest first.
func collectSecrets(r *Run) []string { return scrubberOf(r).Values() }

// scrubBytes replaces every occurrence of the run's secret values (as
// found before [Redact]) in b, and whatever else looks secret
// ([redact.Bytes]); Write applies it to raw outputs.
func scrubBytes(b []byte, secrets []string) []byte {
	sc := redact.NewScrubber(secrets...)
	// A gzipped file (the load generator's per-request data) is scrubbed
	// inside, never as compressed bytes, which a token-shaped run of
	// bytes could corrupt.
	if len(b) > 2 && b[0] == 0x1f && b[1] == 0x8b {
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			return b
		}
		plain, err := io.ReadAll(zr)
		if err != nil {
			return b
		}
		out := sc.Bytes(plain)
		if bytes.Equal(out, plain) {
			return b
		}
		var buf bytes.Buffer
		zw := gzip.NewWriter(&buf)
		zw.Write(out)
		zw.Close()
		return buf.Bytes()
	}
	return sc.Bytes(b)
}

// redactJSON redacts the text of a JSON document, values of secret-looking
// names included. The document is returned unchanged (same bytes) when
// nothing is secret, and as it was if redaction would break it.
func redactJSON(doc json.RawMessage, s *redact.Scrubber) json.RawMessage {
	if len(doc) == 0 {
		return doc
	}
	out := s.Bytes(doc)
	if !json.Valid(out) {
		return doc
	}
	return out
}
