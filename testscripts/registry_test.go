package testscripts

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"sync"
	"time"
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
