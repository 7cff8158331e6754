package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/go-git/go-git/v5"

	"github.com/rigorbench/rigor/schema"
)

type initCmd struct {
	Dir    string `arg:"" optional:"" default:"." help:"Directory of the new module (created if missing)."`
	Module string `help:"CUE module path (default: example.com/<directory name>)."`
}

func (initCmd) Help() string {
	return `Creates cue.mod/ with the rigor schema, experiments/example/ with one
experiment that runs anywhere (node-llama-cpp on a synthetic model), a
.gitignore, and a git repository unless the directory is inside one already
(the new files are its first commit, so records never precede the
experiments they measure). The new module passes 'rigor vet' and the stock 'cue vet -c ./...'.

Examples:
  rigor init my-benchmarks
  rigor init --module github.com/me/bench .`
}

var moduleNameClean = regexp.MustCompile(`[^a-z0-9._-]+`)

const exampleExperiment = `package example

import "github.com/rigorbench/rigor/schema"

// smoke benchmarks a tiny synthetic llama model on the CPU with
// node-llama-cpp: no GPU, no download. Copy it to start your own.
smoke: schema.#Experiment & {
	description: "Tiny synthetic llama on node-llama-cpp, CPU only."
	model: synthetic: {layers: 2, embd: 256, heads: 4, ff: 512, vocab: 512, type: "f16", seed: 1}
	engine: {
		family: "node-llama-cpp"
		source: npm: "3.22.1"
	}
	bench: {p: 32, n: 16, r: *5 | int}
	flags: {t: 1, ngl: 0}
	quality: kvCache: "f16"
	tags: ["example"]
}

// smokeLong derives from smoke: it may change r, which smoke gives only as
// a default (*5 | int). Changing a concrete value (t: 1) would be an error.
smokeLong: smoke & {bench: r: 10}

// smokeBatch sweeps the batch size: one run per point, each point with an
// id of its own (example/smokeBatch[b=16]).
smokeBatch: smoke & {bench: r: 3, sweep: flags: b: [16, 32]}
`

const gitignore = `# rigor: raw engine output too large to commit can be kept out here.
*.tmp
/.rigor/
# rigor report -o site: the HTML report, made again from results/ at will.
/site/
`

func (c *initCmd) Run(e *env) error {
	dir := c.Dir
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(e.wd, dir)
	}
	if _, err := os.Stat(filepath.Join(dir, "cue.mod")); err == nil {
		return withHint(fmt.Errorf("%s is already a module: cue.mod exists", c.Dir), "rigor init does not overwrite; use 'rigor vet' to check the module")
	}
	mod := c.Module
	if mod == "" {
		name := moduleNameClean.ReplaceAllString(strings.ToLower(filepath.Base(dir)), "-")
		name = strings.Trim(name, "-.")
		if name == "" {
			name = "bench"
		}
		mod = "example.com/" + name
	}
	if !strings.Contains(mod, "@") {
		mod += "@v0"
	}
	files := map[string]string{
		"cue.mod/module.cue":              fmt.Sprintf("module: %q\nlanguage: version: \"v0.17.0\"\n", mod),
		"experiments/example/example.cue": exampleExperiment,
		".gitignore":                      gitignore,
		"lockfiles/.keep":                 "",
		"results/.keep":                   "",
	}
	schemaFiles, err := schema.Files()
	if err != nil {
		return err
	}
	for _, f := range schemaFiles {
		files["cue.mod/pkg/"+schema.ImportPath+"/"+f.Name] = string(f.Src)
	}
	for name := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if _, err := os.Stat(p); err == nil {
			if name == ".gitignore" {
				continue
			}
			return fmt.Errorf("%s exists: rigor init does not overwrite files", p)
		}
	}
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if _, err := os.Stat(p); err == nil {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			return err
		}
	}
	gitMsg := ""
	if _, err := git.PlainOpenWithOptions(dir, &git.PlainOpenOptions{DetectDotGit: true}); errors.Is(err, git.ErrRepositoryNotExists) {
		if _, err := git.PlainInit(dir, false); err != nil {
			return fmt.Errorf("creating a git repository in %s: %w", dir, err)
		}
		// The module is the first commit, so that records never precede
		// the experiments they measure (a run's commit needs a parent).
		paths := make([]string, 0, len(files))
		for name := range files {
			paths = append(paths, filepath.Join(dir, filepath.FromSlash(name)))
		}
		sort.Strings(paths)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		_, err := e.store(dir).Commit(ctx, paths, fmt.Sprintf("rigor init: module %s", mod))
		cancel()
		if err != nil {
			return withHint(fmt.Errorf("committing the new module: %w", err), "the files are written; commit them yourself with git")
		}
		gitMsg = " and a git repository with it as the first commit"
	}
	fmt.Fprintf(e.stderr, "rigor: created module %s in %s%s\n", mod, c.Dir, gitMsg)
	fmt.Fprintf(e.stderr, "rigor: next: cd %s && rigor vet && rigor show example/smoke\n", c.Dir)
	return nil
}
