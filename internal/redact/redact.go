// Package redact removes secrets from everything rigor writes: records,
// raw engine output and worker logs, exports, commit messages, errors,
// hints and progress lines. It is the one place that decides what looks
// secret, so that every writer agrees.
//
// What is redacted:
//
//  1. URL credentials: the password of https://user:PASS@host (and the user
//     of https://TOKEN@host, a token in the user position), and the values
//     of credential-like query parameters (token, sig, key, password,
//     X-Amz-*, …).
//  2. Values of names that look secret ([SecretName]): environment
//     variables (HF_TOKEN=…, "DB_PASSWORD": "…"), options (--api-key X,
//     --api-key=X, -hft X).
//  3. Bearer and basic credentials (Authorization: Bearer …) and words
//     shaped like well-known tokens (hf_…, ghp_…, sk-…, npm_…, AKIA…).
//  4. Any value a [Scrubber] was told is secret, wherever it appears: a
//     token the engine echoes back in its own words.
//
// Every function returns its input unchanged (the same string) when
// nothing in it is secret, and is idempotent: redacting twice is
// redacting once.
package redact

import (
	"bytes"
	"io"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"
)

// Mark replaces a secret value.
const Mark = "<redacted>"

// secretWords are name components that mark a secret on their own:
// HF_TOKEN, GITHUB_TOKEN, DB_PASSWORD, AWS_SECRET_ACCESS_KEY,
// GOOGLE_APPLICATION_CREDENTIALS, HTTP_AUTH. Components, not substrings,
// so that TOKENIZERS_PARALLELISM, MAX_TOKENS and RIGOR_GIT_AUTHOR stay
// readable.
var secretWords = map[string]bool{
	"TOKEN": true, "SECRET": true, "SECRETS": true, "PASSWORD": true, "PASSWD": true,
	"CREDENTIAL": true, "CREDENTIALS": true, "APIKEY": true, "PASSPHRASE": true,
	"AUTH": true, "AUTHORIZATION": true, "OAUTH": true, "AUTHTOKEN": true,
	"ACCESSTOKEN": true, "PRIVATEKEY": true, "SECRETKEY": true, "PAT": true,
}

// tokenMeasures are components after TOKEN that make the name a measure
// of tokens, not a token.
var tokenMeasures = map[string]bool{
	"THROUGHPUT": true, "COUNT": true, "COUNTS": true, "RATE": true, "BUDGET": true, "LIMIT": true,
	"LEN": true, "LENGTH": true, "LENS": true, "IDS": true, "USAGE": true, "PER": true, "S": true,
}

// SecretName reports whether an environment variable, option or parameter
// name looks like it holds a secret. The name is split into components at
// '_', '-', '.' and lower-to-upper case changes (apiKey), case-insensitively;
// it is secret when a component is a secret word (TOKEN, SECRET,
// PASSWORD, CREDENTIAL, AUTH, …) or when it ends in a KEY component after
// another (OPENAI_API_KEY, SSH_PRIVATE_KEY, --api-key). HF_TOKEN,
// hf-token, AWS_SECRET_ACCESS_KEY, DB_PASSWORD and authToken are secret;
// TOKENIZERS_PARALLELISM, MAX_TOKENS, SSH_KEY_PATH, KEYBOARD and
// RIGOR_GIT_AUTHOR are not.
func SecretName(name string) bool {
	parts := components(name)
	for i, p := range parts {
		if !secretWords[p] {
			continue
		}
		// A token count or rate is not a credential: TOKEN followed by a
		// measure (total_token_throughput, TOKEN_COUNT, token_budget).
		if p == "TOKEN" && i+1 < len(parts) && tokenMeasures[parts[i+1]] {
			continue
		}
		return true
	}
	if n := len(parts); n >= 2 && parts[n-1] == "KEY" {
		return true
	}
	// AWS_ACCESS_KEY_ID: the id is as good as the key.
	for i := 1; i+1 < len(parts); i++ {
		if parts[i] == "KEY" && parts[i-1] == "ACCESS" {
			return true
		}
	}
	return false
}

// components splits a name at separators and lower→upper case changes
// and upper-cases the parts.
func components(name string) []string {
	var parts []string
	start := 0
	flush := func(end int) {
		if end > start {
			parts = append(parts, strings.ToUpper(name[start:end]))
		}
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c == '_' || c == '-' || c == '.' || c == ' ':
			flush(i)
			start = i + 1
		case c >= 'A' && c <= 'Z' && i > start && name[i-1] >= 'a' && name[i-1] <= 'z':
			flush(i)
			start = i
		}
	}
	flush(len(name))
	return parts
}

// secretParams are query parameters whose values are credentials, beside
// those [SecretName] recognises.
var secretParams = map[string]bool{
	"key": true, "sig": true, "signature": true, "pass": true, "pwd": true,
	"password": true, "token": true, "secret": true, "access_token": true,
	"api_key": true, "apikey": true, "auth": true, "code": false,
}

// SecretParam reports whether a URL query parameter carries a credential:
// token, sig, key, password, any X-Amz-* parameter, or a name that
// [SecretName] recognises.
func SecretParam(name string) bool {
	l := strings.ToLower(name)
	return secretParams[l] || strings.HasPrefix(l, "x-amz-") || strings.HasPrefix(l, "x-goog-") || SecretName(name)
}

// secretShortFlags are short options whose value is a secret:
// llama.cpp's -hft (--hf-token).
var secretShortFlags = map[string]bool{"hft": true}

// SecretFlag reports whether an argv word (-hft, --api-key, --hf-token)
// is an option whose value is a secret.
func SecretFlag(word string) bool {
	if !strings.HasPrefix(word, "-") || len(word) < 2 {
		return false
	}
	name := strings.TrimLeft(word, "-")
	if name == "" || name[0] < 'A' || (name[0] > 'Z' && name[0] < 'a') || name[0] > 'z' {
		return false
	}
	if !strings.HasPrefix(word, "--") && secretShortFlags[name] {
		return true
	}
	return SecretName(name)
}

// Env returns a copy of env in which the value of every variable whose
// name looks secret is [Mark] and every other value is redacted as text
// (postgres://u:PASS@db/x). Empty values stay empty: an empty secret
// discloses nothing and saying so helps debugging.
func Env(env map[string]string) map[string]string {
	if env == nil {
		return nil
	}
	out := make(map[string]string, len(env))
	for k, v := range env {
		out[k] = EnvValue(k, v)
	}
	return out
}

// EnvValue redacts the value of the variable name.
func EnvValue(name, value string) string {
	if value != "" && SecretName(name) {
		return Mark
	}
	return String(value)
}

// Argv returns a copy of argv with secret values replaced by [Mark]: the
// word after an option whose name looks secret (--hf-token X, --api-key X,
// -hft X), the value of --name=value for such an option, the value of
// NAME=value words (env HF_TOKEN=x cmd), and whatever [String] redacts in
// every word (URLs with credentials, bearer strings, token-shaped words).
func Argv(argv []string) []string {
	if argv == nil {
		return nil
	}
	out := make([]string, len(argv))
	copy(out, argv)
	for i := 0; i < len(out); i++ {
		w := out[i]
		if strings.HasPrefix(w, "-") && len(w) > 1 {
			flag, value, hasValue := strings.Cut(w, "=")
			if SecretFlag(flag) {
				if hasValue {
					if value != "" {
						out[i] = flag + "=" + Mark
					}
				} else if i+1 < len(out) && !strings.HasPrefix(out[i+1], "-") {
					out[i+1] = Mark
					i++
				}
				continue
			}
		}
		if name, value, ok := strings.Cut(w, "="); ok && value != "" && isName(name) && SecretName(name) {
			out[i] = name + "=" + Mark
			continue
		}
		out[i] = String(w)
	}
	return out
}

func isName(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		switch {
		case r == '_', r >= 'A' && r <= 'Z', r >= 'a' && r <= 'z':
		case (r >= '0' && r <= '9' || r == '-' || r == '.') && i > 0:
		default:
			return false
		}
	}
	return true
}

// valueChars is what a secret value in free text may be made of: it stops
// at white space, quotes, backslashes (JSON escapes), separators and
// angle brackets, so that redacting the text of a JSON document keeps it
// valid and [Mark] is never redacted again.
const valueClass = `[^\s"'\\,;&<>(){}\[\]` + "`" + `]`

const valueChars = valueClass + "+"

// valueStart is the first character of an option's value: not a dash,
// which starts the next option.
const valueStart = `[^-\s"'\\,;&<>(){}\[\]` + "`" + `]`

var (
	// A URL: scheme://authority/path?query.
	urlRe = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]*://[^\s"'\\<>` + "`" + `]+`)
	// NAME=value, NAME: value, "NAME": "value".
	assignRe = regexp.MustCompile(`(?:^|[^A-Za-z0-9_.-])("|')?([A-Za-z_][A-Za-z0-9_.-]*)("|')?([ \t]*[=:][ \t]*)("|')?(` + valueChars + `)`)
	// --name value, --name=value, -hft value.
	optionRe = regexp.MustCompile(`(?:^|[\s"'=])(--?[A-Za-z][A-Za-z0-9_.-]*)(=|[ \t]+)("|')?(` + valueStart + valueClass + `*)`)
	// "--name", "value": an option and its value in a JSON or CUE list.
	listOptRe = regexp.MustCompile(`(")(--?[A-Za-z][A-Za-z0-9_.-]*)"\s*,\s*"(` + valueStart + valueClass + `*)"`)
	// Authorization: Bearer X, Basic X, token X.
	bearerRe = regexp.MustCompile(`(?i)\b(bearer|basic|token)([ \t]+)(` + valueClass + `{6,})`)
	// Authorization: SCHEME CREDENTIALS, whatever the scheme.
	authHeaderRe = regexp.MustCompile(`(?i)\b((?:proxy-)?authorization)("?[ \t]*[:=][ \t]*"?)([A-Za-z][A-Za-z0-9_-]*)([ \t]+)(` + valueChars + `)`)
	// Words shaped like well-known tokens.
	tokenRe = regexp.MustCompile(`\b(hf_[A-Za-z0-9]{20,}|bhk_[0-9a-f]{40}|sk-[A-Za-z0-9_-]{20,}|gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,}|npm_[A-Za-z0-9]{30,}|glpat-[A-Za-z0-9_-]{20,}|xox[abpr]-[A-Za-z0-9-]{10,}|AKIA[0-9A-Z]{16})\b`)
)

// String redacts free text: an error message, a hint, a progress line, a
// log, a commit message, a JSON document (which stays valid JSON). See
// the package documentation for what is redacted.
func String(s string) string { return redactText(s, nil) }

// Found returns the secret values [String] would remove from s.
func Found(s string) []string {
	var found []string
	redactText(s, &found)
	return found
}

// URLCredentials returns the credentials of every URL in s (passwords,
// tokens in the user position, credential-like query parameters): the
// values [URL] removes. Unlike [Found] it ignores everything else, so
// that it can be applied to a whole document whose field names are not
// environment variables.
func URLCredentials(s string) []string {
	if !strings.Contains(s, "://") {
		return nil
	}
	var found []string
	for _, u := range urlRe.FindAllString(s, -1) {
		redactURL(u, &found)
	}
	return found
}

func redactText(s string, found *[]string) string {
	if s == "" {
		return s
	}
	out := s
	if strings.Contains(out, "://") {
		out = urlRe.ReplaceAllStringFunc(out, func(u string) string { return redactURL(u, found) })
	}
	// An option and its value on two lines of an indented JSON list.
	if strings.Contains(out, `"-`) {
		out = replaceGroup(out, listOptRe, 3, func(m []string) bool { return SecretFlag(m[2]) }, found)
	}
	// The rest is line by line, and only on lines that hold a word secrets
	// come with: most text is left alone at the cost of one scan, and the
	// regular expressions run on short inputs.
	var b strings.Builder
	changed := false
	rest := out
	for rest != "" {
		line := rest
		if i := strings.IndexByte(rest, '\n'); i >= 0 {
			line, rest = rest[:i+1], rest[i+1:]
		} else {
			rest = ""
		}
		red := line
		if c := scan(line); c != 0 {
			red = redactLine(line, c, found)
		}
		if red != line && !changed {
			changed = true
			b.Grow(len(out))
			b.WriteString(out[:len(out)-len(rest)-len(line)])
		}
		if changed {
			b.WriteString(red)
		}
	}
	if changed {
		out = b.String()
	}
	if out == s {
		return s
	}
	return out
}

// What a line holds that a line-level rule looks for ([scan]).
const (
	hasScheme    = 1 << iota // bearer, basic, token: bearerRe
	hasAuthz                 // authorization: authHeaderRe
	hasNamePart              // a part of a secret name or flag: optionRe, assignRe
	hasTokenWord             // the start of a well-known token: tokenRe
)

// scan finds, in one pass without allocating, what a line holds that a
// line-level rule could match, ASCII case ignored: the words of the
// authorization schemes, "authorization", the parts of every name
// [SecretName] or [SecretFlag] recognises ([nameParts]) and the prefixes
// of well-known tokens ([tokenPrefixes]). A line for which it returns 0
// holds nothing any rule redacts. Most bytes cost one table look-up.
func scan(l string) int {
	c := 0
	for i := 0; i < len(l); i++ {
		first := l[i] | 0x20 // lower-case for letters; other bytes fail the switch or foldAt
		switch first {
		case 'a':
			if foldAt(l, i, "authorization") {
				c |= hasAuthz | hasNamePart
			} else if foldAt(l, i, "auth") || foldAt(l, i, "apikey") {
				c |= hasNamePart
			} else if foldAt(l, i, "akia") {
				c |= hasTokenWord
			}
		case 'b':
			if foldAt(l, i, "bearer") || foldAt(l, i, "basic") {
				c |= hasScheme
			} else if foldAt(l, i, "bhk_") {
				c |= hasTokenWord
			}
		case 'c':
			if foldAt(l, i, "credential") {
				c |= hasNamePart
			}
		case 'g':
			if foldAt(l, i, "github_pat_") || foldAt(l, i, "glpat-") ||
				i+3 < len(l) && l[i+1]|0x20 == 'h' && l[i+3] == '_' && strings.IndexByte("pousr", l[i+2]|0x20) >= 0 {
				c |= hasTokenWord
			}
		case 'h':
			if foldAt(l, i, "hf_") {
				c |= hasTokenWord
			} else if foldAt(l, i, "hft") {
				c |= hasNamePart
			}
		case 'k':
			if foldAt(l, i, "key") {
				c |= hasNamePart
			}
		case 'n':
			if foldAt(l, i, "npm_") {
				c |= hasTokenWord
			}
		case 'p':
			if foldAt(l, i, "passw") || foldAt(l, i, "passphrase") || foldAt(l, i, "pat") {
				c |= hasNamePart
			}
		case 's':
			if foldAt(l, i, "secret") {
				c |= hasNamePart
			} else if foldAt(l, i, "sk-") {
				c |= hasTokenWord
			}
		case 't':
			if foldAt(l, i, "token") {
				c |= hasScheme | hasNamePart
			}
		case 'x':
			if foldAt(l, i, "xox") {
				c |= hasTokenWord
			}
		}
	}
	return c
}

// foldAt reports whether s holds the lower-case ASCII word w at i, ASCII
// case ignored.
func foldAt(s string, i int, w string) bool {
	if len(s)-i < len(w) {
		return false
	}
	for j := 0; j < len(w); j++ {
		c := s[i+j]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != w[j] {
			return false
		}
	}
	return true
}

// redactLine applies the rules that work within one line, each only when
// scan found what the rule looks for (the regular expressions are the
// expensive part, and most lines hold no secret).
func redactLine(out string, c int, found *[]string) string {
	if c&hasScheme != 0 {
		out = bearerRe.ReplaceAllStringFunc(out, func(m string) string {
			sub := bearerRe.FindStringSubmatch(m)
			if !strings.EqualFold(sub[1], "bearer") && !strings.ContainsAny(sub[3], "0123456789=+/_.-") {
				return m // "token budget", "basic throughput": words, not credentials
			}
			note(found, sub[3])
			return sub[1] + sub[2] + Mark
		})
	}
	if c&hasAuthz != 0 {
		out = replaceGroup(out, authHeaderRe, 5, func([]string) bool { return true }, found)
	}
	if c&hasNamePart != 0 && hasSecretWord(out) {
		out = redactAssignments(out, found)
	}
	if c&hasTokenWord != 0 {
		out = tokenRe.ReplaceAllStringFunc(out, func(m string) string { note(found, m); return Mark })
	}
	return out
}

// tokenPrefixes are the lower-case starts of the words tokenRe matches.
var tokenPrefixes = []string{"hf_", "bhk_", "sk-", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "npm_", "glpat-", "xox", "akia"}

// nameParts are the lower-case substrings of every name [SecretName]
// recognises (and of -hft).
var nameParts = []string{"token", "secret", "passw", "passphrase", "credential", "auth", "apikey", "key", "pat", "hft"}

// mayBeSecretName is a cheap test before [SecretName]: w holds one of
// nameParts, ASCII case ignored, without allocating.
func mayBeSecretName(w string) bool { return scan(w)&hasNamePart != 0 }

// hasSecretWord reports whether s holds a name [SecretName] or
// [SecretFlag] recognises, as a word of name characters.
func hasSecretWord(s string) bool {
	start := -1
	for i := 0; i <= len(s); i++ {
		nameChar := i < len(s) && (s[i] == '_' || s[i] == '-' || s[i] == '.' || s[i] >= 'a' && s[i] <= 'z' || s[i] >= 'A' && s[i] <= 'Z' || s[i] >= '0' && s[i] <= '9')
		if nameChar {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 {
			w := strings.TrimLeft(s[start:i], "-")
			if w != "" && mayBeSecretName(w) && (SecretName(w) || secretShortFlags[w]) {
				return true
			}
			start = -1
		}
	}
	return false
}

func note(found *[]string, v string) {
	if found != nil && v != Mark {
		*found = append(*found, v)
	}
}

func redactAssignments(s string, found *[]string) string {
	s = replaceGroup(s, optionRe, 4, func(m []string) bool {
		return SecretFlag(m[1]) && !strings.HasPrefix(m[4], "-")
	}, found)
	return replaceGroup(s, assignRe, 6, func(m []string) bool {
		// Quotes around the name come in pairs: "../etc/passwd": x is a
		// path, not a key. (A measure of tokens such as vLLM's
		// "total_token_throughput": 6243.1 is not a secret name; a numeric
		// value of a secret name, a PIN, still is a secret.)
		return m[1] == m[3] && SecretName(m[2]) && !authScheme(m[6])
	}, found)
}

// authScheme reports whether w is an HTTP authorization scheme, which
// precedes the credentials rather than being one.
func authScheme(w string) bool {
	switch strings.ToLower(w) {
	case "bearer", "basic", "token", "digest", "negotiate", "ntlm":
		return true
	}
	return false
}

// replaceGroup replaces group g of every match of re for which secret
// holds with Mark.
func replaceGroup(s string, re *regexp.Regexp, g int, secret func([]string) bool, found *[]string) string {
	idx := re.FindAllStringSubmatchIndex(s, -1)
	if idx == nil {
		return s
	}
	var b strings.Builder
	last := 0
	for _, m := range idx {
		sub := make([]string, len(m)/2)
		for i := range sub {
			if m[2*i] >= 0 {
				sub[i] = s[m[2*i]:m[2*i+1]]
			}
		}
		if sub[g] == Mark || !secret(sub) {
			continue
		}
		b.WriteString(s[last:m[2*g]])
		b.WriteString(Mark)
		note(found, sub[g])
		last = m[2*g+1]
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// URL redacts the credentials of a URL (or of a word that starts with
// one): the password of its user information, the user when it stands
// alone in an http(s) URL (https://TOKEN@host), and the values of
// credential-like query parameters ([SecretParam]). Anything that does not
// parse as a URL with a host is returned unchanged.
func URL(w string) string { return redactURL(w, nil) }

// SplitUserinfo splits a URL at its user information, reading nothing
// but the authority (which ends at the first /, ? or #; its user
// information at the last @ in it): the scheme as written, the user
// information without its @ (hasUser says whether there is one: it may
// be empty), and rest, from the host on. ok is false when u has no
// "scheme://". This is the one reading of a URL's credentials that
// redaction and gitsrc (which keeps them out of lockfiles) share.
func SplitUserinfo(u string) (scheme, userinfo, rest string, hasUser, ok bool) {
	i := strings.Index(u, "://")
	if i < 0 {
		return "", "", u, false, false
	}
	scheme, rest = u[:i], u[i+3:]
	authority := rest
	if j := strings.IndexAny(authority, "/?#"); j >= 0 {
		authority = authority[:j]
	}
	if at := strings.LastIndex(authority, "@"); at >= 0 {
		return scheme, authority[:at], rest[at+1:], true, true
	}
	return scheme, "", rest, false, true
}

func redactURL(w string, found *[]string) string {
	rawScheme, user, rest, hasUser, ok := SplitUserinfo(w)
	if !ok {
		return w
	}
	out := rawScheme + "://"
	if hasUser {
		scheme := strings.ToLower(rawScheme)
		if name, pw, hasPw := strings.Cut(user, ":"); hasPw {
			out += name + ":" + Mark + "@"
			if pw != "" {
				note(found, pw)
				if un, err := url.PathUnescape(pw); err == nil && un != pw {
					note(found, un)
				}
			}
		} else if user != "" && user != Mark && (strings.HasPrefix(scheme, "http") || strings.HasPrefix(scheme, "git+http") || len(user) >= 16) {
			out += Mark + "@"
			note(found, user)
		} else {
			out += user + "@"
		}
	}
	q := strings.IndexByte(rest, '?')
	if q < 0 {
		return keep(w, out+rest)
	}
	out += rest[:q+1]
	query := rest[q+1:]
	frag := ""
	if h := strings.IndexByte(query, '#'); h >= 0 {
		query, frag = query[:h], query[h:]
	}
	parts := strings.Split(query, "&")
	for k, p := range parts {
		name, value, ok := strings.Cut(p, "=")
		if !ok || value == "" || value == Mark {
			continue
		}
		if un, err := url.QueryUnescape(name); err == nil {
			name = un
		}
		if SecretParam(name) {
			parts[k] = p[:len(p)-len(value)] + Mark
			note(found, value)
			if un, err := url.QueryUnescape(value); err == nil && un != value {
				note(found, un)
			}
		}
	}
	return keep(w, out+strings.Join(parts, "&")+frag)
}

// keep returns the original string when the redacted one is equal, so
// that callers can compare cheaply.
func keep(orig, red string) string {
	if orig == red {
		return orig
	}
	return red
}

// Bytes is [String] for a byte slice; it returns b itself when nothing is
// secret.
func Bytes(b []byte) []byte {
	s := string(b)
	r := String(s)
	if r == s {
		return b
	}
	return []byte(r)
}

// MinSecretLen is the shortest value a [Scrubber] removes from free text: a
// shorter one ("1", "on") would mangle unrelated words.
const MinSecretLen = 6

// Scrubber redacts text as [String] does and also removes every known
// secret value wherever it appears, longest first. The zero value knows
// no secrets; it is safe for concurrent use.
type Scrubber struct {
	mu     sync.RWMutex
	values []string
}

// NewScrubber returns a scrubber that knows values (short ones and [Mark]
// are ignored).
func NewScrubber(values ...string) *Scrubber {
	s := &Scrubber{}
	s.Add(values...)
	return s
}

// FromEnviron returns a scrubber that knows the secrets of an environment
// in os.Environ form: the values of variables whose names look secret and
// the credentials inside URL values (HF_ENDPOINT=https://u:PASS@host).
func FromEnviron(environ []string) *Scrubber {
	s := &Scrubber{}
	for _, kv := range environ {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		s.AddEnv(k, v)
	}
	return s
}

// AddEnv adds the secrets of one variable: its value when its name looks
// secret, the credentials inside a URL value otherwise.
func (s *Scrubber) AddEnv(name, value string) {
	if value == "" {
		return
	}
	if SecretName(name) {
		s.Add(value)
		return
	}
	s.Add(Found(value)...)
}

// AddArgv adds the secret values an argv carries (the values [Argv]
// replaces).
func (s *Scrubber) AddArgv(argv []string) {
	for i := 0; i < len(argv); i++ {
		w := argv[i]
		if strings.HasPrefix(w, "-") && len(w) > 1 {
			flag, value, hasValue := strings.Cut(w, "=")
			if SecretFlag(flag) {
				if hasValue {
					s.Add(value)
				} else if i+1 < len(argv) && !strings.HasPrefix(argv[i+1], "-") {
					s.Add(argv[i+1])
					i++
				}
				continue
			}
		}
		if name, value, ok := strings.Cut(w, "="); ok && isName(name) && SecretName(name) {
			s.Add(value)
			continue
		}
		s.Add(Found(w)...)
	}
}

// Add adds secret values.
func (s *Scrubber) Add(values ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, v := range values {
		v = strings.TrimSpace(v)
		if len(v) < MinSecretLen || v == Mark || strings.Contains(v, Mark) {
			continue
		}
		dup := false
		for _, x := range s.values {
			if x == v {
				dup = true
				break
			}
		}
		if !dup {
			s.values = append(s.values, v)
			// URL-escaped forms leak too (a token in a query string).
			if e := url.QueryEscape(v); e != v {
				s.values = append(s.values, e)
			}
		}
	}
	sort.SliceStable(s.values, func(i, j int) bool { return len(s.values[i]) > len(s.values[j]) })
}

// Merge adds the values another scrubber knows (nil: none).
func (s *Scrubber) Merge(o *Scrubber) {
	if o == nil || o == s {
		return
	}
	s.Add(o.Values()...)
}

// Values returns the known secret values, longest first.
func (s *Scrubber) Values() []string {
	if s == nil {
		return nil
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return append([]string(nil), s.values...)
}

// String redacts s: the known values, then what [String] finds.
func (s *Scrubber) String(text string) string {
	if s != nil {
		s.mu.RLock()
		for _, v := range s.values {
			if strings.Contains(text, v) {
				text = strings.ReplaceAll(text, v, Mark)
			}
		}
		s.mu.RUnlock()
	}
	return String(text)
}

// Bytes is [Scrubber.String] for a byte slice.
func (s *Scrubber) Bytes(b []byte) []byte {
	if s != nil {
		s.mu.RLock()
		for _, v := range s.values {
			if bytes.Contains(b, []byte(v)) {
				b = bytes.ReplaceAll(b, []byte(v), []byte(Mark))
			}
		}
		s.mu.RUnlock()
	}
	return Bytes(b)
}

// Writer redacts everything written through it with a [Scrubber], a line
// at a time: complete lines are redacted and written as soon as a Write
// ends them (everything a Write completes goes out in one write to the
// underlying writer), so a table written cell by cell (text/tabwriter)
// is redacted once per line, not once per cell, and a secret split
// across writes within a line is still found. A partial line is held
// until its newline arrives, [TailDelay] passes, or [Writer.Flush] is
// called; a Write holding a carriage return after its last newline (a
// progress line redrawn in place) is written at once. At most [MaxLine]
// bytes of a line are held.
//
// Writer is safe for concurrent use. Call Flush before the program exits.
type Writer struct {
	w io.Writer
	s *Scrubber

	mu    sync.Mutex
	tail  []byte // the partial line held back
	buf   []byte // tail + the lines a Write completes
	timer *time.Timer
	armed bool
}

// TailDelay is how long a [Writer] holds a partial line before writing it
// as it is (a prompt, "doing x... " before a long step).
const TailDelay = 50 * time.Millisecond

// MaxLine is the most of one line a [Writer] holds; a longer line is
// redacted and written in pieces of about this size.
const MaxLine = 1 << 20

// NewWriter returns a writer that redacts with s (nil: [String] only)
// before writing to w.
func NewWriter(w io.Writer, s *Scrubber) *Writer { return &Writer{w: w, s: s} }

// Write redacts and writes the lines p completes and reports len(p) on
// success.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	k := bytes.LastIndexByte(p, '\n') + 1
	if bytes.IndexByte(p[k:], '\r') >= 0 || len(w.tail)+len(p) > MaxLine {
		k = len(p)
	}
	if k == 0 {
		w.tail = append(w.tail, p...)
		w.arm()
		return len(p), nil
	}
	emit := p[:k]
	if len(w.tail) > 0 {
		w.buf = append(append(w.buf[:0], w.tail...), emit...)
		emit = w.buf
	}
	w.tail = append(w.tail[:0], p[k:]...)
	if _, err := w.w.Write(w.s.Bytes(emit)); err != nil {
		w.tail = w.tail[:0]
		return 0, err
	}
	if len(w.buf) > MaxLine {
		w.buf = nil // do not keep a large table's buffer
	}
	if len(w.tail) > 0 {
		w.arm()
	}
	return len(p), nil
}

// arm makes sure the held partial line is written within TailDelay.
// w.mu is held.
func (w *Writer) arm() {
	if w.armed {
		return
	}
	w.armed = true
	if w.timer == nil {
		w.timer = time.AfterFunc(TailDelay, func() { w.Flush() })
	} else {
		w.timer.Reset(TailDelay)
	}
}

// Flush redacts and writes the partial line held back, if any.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.armed {
		w.timer.Stop()
		w.armed = false
	}
	if len(w.tail) == 0 {
		return nil
	}
	_, err := w.w.Write(w.s.Bytes(w.tail))
	w.tail = w.tail[:0]
	return err
}

// Unwrap returns the underlying writer (a terminal's *os.File, for
// progress displays).
func (w *Writer) Unwrap() io.Writer { return w.w }
