package npmtest

import (
	"encoding/json"
	"net/http"
	"testing"
)

func TestRegistry_packument(t *testing.T) {
	r := New(Config{Packages: map[string]map[string]string{
		"@node-llama-cpp/linux-x64": {"3.10.0": "", "3.9.0": "sha512-given"},
	}})
	defer r.Close()
	// npm asks for a scoped package with its slash escaped.
	resp, err := http.Get(r.URL + "/@node-llama-cpp%2flinux-x64")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var doc struct {
		Name     string            `json:"name"`
		DistTags map[string]string `json:"dist-tags"`
		Versions map[string]struct {
			Version string `json:"version"`
			Dist    struct {
				Integrity string `json:"integrity"`
				Tarball   string `json:"tarball"`
			} `json:"dist"`
		} `json:"versions"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	if doc.Name != "@node-llama-cpp/linux-x64" || doc.DistTags["latest"] != "3.10.0" {
		t.Errorf("got name %q, latest %q; want the scoped name and 3.10.0 (semver order, not string order)", doc.Name, doc.DistTags["latest"])
	}
	if got := doc.Versions["3.9.0"].Dist.Integrity; got != "sha512-given" {
		t.Errorf("3.9.0 integrity = %q, want the configured one", got)
	}
	if got := doc.Versions["3.10.0"].Dist.Integrity; got != Integrity("@node-llama-cpp/linux-x64", "3.10.0") {
		t.Errorf("3.10.0 integrity = %q, want the derived one", got)
	}
	if nf, err := http.Get(r.URL + "/left-pad"); err != nil || nf.StatusCode != http.StatusNotFound {
		t.Errorf("unknown package: %v, %v; want 404", nf, err)
	}
}
