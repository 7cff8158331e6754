package gitsrc

import (
	"context"
	"strings"
	"testing"
)

// BenchmarkResolve_shortSHA resolves a 7-hex short sha in a mirror of a
// repository of 5,000 commits: from the mirror alone (offline), and online,
// which also lists the remote's refs and fetches (nothing new) first.
func BenchmarkResolve_shortSHA(b *testing.B) {
	dir := fastImportRepo(b, 5000)
	shas := strings.Fields(gitT(b, dir, "rev-list", "--all"))
	want := shas[len(shas)/2]
	ref := want[:7]
	opts := testOptions(b)
	ctx := context.Background()
	if _, err := EnsureMirror(ctx, dir, opts); err != nil {
		b.Fatal(err)
	}
	for _, mode := range []struct {
		name    string
		offline bool
	}{{"offline", true}, {"online", false}} {
		b.Run(mode.name, func(b *testing.B) {
			o := opts
			o.Offline = mode.offline
			for b.Loop() {
				got, err := Resolve(ctx, dir, ref, o)
				if err != nil || got.Commit != want {
					b.Fatalf("Resolve(%q) = %+v, %v, want %s", ref, got, err, want)
				}
			}
		})
	}
}
