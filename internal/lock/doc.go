// Package lock pins every input of an experiment (model revision and file
// hashes, engine commit, patches, npm versions, prebuilt binaries) into
// lockfiles, and tells which locks are missing or stale.
//
// The pipeline, as `rigor lock` uses it:
//
//  1. [Read] loads lockfiles/<package>.lock.json, one [File] per experiment
//     package, with a positioned error for a hand-broken file.
//  2. A [Resolver] turns each experiment's requested inputs into an [Entry]:
//     the Hugging Face hub (internal/hf) pins a repo revision to its commit
//     and the files' sizes and sha256; git (internal/gitsrc) pins a ref to a
//     commit and proves the patches apply strictly; local model files,
//     synthetic models and prebuilt binaries are hashed ([Hasher], with a
//     stat-keyed cache so an unchanged file is not read twice); npm engines
//     are pinned to an exact version and integrity by the machine's npm
//     client. An input whose request did not change keeps its pin unless it
//     is named for update, as Nix's flake.lock does.
//  3. [Write] replaces the lockfile atomically (temp file, fsync, rename,
//     fsync of the directory), and writes nothing when the bytes are
//     unchanged.
//  4. [Check] compares the lockfiles with the experiments, without the
//     network: a missing entry, a changed spec, a changed patch, a changed
//     local model file or prebuilt binary makes an experiment [Stale].
//
// # Why JSON
//
// A lockfile is written by a program and read by programs (rigor, jq, CI
// scripts) far more than by people. Go's encoding/json gives byte-identical
// output for identical values: struct fields in a fixed order, map keys
// sorted, two-space indentation and a trailing newline. So locking twice
// with nothing changed rewrites nothing, and a change shows up as a small,
// line-based diff. Every language and tool reads JSON without rigor's CUE
// schema, and the format carries no comments that a rewrite could lose.
//
// The [Entry.Digest] of an entry is the sha256 of its compact canonical
// JSON; run records store it to say exactly which locked inputs they ran
// with. HF_TOKEN is never written to a lockfile.
package lock
