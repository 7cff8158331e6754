package cli

import (
	"io"
	"strings"

	"github.com/alecthomas/kong"
)

// Example is one line of a command's help under "Examples:".
type Example struct {
	// Command is the help's command path ("cache list").
	Command string
	// Line is the example as a user would type it, without its note.
	Line string
	// Note is what follows "  # " on the line: why the example cannot run
	// anywhere (`needs Slurm: …`), or "".
	Note string
}

// Examples returns the example lines of every visible command's help, in
// the order of the command tree, each command's in the order written.
// Tests run them (testscripts/help_examples_test.go) and parse them
// (TestHelpExamples).
func Examples() ([]Example, error) {
	var c cli
	p, err := kong.New(&c, kong.Name("rigor"), kong.Writers(io.Discard, io.Discard))
	if err != nil {
		return nil, err
	}
	var out []Example
	var walk func(n *kong.Node)
	walk = func(n *kong.Node) {
		for _, ch := range n.Children {
			if ch.Type != kong.CommandNode || ch.Hidden {
				continue
			}
			for _, line := range examplesIn(ch.Detail) {
				ex := Example{Command: ch.Path(), Line: line}
				if cmd, note, ok := strings.Cut(line, "  # "); ok {
					ex.Line, ex.Note = strings.TrimSpace(cmd), strings.TrimSpace(note)
				}
				out = append(out, ex)
			}
			walk(ch)
		}
	}
	walk(p.Model.Node)
	return out, nil
}

// examplesIn returns the example command lines of a help text: the
// indented lines after "Examples:", up to the first line that is not.
func examplesIn(help string) []string {
	_, after, ok := strings.Cut(help, "Examples:\n")
	if !ok {
		return nil
	}
	var ex []string
	for _, line := range strings.Split(after, "\n") {
		if !strings.HasPrefix(line, "  ") {
			break
		}
		ex = append(ex, strings.TrimSpace(line))
	}
	return ex
}
