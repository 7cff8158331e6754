package lock

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/rigorbench/rigor/internal/gguf"
	"github.com/rigorbench/rigor/internal/hf"
	"github.com/rigorbench/rigor/internal/hf/hubtest"
	"github.com/rigorbench/rigor/internal/spec"
)

// The lock of a hub model is the same whether or not its files are in the
// local cache: GGUF facts come from the hub's bytes, and every file,
// config.json included, has a sha256. Offline, from the cache, it is the
// same entry again.
func TestResolver_hubFactsIndependentOfCache(t *testing.T) {
	var model bytes.Buffer
	ss := gguf.SyntheticSpec{Arch: "llama", Layers: 1, Embd: 32, Heads: 2, KVHeads: 2, FF: 64, Vocab: 259, Ctx: 64, Type: "f16", Seed: 1}
	if err := gguf.WriteSynthetic(&model, ss); err != nil {
		t.Fatal(err)
	}
	hub := hubtest.New()
	defer hub.Close()
	commit := hub.AddRepo("org/t-GGUF", hubtest.RepoOptions{Files: []hubtest.File{
		{Path: "t-F16.gguf", Data: model.Bytes(), LFS: true},
		{Path: "config.json", Data: []byte(`{"n_layer": 1}`)},
		{Path: "tokenizer.json", Data: []byte(`{"model": {}}`)},
	}})
	x := experiment("p/x", spec.Spec{Model: spec.Model{HF: "org/t-GGUF", Files: []string{"*.gguf", "*.json"}},
		Engine: spec.Engine{Family: "vllm", Source: spec.Source{Path: "vllm"}}})
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "vllm"), []byte("#!/bin/sh\n"), 0o755)
	lockWith := func(hfCache string, offline bool) ModelLock {
		t.Helper()
		r := NewResolver(Options{Root: root, Cache: t.TempDir(), HFCache: hfCache, Offline: offline,
			HF: hf.NewClient(hf.ClientOptions{Endpoint: hub.URL, MaxRetries: -1, Offline: offline})})
		e, err := r.Resolve(context.Background(), x, nil)
		if err != nil {
			t.Fatal(err)
		}
		return e.Model
	}
	empty := lockWith(t.TempDir(), false)
	for _, f := range empty.Files {
		if len(f.SHA256) != 64 {
			t.Errorf("%s has no sha256: %+v", f.Path, f)
		}
	}
	facts := empty.Files[1].GGUF
	if empty.Files[1].Path != "t-F16.gguf" || facts["fileTypeName"] != "MOSTLY_F16" {
		t.Errorf("GGUF facts of t-F16.gguf from the hub: %v", facts)
	}

	// The same lock with the files in the cache, online and offline.
	cache := t.TempDir()
	var infos []hf.FileInfo
	for _, f := range empty.Files {
		infos = append(infos, hf.FileInfo{Path: f.Path, Size: f.Size, SHA256: f.SHA256, BlobID: f.BlobID, LFS: f.BlobID == ""})
	}
	if err := hf.NewClient(hf.ClientOptions{Endpoint: hub.URL}).Download(context.Background(), "org/t-GGUF", commit, infos, hf.DownloadOptions{CacheDir: cache}); err != nil {
		t.Fatal(err)
	}
	if cached := lockWith(cache, false); !reflect.DeepEqual(cached, empty) {
		t.Errorf("online with the files cached:\n%+v\nwant, as with an empty cache:\n%+v", cached, empty)
	}
	if offline := lockWith(cache, true); !reflect.DeepEqual(offline, empty) {
		t.Errorf("offline from the cache:\n%+v\nwant, as online:\n%+v", offline, empty)
	}
}
