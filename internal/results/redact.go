package results

import (
	"bytes"
	"encoding/json"
	"net/url"
	"sort"
	"strings"
)

// Redacted replaces a secret value in a record.
const Redacted = "<redacted>"

// secretWords are name components that mark a secret: HF_TOKEN,
// GITHUB_TOKEN, DB_PASSWORD, AWS_SECRET_ACCESS_KEY. Components, not
// substrings, so that TOKENIZERS_PARALLELISM and MAX_TOKENS stay readable.
var secretWords = map[string]bool{
	"TOKEN": true, "SECRET": true, "SECRETS": true, "PASSWORD": true, "PASSWD": true,
	"CREDENTIAL": true, "CREDENTIALS": true, "APIKEY": true, "PASSPHRASE": true,
}

// secretPairs are two-component names that mark a secret: OPENAI_API_KEY,
// AWS_ACCESS_KEY_ID, SSH_PRIVATE_KEY.
var secretPairs = map[string]bool{
	"API_KEY": true, "ACCESS_KEY": true, "PRIVATE_KEY": true, "SESSION_KEY": true,
	"AUTH_KEY": true, "SECRET_KEY": true, "CLIENT_SECRET": true,
}

// secretShortFlags are short argv flags whose value is a secret:
// llama.cpp's -hft (--hf-token).
var secretShortFlags = map[string]bool{"hft": true}

// SecretName reports whether an environment variable or option name looks
// like it holds a secret. The name is split into components at '_', '-'
// and '.', case-insensitively: HF_TOKEN, hf-token, OPENAI_API_KEY,
// AWS_SECRET_ACCESS_KEY, DB_PASSWORD and GOOGLE_APPLICATION_CREDENTIALS
// are secret; TOKENIZERS_PARALLELISM and MAX_TOKENS are not.
func SecretName(name string) bool {
	parts := strings.FieldsFunc(strings.ToUpper(name), func(r rune) bool {
		return r == '_' || r == '-' || r == '.'
	})
	for i, p := range parts {
		if secretWords[p] {
			return true
		}
		if i > 0 && secretPairs[parts[i-1]+"_"+p] {
			return true
		}
	}
	return false
}

// RedactEnv returns a copy of env in which the value of every variable
// whose name looks secret ([SecretName]) is [Redacted]. Empty values stay
// empty: an empty secret discloses nothing and saying so helps debugging.
func RedactEnv(env map[string]string) map[string]string {
	if env == nil {
		return nil
	}
	out := make(map[string]string, len(env))
	for k, v := range env {
		if v != "" && SecretName(k) {
			v = Redacted
		}
		out[k] = v
	}
	return out
}

// RedactArgv returns a copy of argv with secret values replaced by
// [Redacted]: the word after an option whose name looks secret
// (--hf-token X, --api-key X, -hft X), the value of --name=value for such
// an option, the value of NAME=value words (env HF_TOKEN=x cmd), and
// passwords and secret query parameters in URLs
// (https://user:pw@host/…?token=…).
func RedactArgv(argv []string) []string {
	if argv == nil {
		return nil
	}
	out := make([]string, len(argv))
	copy(out, argv)
	for i := 0; i < len(out); i++ {
		w := out[i]
		if strings.HasPrefix(w, "-") && len(w) > 1 {
			name, value, hasValue := strings.Cut(strings.TrimLeft(w, "-"), "=")
			if !secretFlag(w, name) {
				out[i] = redactURLs(w)
				continue
			}
			if hasValue {
				out[i] = w[:len(w)-len(value)] + Redacted
			} else if i+1 < len(out) {
				out[i+1] = Redacted
				i++
			}
			continue
		}
		if name, value, ok := strings.Cut(w, "="); ok && value != "" && isEnvName(name) && SecretName(name) {
			out[i] = name + "=" + Redacted
			continue
		}
		out[i] = redactURLs(w)
	}
	return out
}

func secretFlag(word, name string) bool {
	if !strings.HasPrefix(word, "--") && secretShortFlags[name] {
		return true
	}
	return SecretName(name)
}

func isEnvName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		switch {
		case r == '_', r >= 'A' && r <= 'Z', r >= 'a' && r <= 'z':
		case r >= '0' && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// redactURLs redacts the password and the secret query parameters of a
// word that is a URL, or that holds one after '=' (--endpoint=https://…).
func redactURLs(w string) string {
	i := strings.Index(w, "://")
	if i < 0 {
		return w
	}
	start := strings.LastIndexAny(w[:i], "= ") + 1
	u, err := url.Parse(w[start:])
	if err != nil || u.Host == "" {
		return w
	}
	changed := false
	if u.User != nil {
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(u.User.Username(), Redacted)
			changed = true
		}
	}
	if u.RawQuery != "" {
		q := u.Query()
		keys := make([]string, 0, len(q))
		for k := range q {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if SecretName(k) || strings.EqualFold(k, "key") || strings.EqualFold(k, "sig") {
				for j := range q[k] {
					q[k][j] = Redacted
				}
				changed = true
			}
		}
		if changed {
			u.RawQuery = encodeQueryKeepOrder(u.RawQuery, q)
		}
	}
	if !changed {
		return w
	}
	s := u.String()
	s = strings.ReplaceAll(s, url.QueryEscape(Redacted), Redacted)
	s = strings.ReplaceAll(s, url.PathEscape(Redacted), Redacted)
	return w[:start] + s
}

// encodeQueryKeepOrder rewrites raw with the values of q, keeping the
// parameters in their original order.
func encodeQueryKeepOrder(raw string, q url.Values) string {
	seen := map[string]int{}
	parts := strings.Split(raw, "&")
	for i, p := range parts {
		k, _, _ := strings.Cut(p, "=")
		key, err := url.QueryUnescape(k)
		if err != nil {
			continue
		}
		vals := q[key]
		n := seen[key]
		seen[key]++
		if n < len(vals) && vals[n] == Redacted {
			parts[i] = k + "=" + Redacted
		}
	}
	return strings.Join(parts, "&")
}

// Redact removes secrets from a run in place: the environment and argv of
// every process ([RedactEnv], [RedactArgv]), the spec's env section, and
// any occurrence of a redacted value in argv, the error, the log tail and
// the warnings (a token echoed in an error message).
func Redact(r *Run) {
	secrets := collectSecrets(r)
	for i := range r.Processes {
		p := &r.Processes[i]
		p.Env = RedactEnv(p.Env)
		p.Argv = RedactArgv(p.Argv)
		for j := range p.Argv {
			p.Argv[j] = scrub(p.Argv[j], secrets)
		}
	}
	r.Spec = redactSpec(r.Spec)
	r.Error = scrub(r.Error, secrets)
	r.LogTail = scrub(r.LogTail, secrets)
	for i := range r.Warnings {
		r.Warnings[i] = scrub(r.Warnings[i], secrets)
	}
	r.Notes = scrub(r.Notes, secrets)
}

// minSecretLen is the shortest secret value scrubbed from free text: a
// shorter one ("1", "on") would mangle unrelated words.
const minSecretLen = 6

// collectSecrets returns the secret values a run carries, longest first.
func collectSecrets(r *Run) []string {
	set := map[string]bool{}
	for _, p := range r.Processes {
		for k, v := range p.Env {
			if SecretName(k) && len(v) >= minSecretLen && v != Redacted {
				set[v] = true
			}
		}
		red := RedactArgv(p.Argv)
		for i, w := range p.Argv {
			r := red[i]
			if r == w || !strings.HasSuffix(r, Redacted) || strings.Contains(w, "://") {
				continue
			}
			if v := w[len(r)-len(Redacted):]; len(v) >= minSecretLen {
				set[v] = true
			}
		}
	}
	out := make([]string, 0, len(set))
	for v := range set {
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool {
		if len(out[i]) != len(out[j]) {
			return len(out[i]) > len(out[j])
		}
		return out[i] < out[j]
	})
	return out
}

func scrub(s string, secrets []string) string {
	for _, v := range secrets {
		s = strings.ReplaceAll(s, v, Redacted)
	}
	return s
}

// scrubBytes replaces every occurrence of the run's secret values (as
// found before [Redact]) in b; Write applies it to raw outputs.
func scrubBytes(b []byte, secrets []string) []byte {
	for _, v := range secrets {
		b = bytes.ReplaceAll(b, []byte(v), []byte(Redacted))
	}
	return b
}

// redactSpec redacts the values of secret-looking names in the spec's env
// section. The spec is returned unchanged (same bytes) when nothing is
// secret.
func redactSpec(spec json.RawMessage) json.RawMessage {
	if len(spec) == 0 {
		return spec
	}
	var tree map[string]json.RawMessage
	if json.Unmarshal(spec, &tree) != nil {
		return spec
	}
	var env map[string]json.RawMessage
	if json.Unmarshal(tree["env"], &env) != nil || len(env) == 0 {
		return spec
	}
	changed := false
	for k, v := range env {
		if SecretName(k) && string(v) != `""` && string(v) != `"<redacted>"` {
			env[k] = json.RawMessage(`"<redacted>"`)
			changed = true
		}
	}
	if !changed {
		return spec
	}
	b, err := json.Marshal(env)
	if err != nil {
		return spec
	}
	tree["env"] = b
	out, err := json.Marshal(tree)
	if err != nil {
		return spec
	}
	return out
}
