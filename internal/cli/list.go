package cli

import (
	"fmt"
	"strings"
	"text/tabwriter"
)

type listCmd struct {
	Patterns []string `arg:"" optional:"" name:"pattern" help:"Experiment ids, packages or globs (default: all)."`
	JSON     bool     `help:"Print JSON."`
}

func (listCmd) Help() string {
	return `Lists each experiment with its engine and, for sweeps, every point.
Experiments with errors are marked; 'rigor vet' explains them.

Examples:
  rigor list
  rigor list example --json`
}

type listPoint struct {
	ID    string         `json:"id"`
	Swept map[string]any `json:"swept,omitempty"`
}

type listEntry struct {
	ID          string      `json:"id"`
	Package     string      `json:"package"`
	Name        string      `json:"name"`
	Family      string      `json:"family,omitempty"`
	Description string      `json:"description,omitempty"`
	Tags        []string    `json:"tags,omitempty"`
	Broken      bool        `json:"broken,omitempty"`
	Points      []listPoint `json:"points"`
}

func (c *listCmd) Run(e *env) error {
	set, err := e.loadSet(c.Patterns)
	if err != nil {
		return err
	}
	var entries []listEntry
	for _, x := range set.Experiments {
		le := listEntry{ID: x.ID, Package: x.Package, Name: x.Name, Family: x.Spec.Engine.Family,
			Description: x.Spec.Description, Tags: x.Spec.Tags, Broken: x.Broken, Points: []listPoint{}}
		for _, p := range x.Points {
			le.Points = append(le.Points, listPoint{ID: p.ID, Swept: p.SweptMap()})
		}
		entries = append(entries, le)
	}
	if c.JSON {
		if entries == nil {
			entries = []listEntry{}
		}
		if err := e.printJSON(entries); err != nil {
			return err
		}
	} else {
		tw := tabwriter.NewWriter(e.stdout, 2, 8, 2, ' ', 0)
		for _, le := range entries {
			status := le.Family
			if le.Broken {
				status = "ERRORS (rigor vet)"
			}
			desc := le.Description
			if len(le.Points) > 1 {
				desc = strings.TrimSpace(fmt.Sprintf("%d points. %s", len(le.Points), desc))
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\n", le.ID, status, oneLine(desc, 70))
			if len(le.Points) > 1 {
				for _, p := range le.Points {
					fmt.Fprintf(tw, "  %s\t\t\n", p.ID)
				}
			}
		}
		tw.Flush()
	}
	if n := len(set.Problems); n > 0 {
		fmt.Fprintf(e.stderr, "rigor: warning: %d %s in the experiments; 'rigor vet' lists them\n", n, plural(n, "error", "errors"))
	}
	return nil
}

func oneLine(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > max {
		return s[:max-1] + "…"
	}
	return s
}
