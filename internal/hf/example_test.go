package hf_test

import (
	"context"
	"fmt"
	"os"

	"github.com/rigorbench/rigor/internal/hf"
	"github.com/rigorbench/rigor/internal/hf/hubtest"
)

// Example locks a model (commit, then files by glob) and pulls it into a
// cache, as rigor lock and rigor pull do.
func Example() {
	hub := hubtest.New()
	defer hub.Close()
	hub.AddRepo("unsloth/Tiny-GGUF", hubtest.RepoOptions{Files: []hubtest.File{
		{Path: "README.md", Data: []byte("# Tiny\n")},
		{Path: "Q4_0/Tiny-Q4_0-00001-of-00002.gguf", Data: []byte("GGUF shard one"), LFS: true},
		{Path: "Q4_0/Tiny-Q4_0-00002-of-00002.gguf", Data: []byte("GGUF shard two"), LFS: true},
	}})

	ctx := context.Background()
	c := hf.NewClient(hf.ClientOptions{Endpoint: hub.URL})
	commit, err := c.ResolveRevision(ctx, "unsloth/Tiny-GGUF", "main")
	if err != nil {
		fmt.Println(err)
		return
	}
	all, err := c.ListFiles(ctx, "unsloth/Tiny-GGUF", commit)
	if err != nil {
		fmt.Println(err)
		return
	}
	files, err := hf.MatchFiles(all, []string{"Q4_0/*-of-00002.gguf"})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, f := range files {
		fmt.Printf("%s %d %.12s\n", f.Path, f.Size, f.SHA256)
	}

	cache, _ := os.MkdirTemp("", "hfcache")
	defer os.RemoveAll(cache)
	if err := c.Download(ctx, "unsloth/Tiny-GGUF", commit, files, hf.DownloadOptions{CacheDir: cache, Revision: "main"}); err != nil {
		fmt.Println(err)
		return
	}
	link := hf.SnapshotPath(cache, "unsloth/Tiny-GGUF", commit, files[0].Path)
	target, _ := os.Readlink(link)
	data, _ := os.ReadFile(link)
	fmt.Printf("%.24s… %q\n", target, data)
	// Output:
	// Q4_0/Tiny-Q4_0-00001-of-00002.gguf 14 1ca07b6e93bd
	// Q4_0/Tiny-Q4_0-00002-of-00002.gguf 14 832c7807dddf
	// ../../../blobs/1ca07b6e9… "GGUF shard one"
}
