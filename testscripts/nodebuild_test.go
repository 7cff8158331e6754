package testscripts

import (
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"
)

func init() {
	// path-without TOOL...: set PATH so that none of the tools is found,
	// everything else still is: each PATH directory that holds one of them
	// is replaced by a directory of symlinks to its other entries.
	scriptCmds["path-without"] = pathWithout
	// [nativebuild]: the scripts that compile node-llama-cpp's bundled
	// llama.cpp (10–30 minutes on 2 cores) run when
	// RIGOR_TEST_NATIVE_BUILD=1; .ci/run sets it for one run of them after
	// `make test`, so that they are not part of its budget.
	scriptConds["nativebuild"] = func() (bool, error) { return os.Getenv("RIGOR_TEST_NATIVE_BUILD") == "1", nil }
	// shared-build-cache: make the script's build cache ($RIGOR_CACHE/builds)
	// a link to one kept between runs (<user cache>/rigor-test/builds), as
	// npm's download cache is: a build is content addressed, so a script
	// that finds its key there uses it, and one compile serves every run.
	scriptCmds["shared-build-cache"] = sharedBuildCache
}

func sharedBuildCache(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: shared-build-cache")
	}
	base, err := os.UserCacheDir()
	ts.Check(err)
	shared := filepath.Join(base, "rigor-test", "builds")
	ts.Check(os.MkdirAll(shared, 0o755))
	cache := ts.Getenv("RIGOR_CACHE")
	ts.Check(os.MkdirAll(cache, 0o755))
	ts.Check(os.Symlink(shared, filepath.Join(cache, "builds")))
}

func pathWithout(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) == 0 {
		ts.Fatalf("usage: path-without TOOL...")
	}
	var dirs []string
	for i, dir := range filepath.SplitList(ts.Getenv("PATH")) {
		var hit bool
		for _, tool := range args {
			if fi, err := os.Stat(filepath.Join(dir, tool)); err == nil && !fi.IsDir() {
				hit = true
			}
		}
		if !hit {
			dirs = append(dirs, dir)
			continue
		}
		shadow := ts.MkAbs(filepath.Join(".path-without", strings.Join(args, "-"), string(rune('a'+i%26))+filepathSafe(dir)))
		ts.Check(os.MkdirAll(shadow, 0o755))
		entries, err := os.ReadDir(dir)
		ts.Check(err)
		for _, e := range entries {
			if slices.Contains(args, e.Name()) {
				continue
			}
			if err := os.Symlink(filepath.Join(dir, e.Name()), filepath.Join(shadow, e.Name())); err != nil && !os.IsExist(err) {
				ts.Fatalf("path-without: %v", err)
			}
		}
		dirs = append(dirs, shadow)
	}
	ts.Setenv("PATH", strings.Join(dirs, string(os.PathListSeparator)))
}

func filepathSafe(s string) string {
	return strings.NewReplacer("/", "_", "\\", "_", ":", "_").Replace(s)
}
