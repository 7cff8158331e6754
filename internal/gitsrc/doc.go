// Package gitsrc pins an engine's git source to a commit and proves that the
// experiment's patches apply to it.
//
// The pipeline, as `rigor lock` and engine builds use it:
//
//  1. [Resolve] turns a ref of a remote (branch, lightweight or annotated tag,
//     full or short commit sha; https URL, local path or file:// URL) into a
//     full 40-hex commit. Branches and tags come from the remote's advertised
//     refs (ls-remote). A short sha cannot be resolved from advertised refs, so
//     it is looked up in a bare mirror of the remote kept in rigor's cache
//     ([CacheDir], [MirrorPath]), fetched with go-git ([EnsureMirror], [Fetch]).
//  2. [CheckPatches] hashes each patch file and proves, in a scratch checkout
//     of the commit made from the mirror, that the patches apply strictly, in
//     order, each on top of the previous ones.
//  3. [Checkout] makes the same tree for a build: the commit, patches applied.
//
// Patches are applied by the real git CLI (`git apply`), never with fuzz: every
// context line of every hunk must match. A hunk may land at an offset from the
// line its header names; at a pinned commit that is deterministic and
// harmless, so it is allowed and reported in [PatchInfo.Offsets]. A patch that
// does not apply is a [*PatchError] naming the patch, the file and the hunk.
//
// A lock resolves, then proves the patches against the mirror:
//
//	res, err := gitsrc.Resolve(ctx, url, ref, opts)
//	mirror, err := gitsrc.EnsureMirror(ctx, url, opts) // fetches the commit
//	infos, err := gitsrc.CheckPatches(ctx, mirror, res.Commit, patches)
//
// and a build later makes its source tree with
// gitsrc.Checkout(ctx, mirror, commit, dir, patches).
//
// Network operations are bounded by [Options.Timeout]; an unreachable host is
// an [*UnreachableError] that names the URL. With [Options.Offline] only the
// cache is used. Concurrent rigor processes share a mirror safely: writers
// (create, fetch) hold an exclusive flock on "<mirror>.lock", readers a
// shared one.
package gitsrc
