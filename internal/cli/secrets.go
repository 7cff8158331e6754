package cli

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/rigorbench/rigor/internal/hf"
	"github.com/rigorbench/rigor/internal/redact"
	"github.com/rigorbench/rigor/internal/spec"
)

// knownSecrets returns a scrubber that knows every secret value rigor can
// find out about before it loads an experiment: the secret-named
// variables of its environment and the credentials in URL values
// ([redact.FromEnviron]), HF_TOKEN even when it comes from its token file
// (HF_TOKEN_PATH, $HF_HOME/token), and the tokens and passwords of the
// user's and the project's .npmrc (npm's _authToken, _auth, _password).
// Everything rigor prints or writes is scrubbed of them as byte strings.
func knownSecrets(environ []string, getenv func(string) string) *redact.Scrubber {
	s := redact.FromEnviron(environ)
	s.Add(hf.OptionsFromEnv(getenv).Token)
	var rcs []string
	if p := getenv("NPM_CONFIG_USERCONFIG"); p != "" {
		rcs = append(rcs, p)
	} else if p := getenv("npm_config_userconfig"); p != "" {
		rcs = append(rcs, p)
	} else if home := getenv("HOME"); home != "" {
		rcs = append(rcs, filepath.Join(home, ".npmrc"))
	}
	if wd, err := os.Getwd(); err == nil {
		rcs = append(rcs, filepath.Join(wd, ".npmrc"))
	}
	for _, p := range rcs {
		s.Add(npmrcSecrets(p)...)
	}
	return s
}

// npmrcSecrets returns the credentials an .npmrc holds: the values of
// keys ending in _authToken, _auth or _password (//registry/:_authToken=…),
// and the credentials of URL values. A missing file holds none.
func npmrcSecrets(path string) []string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		k, v = strings.TrimSpace(k), strings.Trim(strings.TrimSpace(v), `"'`)
		if strings.Contains(v, "${") {
			continue // ${NPM_TOKEN}: npm reads the environment, which is known already
		}
		switch {
		case strings.HasSuffix(k, "_authToken"), strings.HasSuffix(k, "_auth"), strings.HasSuffix(k, "_password"), redact.SecretName(k):
			out = append(out, v)
		default:
			out = append(out, redact.Found(v)...)
		}
	}
	return out
}

// warnShortSecrets warns of secret values shorter than
// [redact.MinSecretLen] in the experiments' env and in the variables
// their passEnv names: they are redacted where their name is beside them
// (env, argv, NAME=value), but not where an engine prints them alone, as
// a short value would mangle unrelated words.
func (e *env) warnShortSecrets(xs []*spec.Experiment) {
	lookup := e.cfg().Lookup
	seen := map[string]bool{}
	warn := func(id, field string) {
		if seen[field] {
			return
		}
		seen[field] = true
		fmt.Fprintf(e.stderr, "rigor: warning: %s: %s is secret but shorter than %d bytes: it is redacted beside its name, not where an engine prints it alone\n",
			id, field, redact.MinSecretLen)
		fmt.Fprintf(e.stderr, "rigor: hint: use a secret of at least %d bytes\n", redact.MinSecretLen)
	}
	for _, x := range xs {
		names := make([]string, 0, len(x.Spec.Env))
		for k := range x.Spec.Env {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			if v := strings.TrimSpace(x.Spec.Env[k]); v != "" && len(v) < redact.MinSecretLen && v != redact.Mark && redact.SecretName(k) {
				warn(x.ID, "env."+k)
			}
		}
		for _, k := range x.Spec.PassEnv {
			if v, ok := lookup(k); ok && strings.TrimSpace(v) != "" && len(strings.TrimSpace(v)) < redact.MinSecretLen && redact.SecretName(k) {
				warn(x.ID, "passEnv "+k)
			}
		}
	}
}

// knowSecretsOf tells the output writers the secret values the
// experiments hold (secret-named env values, URL credentials anywhere in
// the spec such as a git source's token, secret extraArgs values), so that an
// error or a progress line quoting one bare is scrubbed too.
func (e *env) knowSecretsOf(xs []*spec.Experiment) {
	if e.secrets == nil {
		return
	}
	for _, x := range xs {
		for k, v := range x.Spec.Env {
			e.secrets.AddEnv(k, v)
		}
		e.secrets.AddArgv(x.Spec.ExtraArgs)
		if b, err := json.Marshal(x.Spec); err == nil {
			e.secrets.Add(redact.URLCredentials(string(b))...)
		}
	}
}
