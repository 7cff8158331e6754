// Command rigor makes LLM-inference benchmarks reproducible.
package main

import (
	"os"

	"github.com/rigorbench/rigor/internal/cli"
)

// version is set with -ldflags "-X main.version=…" from git describe.
var version = "devel"

func main() {
	cli.Version = version
	os.Exit(cli.Main())
}
