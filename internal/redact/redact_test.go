package redact

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestSecretName(t *testing.T) {
	for _, c := range []struct {
		name string
		want bool
	}{
		{"HF_TOKEN", true}, {"HUGGING_FACE_HUB_TOKEN", true}, {"hf-token", true}, {"GITHUB_TOKEN", true},
		{"OPENAI_API_KEY", true}, {"api-key", true}, {"AWS_SECRET_ACCESS_KEY", true}, {"AWS_ACCESS_KEY_ID", true},
		{"AWS_SESSION_TOKEN", true}, {"DB_PASSWORD", true}, {"PGPASSWD", false}, {"MYSQL_PASSWD", true},
		{"GOOGLE_APPLICATION_CREDENTIALS", true}, {"CLIENT_SECRET", true}, {"NPM_TOKEN", true}, {"APIKEY", true},
		{"HTTP_AUTH", true}, {"NPM_CONFIG__AUTH", true}, {"authToken", true}, {"apiKey", true}, {"MY_KEY", true},
		{"TOKENIZERS_PARALLELISM", false}, {"MAX_TOKENS", false}, {"PATH", false}, {"PWD", false},
		{"CUDA_VISIBLE_DEVICES", false}, {"KEYBOARD", false}, {"SSH_KEY_PATH", false}, {"GGML_SYCL_DISABLE_OPT", false},
		{"RIGOR_GIT_AUTHOR", false}, {"maxTokens", false}, {"tokSOut", false}, {"key", false}, {"AUTHOR", false},
	} {
		if got := SecretName(c.name); got != c.want {
			t.Errorf("SecretName(%q) = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestString(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"cloning https://user:s3cretpw@git.example/x.git: 403", "cloning https://user:<redacted>@git.example/x.git: 403"},
		{"GET https://ghp_abcdefghijklmnop@github.com/x", "GET https://<redacted>@github.com/x"},
		{"ssh://git@host/x.git", "ssh://git@host/x.git"},
		{"https://h/x?download=1&token=abc123&X-Amz-Signature=ff00&sig=q&v=1", "https://h/x?download=1&token=<redacted>&X-Amz-Signature=<redacted>&sig=<redacted>&v=1"},
		{"https://s3/x?X-Amz-Credential=AK%2F1&X-Amz-Date=2026", "https://s3/x?X-Amz-Credential=<redacted>&X-Amz-Date=<redacted>"},
		{"Authorization: Bearer abc.def-ghi", "Authorization: Bearer <redacted>"},
		{"header Bearer abcdefgh12", "header Bearer <redacted>"},
		{"env HF_TOKEN=hf_abc TOKENIZERS_PARALLELISM=false run", "env HF_TOKEN=<redacted> TOKENIZERS_PARALLELISM=false run"},
		{`{"env": {"DB_PASSWORD": "pw1", "FOO": "1"}}`, `{"env": {"DB_PASSWORD": "<redacted>", "FOO": "1"}}`},
		{"vllm serve --api-key=sk-123 --port 8000", "vllm serve --api-key=<redacted> --port 8000"},
		{"vllm serve --api-key sk-123 --port 8000", "vllm serve --api-key <redacted> --port 8000"},
		{"llama-cli -hft hf_abc -p hi", "llama-cli -hft <redacted> -p hi"},
		{"postgres://u:PASS@db/x", "postgres://u:<redacted>@db/x"},
		{"token hf_abcdefghijklmnopqrstuvwx", "token <redacted>"},
		{"the token budget is 512 tokens", "the token budget is 512 tokens"},
		{"a basic throughput test", "a basic throughput test"},
		{"Authorization: Basic dXNlcjpwYXNz", "Authorization: Basic <redacted>"},
		{`"Authorization": "token abcdefgh"`, `"Authorization": "token <redacted>"`},
		{"llama-bench -t 4 -ub 32 -ctk f16 --max-tokens 5", "llama-bench -t 4 -ub 32 -ctk f16 --max-tokens 5"},
		{"HF_TOKEN is not set", "HF_TOKEN is not set"},
		{"x --token", "x --token"},
		{"rigor: error: no such experiment", "rigor: error: no such experiment"},
		{"a key: value", "a key: value"},
		{"HF_TOKEN=<redacted>", "HF_TOKEN=<redacted>"},
		{`{"clientSecret": "abc123", "apiKey": "k9"}`, `{"clientSecret": "<redacted>", "apiKey": "<redacted>"}`},
		{`experiment id "../../etc/passwd": empty, . or .. component`, `experiment id "../../etc/passwd": empty, . or .. component`},
		{`extraArgs: ["--api-key", "k-123456", "-n", "4"]`, `extraArgs: ["--api-key", "<redacted>", "-n", "4"]`},
		{"\"argv\": [\n  \"--hf-token\",\n  \"hf_x\"\n]", "\"argv\": [\n  \"--hf-token\",\n  \"<redacted>\"\n]"},
	} {
		if got := String(c.in); got != c.want {
			t.Errorf("String(%q)\n got %q\nwant %q", c.in, got, c.want)
		}
	}
}

func TestArgv(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"llama-bench -m x.gguf --hf-token hf_abc -o json", "llama-bench -m x.gguf --hf-token <redacted> -o json"},
		{"llama-cli -hft hf_abc -p hi", "llama-cli -hft <redacted> -p hi"},
		{"vllm serve --api-key=sk-123 --port 8000", "vllm serve --api-key=<redacted> --port 8000"},
		{"env HF_TOKEN=hf_abc TOKENIZERS_PARALLELISM=false run", "env HF_TOKEN=<redacted> TOKENIZERS_PARALLELISM=false run"},
		{"curl https://hf.co/x?download=1&token=hf_abc", "curl https://hf.co/x?download=1&token=<redacted>"},
		{"git clone https://user:ghp_abc@github.com/x/y", "git clone https://user:<redacted>@github.com/x/y"},
		{"x --url=https://h/p?sig=abc&v=1", "x --url=https://h/p?sig=<redacted>&v=1"},
		{"llama-bench -t 4 -ub 32 -ctk f16", "llama-bench -t 4 -ub 32 -ctk f16"},
		{"x --token", "x --token"},
		{"x -n 128 --max-tokens 5", "x -n 128 --max-tokens 5"},
	} {
		got := strings.Join(Argv(strings.Fields(c.in)), " ")
		if got != c.want {
			t.Errorf("Argv(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	in := []string{"--hf-token", "secret"}
	Argv(in)
	if in[1] != "secret" {
		t.Errorf("Argv modified its argument")
	}
}

func TestScrubber(t *testing.T) {
	s := FromEnviron([]string{"HF_TOKEN=canary-hf-0001", "HF_ENDPOINT=http://u:canary-ep-0002@127.0.0.1:1", "PATH=/bin", "X=short"})
	s.AddArgv([]string{"node", "--api-key", "canary-arg-0003", "--auth=canary-arg-0004"})
	got := s.String("engine echoed canary-hf-0001 and canary-ep-0002 and canary-arg-0003 canary-arg-0004 /bin short")
	want := "engine echoed <redacted> and <redacted> and <redacted> <redacted> /bin short"
	if got != want {
		t.Errorf("Scrubber.String = %q, want %q", got, want)
	}
	if b := s.Bytes([]byte("x canary-ep-0002")); string(b) != "x <redacted>" {
		t.Errorf("Scrubber.Bytes = %q", b)
	}
}

// TestJSONStaysValid checks that redacting the text of a JSON document
// leaves valid JSON.
func TestJSONStaysValid(t *testing.T) {
	doc := map[string]any{
		"env":  map[string]string{"HF_TOKEN": "hf_abcdefghijklmnopqrstuvwxyz", "DB": "postgres://u:pw@db/x", "A": "Bearer abcdefghijk"},
		"argv": []string{"--api-key", "k1234567", "--url=https://h/?token=t1&x=1"},
		"log":  "GET https://u:p@h/x?sig=1 \"quoted\" HF_TOKEN=abc\n",
	}
	b, _ := json.MarshalIndent(doc, "", "  ")
	out := Bytes(b)
	if !json.Valid(out) {
		t.Fatalf("redacted JSON is invalid:\n%s", out)
	}
	for _, s := range []string{"hf_abcdefghijklmnopqrstuvwxyz", ":pw@", "abcdefghijk", "t1&", "HF_TOKEN=abc", ":p@", "sig=1"} {
		if strings.Contains(string(out), s) {
			t.Errorf("redacted JSON still holds %q:\n%s", s, out)
		}
	}
}

// templates are the shapes in which a secret reaches rigor's outputs; %s
// is the secret.
var templates = []string{
	"https://user:%s@host.example/x.git",
	"https://%s@github.com/x/y.git",
	"https://hub.example/api?token=%s&x=1",
	"https://s3.example/o?X-Amz-Security-Token=%s",
	"HF_TOKEN=%s",
	"MY_SERVICE_PASSWORD=%s rest",
	`{"DB_SECRET": "%s"}`,
	"--api-key %s",
	"--api-key=%s",
	"Authorization: Bearer %s",
	"npm_config_//registry.example/:_authToken=%s",
	"engine argv: node runner.js --auth %s -n 4",
	`extraArgs: ["--api-key", "%s"]`,
}

// FuzzString checks, for any secret made of the characters secrets are
// made of, planted in every template and surrounded by any text: String
// never panics, is idempotent, and removes the secret.
func FuzzString(f *testing.F) {
	f.Add("s3cret-Value_01", "prefix ", " suffix")
	f.Add("hf_abcdefghijklmnopqrstu", "", "")
	f.Add("a.b~c+d/e=f", "x\n", "\ty")
	f.Fuzz(func(t *testing.T, secret, before, after string) {
		if !utf8.ValidString(before + secret + after) {
			return
		}
		got := String(before + after)
		if again := String(got); again != got {
			t.Fatalf("String is not idempotent on %q: %q then %q", before+after, got, again)
		}
		// Secrets are printable, at least 6 characters, without the
		// characters that end a value in text.
		// A plain decimal number is a measurement, never a credential, by
		// design ("total_token_throughput": 6243.1).
		if len(secret) < MinSecretLen || strings.ContainsAny(secret, " \t\r\n\"'\\,;&<>(){}[]`@:/?#%=") || strings.HasPrefix(secret, "-") {
			return
		}
		for _, r := range secret {
			if r < 0x21 || r > 0x7e {
				return
			}
		}
		for _, tmpl := range templates {
			mid := strings.ReplaceAll(tmpl, "%s", secret)
			in := before + "\n" + mid + "\n" + after
			out := String(in)
			if again := String(out); again != out {
				t.Errorf("String is not idempotent on %q: %q then %q", in, out, again)
			}
			// The line between the surrounding text, which may itself be
			// redacted, must not hold the secret.
			if rb, ra := String(before+"\n"), String("\n"+after); strings.HasPrefix(out, rb) && strings.HasSuffix(out[len(rb):], ra) {
				if line := out[len(rb) : len(out)-len(ra)]; strings.Contains(line, secret) {
					t.Errorf("String(%q) = %q: the secret %q is still there", in, out, secret)
				}
			}
			// The pre-filter never skips a line a rule would change.
			for _, line := range strings.SplitAfter(in, "\n") {
				if got, all := redactLine(line, scan(line), nil), redactLine(line, ^0, nil); got != all {
					t.Errorf("scan(%q) = %b skips a rule: %q, all rules: %q", line, scan(line), got, all)
				}
			}
			s := NewScrubber()
			s.Add(Found(mid)...)
			if so := s.String("x " + secret + " y"); strings.Contains(so, secret) {
				t.Errorf("a scrubber fed Found(%q) = %q leaves %q in %q", mid, Found(mid), secret, so)
			}
		}
	})
}

// Measures of tokens are not tokens: vLLM's result keys and numbers stay.
func TestMeasuresOfTokens(t *testing.T) {
	for _, name := range []string{"total_token_throughput", "TOKEN_COUNT", "output_token_len"} {
		if SecretName(name) {
			t.Errorf("SecretName(%q) = true, want false", name)
		}
	}
	for _, name := range []string{"HF_TOKEN", "token", "GITHUB_TOKEN_VALUE", "authToken"} {
		if !SecretName(name) {
			t.Errorf("SecretName(%q) = false, want true", name)
		}
	}
	in := `{"total_token_throughput": 6243.1, "HF_TOKEN": 123456, "api_token": "abc123secret"}`
	got := String(in)
	if !strings.Contains(got, `"total_token_throughput": 6243.1`) || strings.Contains(got, "123456") || strings.Contains(got, "abc123secret") {
		t.Errorf("String(%s) = %s", in, got)
	}
}

func TestURLCredentials(t *testing.T) {
	doc := `{"git":"http://tok:pa55word-1@h/e.git","apiKey":"not-a-url-secret","u":"https://ghp_abcdefghijklmnop@github.com/x?sig=s1gnature"}`
	got := URLCredentials(doc)
	want := map[string]bool{"pa55word-1": true, "ghp_abcdefghijklmnop": true, "s1gnature": true}
	for _, v := range got {
		if !want[v] {
			t.Errorf("URLCredentials found %q", v)
		}
		delete(want, v)
	}
	if len(want) > 0 {
		t.Errorf("URLCredentials missed %v (got %q)", want, got)
	}
	if URLCredentials(`{"key": "value-123456"}`) != nil {
		t.Error("a document without URLs has URL credentials")
	}
}

// TestSplitUserinfo: the one reading of a URL's user information, shared
// by redaction and gitsrc.StripUserinfo.
func TestSplitUserinfo(t *testing.T) {
	for _, tc := range []struct {
		in, scheme, user, rest string
		hasUser, ok            bool
	}{
		{"https://tok:pw@host/x@y?q=a@b#f", "https", "tok:pw", "host/x@y?q=a@b#f", true, true},
		{"HTTP://a@b@host", "HTTP", "a@b", "host", true, true},
		{"https://@host/", "https", "", "host/", true, true},
		{"https://host/p@q", "https", "", "host/p@q", false, true},
		{"git@github.com:o/r.git", "", "", "git@github.com:o/r.git", false, false},
	} {
		scheme, user, rest, hasUser, ok := SplitUserinfo(tc.in)
		if scheme != tc.scheme || user != tc.user || rest != tc.rest || hasUser != tc.hasUser || ok != tc.ok {
			t.Errorf("SplitUserinfo(%q) = %q %q %q %v %v, want %q %q %q %v %v", tc.in, scheme, user, rest, hasUser, ok,
				tc.scheme, tc.user, tc.rest, tc.hasUser, tc.ok)
		}
	}
}
