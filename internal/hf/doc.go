// Package hf is rigor's client for the Hugging Face hub: it pins a model
// repo to an exact commit and set of file hashes, and later downloads
// exactly those bytes into the hub's cache layout so that other tools
// (huggingface_hub, llama.cpp) find the same files.
//
// The pipeline, as rigor lock and rigor pull use it:
//
//  1. [FromEnv] builds a [Client] from HF_ENDPOINT, HF_TOKEN (or
//     HF_TOKEN_PATH, $HF_HOME/token) and HF_HUB_OFFLINE, as the hub's own
//     tools read them.
//  2. [Client.ResolveRevision] turns a branch, tag or commit into the
//     40-hex commit (GET /api/models/{repo}/revision/{rev}).
//  3. [Client.ListFiles] lists every file at that commit with its size,
//     git blob id and, for LFS files, sha256 (the recursive tree endpoint,
//     following Link-header pagination).
//  4. [MatchFiles] keeps the files that the experiment's globs name.
//  5. [Client.Download] fetches those files at the locked commit into
//     blobs/, verifies their hashes while streaming, and links them from
//     snapshots/<commit>/ ([CacheDir], [RepoDir], [SnapshotPath]).
//
// Every request carries a deadline, transient failures (429, 5xx, dropped
// connections) are retried with a bounded backoff that honours Retry-After,
// and hub errors arrive as [*HubError] with a [HubError.Hint] for the user.
// The token never appears in an error string.
//
// The package hubtest provides a stand-in hub for tests.
package hf
