package cli

// Exit codes. 0 is success and 1 a failure; the others are documented here
// and in the README.
const (
	// ExitUsage is a command line kong could not parse.
	ExitUsage = 80
	// ExitProblems is rigor vet (or another verb) finding errors in the
	// experiments.
	ExitProblems = 1
)
