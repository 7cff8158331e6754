package testscripts

import (
	"os/exec"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"
)

func init() {
	// gitsha NAME DIR REV: set NAME to the full commit of REV in the git
	// repository DIR and NAME_SHORT to its first 12 digits, as rigor
	// prints commits; scripts then assert exact lines without hard-coding
	// shas that change whenever a fixture does.
	scriptCmds["gitsha"] = gitsha
}

func gitsha(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: gitsha NAME DIR REV")
	}
	cmd := exec.Command("git", "rev-parse", "--verify", args[2]+"^{commit}")
	cmd.Dir = ts.MkAbs(args[1])
	out, err := cmd.Output()
	if err != nil {
		ts.Fatalf("git rev-parse %s in %s: %v", args[2], args[1], err)
	}
	sha := strings.TrimSpace(string(out))
	ts.Setenv(args[0], sha)
	ts.Setenv(args[0]+"_SHORT", sha[:12])
}
