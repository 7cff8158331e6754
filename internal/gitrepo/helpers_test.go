package gitrepo

import "github.com/rigorbench/rigor/internal/gitrepo/gittest"

var (
	gitCLI    = gittest.Git
	newRepo   = gittest.NewRepo
	writeFile = gittest.WriteFile
)
