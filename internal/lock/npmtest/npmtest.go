// Package npmtest is a stand-in npm registry for tests: an
// [httptest.Server] that answers the registry's packument requests (GET
// /{name}, GET /@scope%2F{name}) with the documents the real registry
// serves, so that the real npm client (`npm view`, as rigor's lock runs
// it) can be pointed at it with npm_config_registry.
//
// A packument lists every published version of a package with its dist
// (tarball URL, integrity, shasum), the dist-tags and the publication
// times. Publishing a version is a new [Config]: restart the stand-in with
// it, as a script does to make "a new version within the range" appear.
package npmtest

import (
	"crypto/sha1"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
	"golang.org/x/mod/semver"
)

// Config describes the registry's packages in JSON:
//
//	{"packages": {"node-llama-cpp": {"3.22.1": "sha512-…", "3.23.0": ""}}}
//
// Each version maps to its dist.integrity; "" derives one from the
// package name and version, as if a tarball of those bytes had been
// published.
type Config struct {
	Packages map[string]map[string]string `json:"packages"`
}

// Registry is a running stand-in registry.
type Registry struct {
	*httptest.Server
	cfg Config

	mu       sync.Mutex
	requests []string
}

// New starts a registry serving cfg.
func New(cfg Config) *Registry {
	r := &Registry{cfg: cfg}
	r.Server = httptest.NewServer(http.HandlerFunc(r.serve))
	return r
}

// Requests returns the paths asked for so far.
func (r *Registry) Requests() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.requests...)
}

// Integrity returns the integrity a version listed with "" gets.
func Integrity(name, version string) string {
	sum := sha512.Sum512([]byte(name + "@" + version))
	return "sha512-" + base64.StdEncoding.EncodeToString(sum[:])
}

func (r *Registry) serve(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	r.requests = append(r.requests, req.URL.EscapedPath())
	r.mu.Unlock()
	if req.Method != http.MethodGet && req.Method != http.MethodHead {
		http.Error(w, `{"error":"method not allowed"}`, http.StatusMethodNotAllowed)
		return
	}
	// npm asks for a scoped package as /@scope%2fname.
	name, err := url.PathUnescape(strings.TrimPrefix(req.URL.EscapedPath(), "/"))
	if err != nil || name == "" {
		http.Error(w, `{"error":"not found"}`, http.StatusNotFound)
		return
	}
	versions, ok := r.cfg.Packages[name]
	if !ok {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"error":"Not found"}`)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-cache")
	json.NewEncoder(w).Encode(r.packument(req, name, versions))
}

// packument builds the full document of a package, in the shape the npm
// registry serves (a subset of its fields: those npm view and npm install
// read).
func (r *Registry) packument(req *http.Request, name string, versions map[string]string) map[string]any {
	vs := make([]string, 0, len(versions))
	for v := range versions {
		vs = append(vs, v)
	}
	sort.Slice(vs, func(i, j int) bool { return semver.Compare("v"+vs[i], "v"+vs[j]) < 0 })
	base := "http://" + req.Host
	times := map[string]string{}
	docs := map[string]any{}
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, v := range vs {
		integrity := versions[v]
		if integrity == "" {
			integrity = Integrity(name, v)
		}
		sha := sha1.Sum([]byte(name + "@" + v))
		short := name[strings.LastIndex(name, "/")+1:]
		docs[v] = map[string]any{
			"name":    name,
			"version": v,
			"dist": map[string]any{
				"integrity": integrity,
				"shasum":    hex.EncodeToString(sha[:]),
				"tarball":   base + "/" + name + "/-/" + short + "-" + v + ".tgz",
			},
		}
		times[v] = t0.Add(time.Duration(i) * 24 * time.Hour).Format(time.RFC3339)
	}
	times["created"] = t0.Format(time.RFC3339)
	times["modified"] = t0.Add(time.Duration(len(vs)) * 24 * time.Hour).Format(time.RFC3339)
	doc := map[string]any{"_id": name, "name": name, "versions": docs, "time": times, "dist-tags": map[string]string{}}
	if len(vs) > 0 {
		doc["dist-tags"] = map[string]string{"latest": vs[len(vs)-1]}
	}
	return doc
}

var (
	runningMu sync.Mutex
	running   = map[*testscript.TestScript]*Registry{}
)

// Cmd is a testscript command that starts a stand-in registry from a JSON
// [Config] file and points npm at it (npm_config_registry; its address
// is also in NPM_REGISTRY_ADDR) for the rest of the script; the registry
// stops when the script ends, or at "fake-npm-registry stop" (so that
// another listener can take its port):
//
//	fake-npm-registry registry.json
//	fake-npm-registry stop
func Cmd(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! fake-npm-registry")
	}
	if len(args) != 1 {
		ts.Fatalf("usage: fake-npm-registry config.json|stop")
	}
	if args[0] == "stop" {
		runningMu.Lock()
		r := running[ts]
		delete(running, ts)
		runningMu.Unlock()
		if r == nil {
			ts.Fatalf("fake-npm-registry stop: no registry running")
		}
		r.Close()
		return
	}
	b, err := os.ReadFile(ts.MkAbs(args[0]))
	ts.Check(err)
	var cfg Config
	if err := json.Unmarshal(b, &cfg); err != nil {
		ts.Fatalf("parsing %s: %v", filepath.Base(args[0]), err)
	}
	r := New(cfg)
	runningMu.Lock()
	running[ts] = r
	runningMu.Unlock()
	ts.Defer(r.Close)
	ts.Setenv("npm_config_registry", r.URL+"/")
	ts.Setenv("NPM_REGISTRY_ADDR", r.Listener.Addr().String())
}
