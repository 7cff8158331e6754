package results

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/rigorbench/rigor/internal/redact"
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
		{"TOKENIZERS_PARALLELISM", false}, {"MAX_TOKENS", false}, {"PATH", false}, {"PWD", false},
		{"CUDA_VISIBLE_DEVICES", false}, {"KEYBOARD", false}, {"SSH_KEY_PATH", false}, {"GGML_SYCL_DISABLE_OPT", false},
	} {
		if got := SecretName(c.name); got != c.want {
			t.Errorf("SecretName(%q) = %v, want %v", c.name, got, c.want)
		}
	}
}

// RedactArgv is redact.Argv (whose table of cases is in internal/redact):
// one case shows the delegation, and that the argument is left alone.
func TestRedactArgv(t *testing.T) {
	in := []string{"llama-bench", "--hf-token", "hf_abc", "-o", "json"}
	if got, want := strings.Join(RedactArgv(in), " "), "llama-bench --hf-token <redacted> -o json"; got != want {
		t.Errorf("RedactArgv(%q) = %q, want %q", in, got, want)
	}
	if in[2] != "hf_abc" {
		t.Errorf("RedactArgv modified its argument")
	}
}

func TestRedact(t *testing.T) {
	r := testRun("20260508T032753Z-3f9a", "m/x", t0, 1)
	r.Processes[1].Env["HF_TOKEN"] = "hf_secretvalue"
	r.Processes[1].Env["EMPTY_TOKEN"] = ""
	r.Processes[1].Argv = append(r.Processes[1].Argv, "--api-key", "sk-othersecret")
	r.Error = "401 for hf_secretvalue"
	r.LogTail = "auth sk-othersecret rejected\n"
	r.Spec = json.RawMessage(`{"flags":{"ngl":99},"env":{"WANDB_API_KEY":"w-123456","FOO":"1"}}`)
	Redact(r)
	if got := r.Processes[1].Env; got["HF_TOKEN"] != Redacted || got["EMPTY_TOKEN"] != "" || got["GGML_DISABLE_FUSED_RMS_NORM"] != "1" {
		t.Errorf("env after Redact = %v", got)
	}
	if r.Error != "401 for <redacted>" || r.LogTail != "auth <redacted> rejected\n" {
		t.Errorf("Error %q, LogTail %q: want the secrets scrubbed", r.Error, r.LogTail)
	}
	var spec struct{ Env map[string]string }
	json.Unmarshal(r.Spec, &spec)
	if want := map[string]string{"WANDB_API_KEY": Redacted, "FOO": "1"}; !reflect.DeepEqual(spec.Env, want) {
		t.Errorf("spec env = %v, want %v", spec.Env, want)
	}
	b, _ := json.Marshal(r)
	for _, s := range []string{"hf_secretvalue", "sk-othersecret", "w-123456"} {
		if strings.Contains(string(b), s) {
			t.Errorf("record still holds %q", s)
		}
	}
}

// FuzzLoad feeds the record decoder arbitrary bytes: it must never panic,
// and a record it accepts must survive an encode/decode round trip.
func FuzzLoad(f *testing.F) {
	good, _ := Encode(testRun("20260508T032753Z-3f9a", "minimax-m27-b70/baseline", t0, 13.8745, 14.4737, 14.529))
	f.Add(good)
	f.Add(good[:len(good)/2])
	f.Add([]byte(`{"schema":1,"id":"a","experiment":"x/y","status":"ok","metrics":[{"name":"tokSOut","samples":[1e308,-0]}]}`))
	f.Add([]byte(`{"schema":2}`))
	f.Add([]byte(`[]`))
	f.Add([]byte("{\"schema\":1,\n\"id\": x}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := Decode(data)
		if err != nil {
			var le *LoadError
			if !errors.As(err, &le) {
				t.Fatalf("Decode error %v is not a *LoadError", err)
			}
			_ = err.Error()
			return
		}
		enc, err := Encode(r)
		if err != nil {
			t.Fatalf("Encode of a decoded record: %v", err)
		}
		r2, err := Decode(enc)
		if err != nil {
			t.Fatalf("decoding a re-encoded record: %v\n%s", err, enc)
		}
		enc2, _ := Encode(r2)
		if string(enc) != string(enc2) {
			t.Fatalf("round trip changed the record:\n%s\n%s", enc, enc2)
		}
	})
}

// A gzipped raw file is scrubbed inside and stays a valid gzip stream.
func TestScrubBytesGzip(t *testing.T) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write([]byte(`{"request": 1, "key": "s3cr3t-value-123"}` + "\n"))
	zw.Close()
	out := scrubBytes(buf.Bytes(), []string{"s3cr3t-value-123"})
	zr, err := gzip.NewReader(bytes.NewReader(out))
	if err != nil {
		t.Fatalf("scrubbed gzip is not gzip: %v", err)
	}
	plain, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(plain, []byte("s3cr3t-value-123")) || !bytes.Contains(plain, []byte(`"request": 1`)) {
		t.Errorf("scrubbed content = %s", plain)
	}
	clean := buf.Bytes()
	if got := scrubBytes(clean, []string{"absent"}); !bytes.Equal(got, clean) {
		t.Error("a gzip file without secrets changed")
	}
}

// A run redacted before it is written (as the runner does) still scrubs
// its own secret values, and the values it was told of, wherever they
// appear bare: in any field of the record (engine.build.gpu), in raw
// outputs, and inside a gzipped raw file.
func TestWrite_bareSecrets(t *testing.T) {
	const (
		envSecret = "c4n4ry-env-value-1" // a secret-named env value
		urlSecret = "c4n4ry-url-pass-2"  // a URL password in env
		toldOf    = "c4n4ry-api-key-3"   // an API key the run was told of
		gitCred   = "c4n4ry-git-token-4" // userinfo of a git source in the spec
	)
	r := testRun("20260508T032753Z-5e1c", "q/base", t0, 10, 11, 12)
	r.Processes[1].Env["MY_API_TOKEN"] = envSecret
	r.Processes[1].Env["DATABASE_URL"] = "postgres://u:" + urlSecret + "@db/x"
	r.Spec = json.RawMessage(`{"engine":{"source":{"git":"http://x:` + gitCred + `@h/e.git"}}}`)
	r.Engine.Build = &Build{GPU: "GPU " + envSecret + " " + toldOf, CPU: urlSecret}
	r.Notes = gitCred
	r.KnowSecrets(redact.NewScrubber(toldOf))
	Redact(r) // the runner redacts the record before the store sees it

	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(toldOf + "\n" + envSecret + "\n"))
	zw.Close()
	raw := map[string][]byte{
		"bench.stdout":     []byte(envSecret + "\n" + urlSecret + "\n"),
		"bench.stderr":     []byte("key " + toldOf + "\n" + gitCred + "\n"),
		"requests.json.gz": gz.Bytes(),
	}
	dir := t.TempDir()
	path, err := Open(dir).Write(r, raw)
	if err != nil {
		t.Fatal(err)
	}
	files := []string{path}
	rawDir := Open(dir).RawDir(r.Experiment, r.ID)
	for n := range raw {
		files = append(files, filepath.Join(rawDir, n))
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(f, ".gz") {
			zr, err := gzip.NewReader(bytes.NewReader(b))
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if b, err = io.ReadAll(zr); err != nil {
				t.Fatal(err)
			}
		}
		if bytes.Contains(b, []byte("c4n4ry")) {
			t.Errorf("%s holds a secret:\n%s", filepath.Base(f), b)
		}
		if !bytes.Contains(b, []byte(redact.Mark)) {
			t.Errorf("%s holds no %s:\n%s", filepath.Base(f), redact.Mark, b)
		}
	}
}
