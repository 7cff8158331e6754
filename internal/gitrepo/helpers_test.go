package gitrepo

import (
	"fmt"
	"os"
	"testing"

	"github.com/rigorbench/rigor/internal/gitrepo/gittest"
)

var (
	gitCLI    = gittest.Git
	newRepo   = gittest.NewRepo
	writeFile = gittest.WriteFile
)

// TestMain runs the package's tests as on a machine with no git identity
// (a fresh Slurm node, a newcomer's first clone): no user or system
// configuration, no GIT_AUTHOR_*/GIT_COMMITTER_*/EMAIL, and git told not
// to guess one from the host name (user.useConfigOnly), so that code which
// leaves the identity to git fails here as it would there. gittest.Git
// still sets a fixed identity for the tests' own set-up commits.
func TestMain(m *testing.M) {
	home, err := os.MkdirTemp("", "gitrepo-home-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for _, k := range []string{"GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "EMAIL", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM"} {
		os.Unsetenv(k)
	}
	os.Setenv("HOME", home)
	os.Setenv("XDG_CONFIG_HOME", home)
	os.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	os.Setenv("GIT_CONFIG_COUNT", "1")
	os.Setenv("GIT_CONFIG_KEY_0", "user.useConfigOnly")
	os.Setenv("GIT_CONFIG_VALUE_0", "true")
	code := m.Run()
	os.RemoveAll(home)
	os.Exit(code)
}
