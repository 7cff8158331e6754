package archive

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// testRegistry is the real registry scripts/ci-registry.sh starts
// (RIGOR_TEST_REGISTRY, with its test user): the test is skipped without
// one, and fails without one under CI=true.
func testRegistry(t *testing.T) (host, user, password string) {
	t.Helper()
	host = os.Getenv("RIGOR_TEST_REGISTRY")
	if host == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true but RIGOR_TEST_REGISTRY is not set: .ci/run starts the registry with scripts/ci-registry.sh")
		}
		t.Skip("no test registry (scripts/ci-registry.sh start; eval $(scripts/ci-registry.sh env))")
	}
	return host, os.Getenv("RIGOR_TEST_REGISTRY_USER"), os.Getenv("RIGOR_TEST_REGISTRY_PASSWORD")
}

// dockerConfig writes a config.json with basic-auth credentials for host.
func dockerConfig(t *testing.T, host, user, password string) string {
	p := filepath.Join(t.TempDir(), "config.json")
	auth := base64.StdEncoding.EncodeToString([]byte(user + ":" + password))
	if err := os.WriteFile(p, []byte(fmt.Sprintf(`{"auths": {%q: {"auth": %q}}}`, host, auth)), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func randomRepo(t *testing.T) string {
	b := make([]byte, 6)
	rand.Read(b)
	return "rigor-test/" + strings.ToLower(t.Name()) + "-" + hex.EncodeToString(b)
}

func randomFile(t *testing.T, n int) (path, sha string) {
	b := make([]byte, n)
	rand.Read(b)
	path = filepath.Join(t.TempDir(), "blob")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return path, hex.EncodeToString(sum[:])
}

func open(t *testing.T, host, repo, config string) *Archive {
	addr, err := ParseAddress(Scheme + host + "/" + repo)
	if err != nil {
		t.Fatal(err)
	}
	a, err := Open(addr, Options{DockerConfig: config})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestParseAddress(t *testing.T) {
	for _, tc := range []struct{ in, want, err string }{
		{"oci://127.0.0.1:5000/lab/rigor", "oci://127.0.0.1:5000/lab/rigor", ""},
		{"oci://ghcr.io/lab/rigor/", "oci://ghcr.io/lab/rigor", ""},
		{"https://ghcr.io/lab", "", "not an oci:// address"},
		{"oci://ghcr.io", "", "needs a host and a repository"},
		{"oci://user:hunter2@ghcr.io/lab", "", "carries credentials"},
		{"oci://ghcr.io/Lab", "", "not a registry repository"},
	} {
		a, err := ParseAddress(tc.in)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ParseAddress(%q) = %v, want error %q", tc.in, err, tc.err)
			}
			if err != nil && strings.Contains(err.Error(), "hunter2") {
				t.Errorf("ParseAddress(%q): error shows the password: %v", tc.in, err)
			}
			continue
		}
		if err != nil || a.String() != tc.want {
			t.Errorf("ParseAddress(%q) = %v, %v; want %s", tc.in, a, err, tc.want)
		}
	}
	if a, _ := ParseAddress("oci://localhost:5000/x"); !a.Loopback() {
		t.Error("localhost is loopback")
	}
	if a, _ := ParseAddress("oci://ghcr.io/x"); a.Loopback() {
		t.Error("ghcr.io is not loopback")
	}
}

// A blob pushed once is not sent again; pulled, it is the same bytes; an
// artifact round-trips.
func TestPushPull(t *testing.T) {
	host, user, pw := testRegistry(t)
	a := open(t, host, randomRepo(t), dockerConfig(t, host, user, pw))
	ctx := context.Background()
	path, sha := randomFile(t, 3<<20+17)
	sent, err := a.PushFile(ctx, "blob", path, MediaTypeFile, sha, 3<<20+17, nil)
	if err != nil || !sent {
		t.Fatalf("first push: sent %v, %v", sent, err)
	}
	sent, err = a.PushFile(ctx, "blob", path, MediaTypeFile, sha, 3<<20+17, nil)
	if err != nil || sent {
		t.Fatalf("second push: sent %v, %v; want not sent", sent, err)
	}
	art := Artifact{Tag: "model-" + sha, ConfigType: MediaTypeModelConfig, Config: []byte(`{"config":{"format":"gguf"}}`),
		Layers: []ocispec.Descriptor{Layer(MediaTypeGGUF, "m.gguf", sha, 3<<20+17)}}
	if err := a.PushArtifact(ctx, art); err != nil {
		t.Fatal(err)
	}
	got, err := a.FetchArtifact(ctx, art.Tag)
	if err != nil {
		t.Fatal(err)
	}
	if string(got.Config) != string(art.Config) || len(got.Layers) != 1 || LayerSHA256(got.Layers[0]) != sha || LayerPath(got.Layers[0]) != "m.gguf" {
		t.Fatalf("fetched artifact %+v", got)
	}
	dest := filepath.Join(t.TempDir(), "out")
	if err := a.FetchFile(ctx, "blob", sha, 3<<20+17, dest, 0o644, nil); err != nil {
		t.Fatal(err)
	}
	want, _ := os.ReadFile(path)
	if b, _ := os.ReadFile(dest); !bytes.Equal(b, want) {
		t.Fatal("pulled bytes differ")
	}
	if _, err := a.FetchArtifact(ctx, "model-nothere"); !errors.Is(err, ErrNotArchived) {
		t.Fatalf("unknown tag: %v, want ErrNotArchived", err)
	}
}

// A local file that does not hash to the lock's sha256 is not archived.
func TestPushChangedFile(t *testing.T) {
	host, user, pw := testRegistry(t)
	a := open(t, host, randomRepo(t), dockerConfig(t, host, user, pw))
	path, _ := randomFile(t, 1000)
	_, other := randomFile(t, 1000)
	_, err := a.PushFile(context.Background(), "model file m.gguf", path, MediaTypeFile, other, 1000, nil)
	var ce *ChangedError
	if !errors.As(err, &ce) || ce.Pulled || !strings.Contains(err.Error(), "model file m.gguf") {
		t.Fatalf("push of a changed file: %v, want a ChangedError naming it", err)
	}
}

// A blob whose bytes the registry serves changed (a proxy in front of the
// real registry flips a byte) is refused, naming the artifact, and leaves
// no file behind.
func TestFetchTampered(t *testing.T) {
	host, user, pw := testRegistry(t)
	repo := randomRepo(t)
	cfg := dockerConfig(t, host, user, pw)
	a := open(t, host, repo, cfg)
	ctx := context.Background()
	path, sha := randomFile(t, 100000)
	if _, err := a.PushFile(ctx, "blob", path, MediaTypeFile, sha, 100000, nil); err != nil {
		t.Fatal(err)
	}
	target, _ := url.Parse("http://" + host)
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.ModifyResponse = func(r *http.Response) error {
		if r.Request.Method == http.MethodGet && strings.Contains(r.Request.URL.Path, "/blobs/") && r.StatusCode == 200 {
			b, _ := io.ReadAll(r.Body)
			r.Body.Close()
			b[len(b)/2] ^= 0xff
			r.Body = io.NopCloser(bytes.NewReader(b))
		}
		return nil
	}
	srv := httptest.NewServer(proxy)
	defer srv.Close()
	phost := strings.TrimPrefix(srv.URL, "http://")
	tampered := open(t, phost, repo, dockerConfig(t, phost, user, pw))
	dest := filepath.Join(t.TempDir(), "out")
	err := tampered.FetchFile(ctx, "model file m.gguf (model-"+sha[:12]+")", sha, 100000, dest, 0o644, nil)
	var ce *ChangedError
	if !errors.As(err, &ce) || !ce.Pulled || !strings.Contains(err.Error(), "model file m.gguf") || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("tampered fetch: %v, want a ChangedError naming the artifact", err)
	}
	if entries, _ := os.ReadDir(filepath.Dir(dest)); len(entries) != 0 {
		t.Fatalf("a refused blob left %v", entries)
	}
}

// A wrong password and no registry are errors with a hint, and neither
// shows the password.
func TestErrors(t *testing.T) {
	host, user, _ := testRegistry(t)
	ctx := context.Background()
	a := open(t, host, randomRepo(t), dockerConfig(t, host, user, "wrong-password-canary"))
	err := a.Ping(ctx)
	var ae *Error
	if !errors.Is(err, ErrUnauthorized) || !errors.As(err, &ae) || !strings.Contains(ae.Hint(), "docker login") {
		t.Fatalf("wrong password: %v", err)
	}
	if strings.Contains(err.Error(), "canary") {
		t.Fatalf("the error shows the password: %v", err)
	}
	// No credentials: nothing was sent, so nothing was refused; the
	// registry asks for some and the store has none (it said "refused
	// the credentials" before).
	noauth := open(t, host, randomRepo(t), "")
	err = noauth.Ping(ctx)
	if !errors.Is(err, ErrNoCredentials) || errors.Is(err, ErrUnauthorized) || strings.Contains(err.Error(), "refused") ||
		!strings.Contains(err.Error(), "the registry asks for credentials and the docker credential store has none for "+host) ||
		!errors.As(err, &ae) || !strings.Contains(ae.Hint(), "docker login "+host) {
		t.Fatalf("no credentials: %v", err)
	}
	// A credential store without an entry for this registry: the same.
	other := open(t, host, randomRepo(t), dockerConfig(t, "other.example:5000", user, "canary-other"))
	if err := other.Ping(ctx); !errors.Is(err, ErrNoCredentials) || strings.Contains(err.Error(), "canary") {
		t.Fatalf("a store without this registry: %v", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()
	gone := open(t, closed, "x/y", "")
	if err := gone.Ping(ctx); !errors.Is(err, ErrUnreachable) {
		t.Fatalf("no registry: %v", err)
	}
}

// A tag is a name: the registry may hold other bytes under a model file's
// tag (another tool pushed there, or a repository shared by mistake).
// check must not call that archived, pull must refuse it naming both
// sha256s, and push must write the lock's artifact over it.
func TestModelTagOtherBytes(t *testing.T) {
	host, user, pw := testRegistry(t)
	a := open(t, host, randomRepo(t), dockerConfig(t, host, user, pw))
	ctx := context.Background()
	pathA, shaA := randomFile(t, 100000)
	pathB, shaB := randomFile(t, 100000)
	if _, err := a.PushModelFile(ctx, "a.gguf", pathA, shaA, 100000, "llama", nil); err != nil {
		t.Fatal(err)
	}
	// B's tag names an artifact whose layer is A's blob.
	art := Artifact{Tag: ModelTag(shaB), ConfigType: MediaTypeModelConfig, Config: []byte("{}"),
		Layers: []ocispec.Descriptor{Layer(MediaTypeGGUF, "b.gguf", shaA, 100000)}}
	if err := a.PushArtifact(ctx, art); err != nil {
		t.Fatal(err)
	}
	held, differs, err := a.ModelHas(ctx, shaB, 100000)
	if err != nil || !held || !strings.Contains(differs, shaA[:12]) || !strings.Contains(differs, shaB[:12]) {
		t.Fatalf("ModelHas of a tag holding other bytes: %v %q %v, want held and differs naming both", held, differs, err)
	}
	if held, differs, err := a.ModelHas(ctx, shaA, 100000); err != nil || !held || differs != "" {
		t.Fatalf("ModelHas of the right artifact: %v %q %v", held, differs, err)
	}
	dest := filepath.Join(t.TempDir(), "b.gguf")
	err = a.FetchModelFile(ctx, "b.gguf", shaB, 100000, dest, nil)
	var ae *Error
	if !errors.As(err, &ae) || !strings.Contains(err.Error(), "refused") || ae.Hint() == "" {
		t.Fatalf("fetch of a tag holding other bytes: %v, want refused with a hint", err)
	}
	if _, err := os.Stat(dest); err == nil {
		t.Fatal("a refused model file was written")
	}
	if sent, err := a.PushModelFile(ctx, "b.gguf", pathB, shaB, 100000, "llama", nil); err != nil || !sent {
		t.Fatalf("push over a tag holding other bytes: sent %v, %v; want sent", sent, err)
	}
	if held, differs, err := a.ModelHas(ctx, shaB, 100000); err != nil || !held || differs != "" {
		t.Fatalf("after the push: %v %q %v", held, differs, err)
	}
	if err := a.FetchModelFile(ctx, "b.gguf", shaB, 100000, dest, nil); err != nil {
		t.Fatal(err)
	}
}
