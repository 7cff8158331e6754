// Package cli is rigor's command tree: one file per verb. It is the only
// package that prints or decides exit codes; the library packages return
// values and errors.
package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"

	"github.com/alecthomas/kong"
	"golang.org/x/term"

	"github.com/rigorbench/rigor/internal/redact"
	"github.com/rigorbench/rigor/internal/spec"
)

// Version is set by main (from -ldflags) before Main runs.
var Version = "devel"

type globals struct {
	Chdir string `short:"C" name:"chdir" placeholder:"DIR" help:"Run as if started in DIR." env:"RIGOR_CHDIR"`
	// The configuration rigor reads from the environment, shown in --help
	// (cli/config.go reads the rest and passes it down as values).
	CacheDir string `name:"cache" placeholder:"DIR" help:"rigor's cache: builds, git mirrors, engine installs, synthetic models, file hashes (default: $XDG_CACHE_HOME/rigor, else ~/.cache/rigor)." env:"RIGOR_CACHE"`
	RigFile  string `name:"rig-file" placeholder:"FILE" help:"A JSON description of the machine that replaces detection (for tests and for describing another machine)." env:"RIGOR_RIG_FILE"`
	Archive  string `name:"archive" placeholder:"URL" help:"The OCI archive of locked inputs, oci://host[:port]/repository: 'rigor archive' pushes to it, build and run take builds and installs from it before building, lock takes pins from it when upstream is gone (credentials: docker login)." env:"RIGOR_ARCHIVE"`
}

type cli struct {
	globals

	Version kong.VersionFlag `help:"Print the version and exit."`

	// The verbs in the order of the workflow: write, lock, run, record,
	// compare. Each is defined in its own file.
	Init    initCmd    `cmd:"" help:"Create a new rigor module with the schema and an example experiment."`
	Vet     vetCmd     `cmd:"" help:"Check experiments and report every error with its position."`
	List    listCmd    `cmd:"" help:"List experiments and their sweep points."`
	Show    showCmd    `cmd:"" help:"Show an experiment's effective configuration and the exact plan a run would execute."`
	Lock    lockCmd    `cmd:"" help:"Pin every input of experiments (model commit and hashes, engine commit, patches) in lockfiles/."`
	Rig     rigCmd     `cmd:"" help:"Print what this machine is (GPUs, CPU, RAM, OS, compilers), or check it against an experiment's #requires."`
	Build   buildCmd   `cmd:"" help:"Build a locked experiment's engine into the build cache without running it."`
	Pull    pullCmd    `cmd:"" help:"Download a locked experiment's model files at the locked commit into the Hugging Face cache."`
	Run     runCmd     `cmd:"" help:"Run a locked experiment exactly as locked and record every run in git."`
	Results resultsCmd `cmd:"" help:"List recorded runs, newest last; sync the records Slurm jobs pushed."`
	Jobs    jobsCmd    `cmd:"" help:"List or cancel the Slurm jobs submitted with 'rigor run --slurm'."`
	Diff    diffCmd    `cmd:"" help:"Compare two experiments, points or runs: configuration diff and metrics with significance."`
	Log     logCmd     `cmd:"" help:"Show an experiment's runs over time, with drift markers and a tokSOut chart."`
	Bisect  bisectCmd  `cmd:"" help:"Find the engine commit that changed a figure: a statistical, resumable bisect of the engine's git history."`
	Report  reportCmd  `cmd:"" help:"Write a static HTML report with plots of the recorded runs: history, sweeps, diffs."`
	Import  importCmd  `cmd:"" help:"Import results kept in other formats (seed summaries, LocalMaxxing, local-ai-registry, llama-bench JSON) as run records."`
	Export  exportCmd  `cmd:"" help:"Export runs as a LocalMaxxing speed test, a local-ai-registry record, or a markdown, CSV or JSON table."`
	Cache   cacheCmd   `cmd:"" help:"List or prune the engine build cache."`
	Archive archiveCmd `cmd:"" help:"Push every locked input to an OCI registry, pull it back, or check what is archived."`

	// Loadgen is the bench process of serve experiments.
	Loadgen loadgenCmd `cmd:"" hidden:"" help:"Measure an OpenAI-compatible server under load (the bench process of serve experiments)."`
	// Logprobs is the quality process of vLLM and endpoint experiments.
	Logprobs logprobsCmd `cmd:"" hidden:"" help:"Measure quality from an OpenAI-compatible server's prompt log-probabilities (the quality process of vLLM and endpoint experiments)."`
}

// env is what commands get: writers, the working directory.
type env struct {
	stdout, stderr io.Writer
	// stdin is where rigor reads an answer from (run's confirmation);
	// isTerminal, when set, replaces the check that it can ask (tests).
	stdin      io.Reader
	isTerminal func() bool
	wd         string
	config     *config
	// secrets are the secret values rigor knows ([knownSecrets]); the
	// output writers remove them, and so does every record written.
	secrets *redact.Scrubber
	// warnedDetached is set once the detached HEAD warning was printed.
	warnedDetached bool
}

// Main runs rigor with os.Args and returns the exit code.
func Main() int {
	return Run(os.Args[1:], os.Stdout, os.Stderr)
}

// Run runs rigor with args and returns the exit code.
//
// Everything rigor prints goes through one redaction ([redact.Writer]):
// errors, hints, progress lines, plans and data. It knows the secrets of
// the process environment (HF_TOKEN's value, a password in HF_ENDPOINT)
// and recognises the rest by shape (URL credentials, bearer strings,
// values of secret-looking names and options).
func Run(args []string, stdout, stderr io.Writer) (code int) {
	secrets := knownSecrets(os.Environ(), os.Getenv)
	rout, rerr := redact.NewWriter(stdout, secrets), redact.NewWriter(stderr, secrets)
	defer rerr.Flush()
	defer rout.Flush()
	stdout, stderr = rout, rerr
	var c cli
	exited := false
	parser, err := kong.New(&c,
		kong.Name("rigor"),
		kong.Description("rigor makes LLM-inference benchmarks reproducible: write experiments in CUE, lock their inputs, run them, record the results in git, and compare."),
		kong.Vars{"version": "rigor " + Version},
		kong.Writers(stdout, stderr),
		kong.Exit(func(c int) { exited = true; code = c; panic(exitPanic{}) }),
		kong.ConfigureHelp(kong.HelpOptions{Compact: true}),
	)
	if err != nil {
		fmt.Fprintf(stderr, "rigor: error: %v\n", err)
		return 1
	}
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(exitPanic); ok && exited {
				return
			}
			panic(r)
		}
	}()
	kctx, err := parser.Parse(args)
	if err != nil {
		var pe *kong.ParseError
		if errors.As(err, &pe) {
			if m := missingArgs(pe); m != nil {
				printError(stderr, m)
				return ExitUsage
			}
			fmt.Fprintf(stderr, "rigor: error: %v\n", err)
			fmt.Fprintf(stderr, "rigor: hint: run 'rigor %s--help' for usage\n", commandPrefix(pe))
			return ExitUsage
		}
		printError(stderr, err)
		return 1
	}
	wd, err := os.Getwd()
	if err != nil {
		printError(stderr, err)
		return 1
	}
	if c.Chdir != "" {
		if err := os.Chdir(c.Chdir); err != nil {
			printError(stderr, fmt.Errorf("-C: %w", err))
			return 1
		}
		defer os.Chdir(wd)
		wd, _ = os.Getwd()
	}
	e := &env{stdout: stdout, stderr: stderr, stdin: os.Stdin, wd: wd, secrets: secrets}
	cfg := loadConfig()
	if c.CacheDir != "" {
		cfg.Cache = c.CacheDir
	}
	if c.RigFile != "" {
		cfg.RigFile = c.RigFile
	}
	if a := strings.TrimSpace(c.globals.Archive); a != "" && a != cfg.Archive {
		cfg.Archive, cfg.ArchiveFrom = a, "--archive"
	}
	e.config = &cfg
	if err := kctx.Run(e); err != nil {
		return report(stderr, err)
	}
	return 0
}

type exitPanic struct{}

// termFile returns the terminal under w, through any redacting writer, or
// false when w is not a terminal.
func termFile(w io.Writer) (*os.File, bool) {
	for {
		switch x := w.(type) {
		case *os.File:
			return x, term.IsTerminal(int(x.Fd()))
		case interface{ Unwrap() io.Writer }:
			w = x.Unwrap()
		default:
			return nil, false
		}
	}
}

func commandPrefix(pe *kong.ParseError) string {
	if pe.Context == nil {
		return ""
	}
	if cmd := pe.Context.Selected(); cmd != nil {
		return cmd.Path() + " "
	}
	return ""
}

// missingArgsRe matches kong's error for missing positional arguments:
// expected "<a> <b>".
var missingArgsRe = regexp.MustCompile(`^expected "(<[^"]+>)( \.\.\.)?"$`)

// missingArger is a command that says itself what its missing arguments
// are (diff: two sides, and their forms); given are the arguments it got.
type missingArger interface {
	missingArgs(given []string) error
}

// missingArgs turns kong's `expected "<b>"` into what the command needs:
// the command's own message where it has one, else each missing
// argument with its help. nil when err is another parse error.
func missingArgs(pe *kong.ParseError) error {
	m := missingArgsRe.FindStringSubmatch(pe.Error())
	if m == nil || pe.Context == nil {
		return nil
	}
	node := pe.Context.Selected()
	if node == nil {
		return nil
	}
	var given []string
	var missing []*kong.Value
	for _, v := range node.Positional {
		if v.Set {
			given = append(given, fmt.Sprint(v.Target.Interface()))
		} else if v.Required {
			missing = append(missing, v)
		}
	}
	usage := fmt.Sprintf("run 'rigor %s --help' for usage and examples", node.Path())
	if node.Target.IsValid() && node.Target.CanAddr() {
		if ma, ok := node.Target.Addr().Interface().(missingArger); ok {
			err := ma.missingArgs(given)
			return withHint(err, append(hintsOf(err), usage)...)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	var parts []string
	for _, v := range missing {
		parts = append(parts, fmt.Sprintf("<%s> (%s)", v.Name, strings.TrimSuffix(v.Help, ".")))
	}
	return withHint(fmt.Errorf("rigor %s needs %s", node.Path(), strings.Join(parts, " and ")), usage)
}

// report prints err and returns its exit code.
func report(stderr io.Writer, err error) int {
	var q quietError
	if errors.As(err, &q) {
		return q.code
	}
	printError(stderr, err)
	var ec interface{ ExitCode() int }
	if errors.As(err, &ec) {
		return ec.ExitCode()
	}
	return 1
}

// hintError carries hints for the user beside an error.
type hintError struct {
	err   error
	hints []string
}

func (e *hintError) Error() string { return e.err.Error() }
func (e *hintError) Unwrap() error { return e.err }

func withHint(err error, hints ...string) error {
	if err == nil {
		return nil
	}
	return &hintError{err: err, hints: hints}
}

// quietError is an error already reported to the user.
type quietError struct{ code int }

func (e quietError) Error() string { return fmt.Sprintf("exit %d", e.code) }

// printError writes `rigor: error: …` and its `rigor: hint: …` lines.
func printError(w io.Writer, err error) {
	msg := err.Error()
	fmt.Fprintf(w, "rigor: error: %s\n", strings.TrimSpace(msg))
	for _, h := range hintsOf(err) {
		fmt.Fprintf(w, "rigor: hint: %s\n", h)
	}
}

func hintsOf(err error) []string {
	var hints []string
	var he *hintError
	if errors.As(err, &he) {
		hints = append(hints, he.hints...)
	}
	var nm *spec.NoMatchError
	if errors.As(err, &nm) {
		for _, s := range nm.Suggestions {
			hints = append(hints, fmt.Sprintf("did you mean %s?", s))
		}
		hints = append(hints, "'rigor list' shows every experiment id")
	}
	var mi *spec.MalformedIDError
	if errors.As(err, &mi) {
		hints = append(hints, "ids are <directory under experiments/>/<field name>, e.g. example/smoke, or a point: example/smokeBatch[b=16]; 'rigor list' shows them")
	}
	if errors.Is(err, spec.ErrNoModule) {
		hints = append(hints, "run rigor inside a module (a directory with cue.mod/), pass -C DIR, or create one with 'rigor init'")
	}
	return hints
}
