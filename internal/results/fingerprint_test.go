package results

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestFingerprinter_Redacted(t *testing.T) {
	dir := t.TempDir()
	fp, err := LoadFingerprinter(dir)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(filepath.Join(dir, FingerprintKeyFile))
	if err != nil || st.Mode().Perm() != 0o600 || st.Size() != 32 {
		t.Fatalf("key file: %v, %v; want 32 bytes, mode 0600", st, err)
	}
	a, b := fp.Redacted("hf_secretsecret123"), fp.Redacted("hf_othersecret456")
	re := regexp.MustCompile(`^<redacted fp:[0-9a-f]{12}/[0-9a-f]{8}>$`)
	if !re.MatchString(a) || a == b {
		t.Errorf("got %q and %q, want two different fingerprints", a, b)
	}
	if strings.Contains(a, "secret") {
		t.Errorf("fingerprint %q shows the value", a)
	}
	// The same key (loaded again) gives the same fingerprint.
	again, err := LoadFingerprinter(dir)
	if err != nil || again.Redacted("hf_secretsecret123") != a {
		t.Errorf("reloaded key: %v; fingerprint differs", err)
	}
	// Another machine's key gives another fingerprint and key id.
	other, _ := NewFingerprinter([]byte("0123456789abcdef0123456789abcdef"))
	if o := other.Redacted("hf_secretsecret123"); o == a || o[len(o)-9:] == a[len(a)-9:] {
		t.Errorf("other key: %q, want another fingerprint and key id than %q", o, a)
	}
	// Not a plain hash: the fingerprint depends on the key.
	if _, err := NewFingerprinter([]byte("short")); err == nil {
		t.Error("a 5-byte key was accepted")
	}
}

func TestRedactWith_fingerprints(t *testing.T) {
	fp, _ := NewFingerprinter([]byte("0123456789abcdef0123456789abcdef"))
	r := &Run{Processes: []Process{{Role: "bench", Argv: []string{"llama-bench", "--hf-token", "hf_secretsecret123"},
		Env: map[string]string{"HF_TOKEN": "hf_secretsecret123", "GGML_SYCL_DEVICE": "0"}}},
		Error: "401 for token hf_secretsecret123"}
	RedactWith(r, fp)
	want := fp.Redacted("hf_secretsecret123")
	if got := r.Processes[0].Env["HF_TOKEN"]; got != want {
		t.Errorf("HF_TOKEN = %q, want %q", got, want)
	}
	if r.Processes[0].Env["GGML_SYCL_DEVICE"] != "0" {
		t.Errorf("a plain variable changed: %v", r.Processes[0].Env)
	}
	if strings.Contains(r.Error, "hf_secret") || strings.Contains(strings.Join(r.Processes[0].Argv, " "), "hf_secret") {
		t.Errorf("the secret is left in %q or %q", r.Error, r.Processes[0].Argv)
	}
	// Redacting again (as Store.Write does) keeps the fingerprint.
	Redact(r)
	if got := r.Processes[0].Env["HF_TOKEN"]; got != want {
		t.Errorf("after a second Redact: HF_TOKEN = %q, want %q", got, want)
	}
}

// A store with a fingerprinter records the fingerprint, and never the
// token, in the record and its raw files.
func TestStore_WriteFingerprint(t *testing.T) {
	fp, _ := NewFingerprinter([]byte("0123456789abcdef0123456789abcdef"))
	s := Open(t.TempDir())
	s.Fingerprinter = fp
	r := testRun("20260508T032753Z-3f9a", "minimax-m27-b70/baseline", t0, 13.8745, 14.4737, 14.529)
	r.Processes[1].Env["HF_TOKEN"] = "hf_abcdefghijklmnop"
	path, err := s.Write(r, map[string][]byte{"stderr": []byte("token hf_abcdefghijklmnop\n")})
	if err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	raw, _ := os.ReadFile(filepath.Join(filepath.Dir(path), "20260508T032753Z-3f9a", "stderr"))
	if strings.Contains(string(data)+string(raw), "hf_abcdefghijklmnop") {
		t.Errorf("the token reached the record or its raw files:\n%s\n%s", data, raw)
	}
	if want := fp.Redacted("hf_abcdefghijklmnop"); !strings.Contains(string(data), `"HF_TOKEN": "`+want+`"`) {
		t.Errorf("the record does not hold the fingerprint %s:\n%s", want, data)
	}
}
