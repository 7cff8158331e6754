package testscripts

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

func init() {
	// [registry]: the OCI registry of scripts/ci-registry.sh answers at
	// RIGOR_TEST_REGISTRY (401 to an anonymous GET /v2/: basic auth on).
	// Under CI=true a registry that is not up fails the script instead of
	// skipping it: .ci/run starts one. setup passes RIGOR_TEST_REGISTRY,
	// its test user and password, and its storage folder to the scripts.
	scriptConds["registry"] = registryUp
}

var registryUp = sync.OnceValues(func() (bool, error) {
	up := false
	if host := os.Getenv("RIGOR_TEST_REGISTRY"); host != "" {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+host+"/v2/", nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			up = resp.StatusCode == http.StatusUnauthorized
		}
	}
	if !up && os.Getenv("CI") == "true" {
		return false, fmt.Errorf("CI=true but no test registry answers at RIGOR_TEST_REGISTRY=%q: .ci/run starts one with scripts/ci-registry.sh start", os.Getenv("RIGOR_TEST_REGISTRY"))
	}
	return up, nil
})

// registryEnv are the variables setup passes to every script.
var registryEnv = []string{"RIGOR_TEST_REGISTRY", "RIGOR_TEST_REGISTRY_USER", "RIGOR_TEST_REGISTRY_PASSWORD", "RIGOR_TEST_REGISTRY_DIR"}

func init() {
	// registry-login [-password P]: write $HOME/.docker/config.json with
	// the test registry's user and password (or P, a wrong one), and set
	// ARCHIVE to a repository of the test registry no other run uses:
	// oci://$RIGOR_TEST_REGISTRY/rigor-test/<script>-<random>.
	scriptCmds["registry-login"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg {
			ts.Fatalf("unsupported: ! registry-login")
		}
		host, user, pw := ts.Getenv("RIGOR_TEST_REGISTRY"), ts.Getenv("RIGOR_TEST_REGISTRY_USER"), ts.Getenv("RIGOR_TEST_REGISTRY_PASSWORD")
		if len(args) == 2 && args[0] == "-password" {
			pw = args[1]
		} else if len(args) != 0 {
			ts.Fatalf("usage: registry-login [-password P]")
		}
		if host == "" {
			ts.Fatalf("RIGOR_TEST_REGISTRY is not set")
		}
		dir := filepath.Join(ts.Getenv("HOME"), ".docker")
		ts.Check(os.MkdirAll(dir, 0o700))
		auth := base64.StdEncoding.EncodeToString([]byte(user + ":" + pw))
		ts.Check(os.WriteFile(filepath.Join(dir, "config.json"), []byte(fmt.Sprintf("{\"auths\": {%q: {\"auth\": %q}}}\n", host, auth)), 0o600))
		if ts.Getenv("ARCHIVE") == "" {
			b := make([]byte, 6)
			rand.Read(b)
			name := strings.ToLower(strings.ReplaceAll(filepath.Base(ts.Getenv("WORK")), "_", "-"))
			ts.Setenv("ARCHIVE", "oci://"+host+"/rigor-test/"+name+"-"+hex.EncodeToString(b))
		}
	}
	// randfile PATH SIZE: a file of SIZE random bytes, content no other
	// run shares (the registry's blobs are shared by every repository).
	scriptCmds["randfile"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if len(args) != 2 {
			ts.Fatalf("usage: randfile PATH SIZE")
		}
		n, err := strconv.Atoi(args[1])
		ts.Check(err)
		b := make([]byte, n)
		rand.Read(b)
		p := ts.MkAbs(args[0])
		ts.Check(os.MkdirAll(filepath.Dir(p), 0o755))
		ts.Check(os.WriteFile(p, b, 0o644))
	}
	// registry-tamper FILE: flip a byte of the registry's stored blob
	// whose sha256 is that of FILE (in RIGOR_TEST_REGISTRY_DIR), as a
	// damaged disk or an attacker with write access would.
	scriptCmds["registry-tamper"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if len(args) != 1 {
			ts.Fatalf("usage: registry-tamper FILE")
		}
		b, err := os.ReadFile(ts.MkAbs(args[0]))
		ts.Check(err)
		sum := sha256.Sum256(b)
		h := hex.EncodeToString(sum[:])
		root := ts.Getenv("RIGOR_TEST_REGISTRY_DIR")
		if root == "" {
			ts.Fatalf("RIGOR_TEST_REGISTRY_DIR is not set")
		}
		p := filepath.Join(root, "docker", "registry", "v2", "blobs", "sha256", h[:2], h, "data")
		data, err := os.ReadFile(p)
		ts.Check(err)
		data[len(data)/2] ^= 0xff
		ts.Check(os.WriteFile(p, data, 0o644))
	}
}
