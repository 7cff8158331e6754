package cli

import (
	"context"
	"errors"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"
	cueerrors "cuelang.org/go/cue/errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/rigorbench/rigor/internal/gitrepo"
	"github.com/rigorbench/rigor/internal/gitsrc"
	"github.com/rigorbench/rigor/internal/hf"
	"github.com/rigorbench/rigor/internal/redact"
	"github.com/rigorbench/rigor/internal/results"
	"github.com/rigorbench/rigor/internal/rig"
	"github.com/rigorbench/rigor/internal/run"
)

// config is rigor's configuration from the environment, read here, once,
// and passed down to the libraries as values (as cue's cueconfig does), so
// that the libraries stay pure and their tests need no environment tricks.
//
//	RIGOR_CACHE       rigor's cache (builds, git mirrors, engine installs,
//	                  synthetic models, the hash cache); else
//	                  $XDG_CACHE_HOME/rigor, else ~/.cache/rigor
//	HF_HUB_CACHE, HF_HOME, HUGGINGFACE_HUB_CACHE
//	                  the Hugging Face hub cache, as huggingface_hub reads it
//	RIGOR_RIG_FILE    a JSON rig that replaces detection (tests)
//	RIGOR_GIT_AUTHOR  "Name <email>" of rigor's commits
//	HF_ENDPOINT, HF_TOKEN, HF_HUB_OFFLINE, … as huggingface_hub reads them
//	                  (hf.OptionsFromEnv), and RIGOR_HF_MAX_RETRIES, how
//	                  many times a transient hub failure is retried (0:
//	                  none), for lock and pull alike ([config.hfOptions])
//	RIGOR_GIT_TIMEOUT how long a git remote may stay silent (a Go
//	                  duration such as 90s, or seconds); default 1m
//	RIGOR_FALLBACK_DIR where a record the module could not take is saved;
//	                  else rigor-unsaved-<uid> under the temporary directory
//	RIGOR_CONFIRM_RUNS, RIGOR_CONFIRM_ETA
//	                  the size above which 'rigor run' asks first (1000
//	                  runs, 24h; [config.askLimits])
//	RIGOR_SYSFS_ROOT  a directory that replaces /sys for the power sampler's
//	                  RAPL tree (class/powercap/intel-rapl:*) (tests); the
//	                  GPU tools are found on PATH
//	RIGOR_ARCHIVE     the OCI archive (oci://host[:port]/repository) that
//	                  'rigor archive' pushes to and build/run substitute
//	                  from; --archive overrides it, and it overrides the
//	                  module's archive setting (rigor.cue, [moduleArchive])
//	DOCKER_CONFIG     the folder of the docker config.json whose
//	                  credentials reach the archive; else ~/.docker
type config struct {
	Cache   string
	HFCache string
	RigFile string
	// GitAuthor is RIGOR_GIT_AUTHOR, trimmed.
	GitAuthor string
	// GitTimeout is RIGOR_GIT_TIMEOUT as set, trimmed ([config.gitTimeout]).
	GitTimeout  string
	FallbackDir string
	// SysRoot is RIGOR_SYSFS_ROOT.
	SysRoot string
	// Archive is RIGOR_ARCHIVE (or --archive), ArchiveFrom which of the
	// two set it; DockerConfig the docker config.json whose credential
	// store reaches it.
	Archive      string
	ArchiveFrom  string
	DockerConfig string
	// Secrets knows the environment's secrets, kept out of commits.
	Secrets *redact.Scrubber
	Getenv  func(string) string
	Lookup  func(string) (string, bool)
}

func loadConfig() config {
	c := config{Getenv: os.Getenv, Lookup: os.LookupEnv}
	c.Cache = gitsrc.CacheDirFrom(c.Getenv)
	c.HFCache, _ = hf.CacheDirFrom(c.Getenv)
	c.RigFile = c.Getenv(rig.RigFileEnv)
	c.GitAuthor = strings.TrimSpace(c.Getenv(gitrepo.AuthorEnv))
	c.GitTimeout = strings.TrimSpace(c.Getenv("RIGOR_GIT_TIMEOUT"))
	c.FallbackDir = c.Getenv("RIGOR_FALLBACK_DIR")
	c.SysRoot = c.Getenv("RIGOR_SYSFS_ROOT")
	if c.FallbackDir == "" {
		c.FallbackDir = filepath.Join(os.TempDir(), fmt.Sprintf("rigor-unsaved-%d", os.Getuid()))
	}
	c.Archive, c.ArchiveFrom = strings.TrimSpace(c.Getenv("RIGOR_ARCHIVE")), "RIGOR_ARCHIVE"
	if d := c.Getenv("DOCKER_CONFIG"); d != "" {
		c.DockerConfig = filepath.Join(d, "config.json")
	} else if home, err := os.UserHomeDir(); err == nil {
		c.DockerConfig = filepath.Join(home, ".docker", "config.json")
	}
	c.Secrets = redact.FromEnviron(os.Environ())
	return c
}

// hfOptions are the hub client's options from the environment, the
// retries of RIGOR_HF_MAX_RETRIES included: one setting for every verb
// that talks to the hub.
func (c config) hfOptions() (hf.ClientOptions, error) {
	opts := hf.OptionsFromEnv(c.Getenv)
	if v := strings.TrimSpace(c.Getenv("RIGOR_HF_MAX_RETRIES")); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return opts, withHint(fmt.Errorf("RIGOR_HF_MAX_RETRIES: %q is not a number", v),
				"give how many times a failed hub request is tried again, 0 for none; unset, "+strconv.Itoa(hf.DefaultMaxRetries))
		}
		if n == 0 {
			n = -1 // hf: no retries
		}
		opts.MaxRetries = n
	}
	return opts, nil
}

// gitTimeout is RIGOR_GIT_TIMEOUT: how long a git remote may stay silent
// (gitsrc.Options.Timeout), a Go duration or a number of seconds; 0 (the
// default, gitsrc.DefaultTimeout) when unset.
func (c config) gitTimeout() (time.Duration, error) {
	v := c.GitTimeout
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		if secs, serr := strconv.ParseFloat(v, 64); serr == nil {
			d, err = time.Duration(secs*float64(time.Second)), nil
		}
	}
	if err != nil || d <= 0 {
		return 0, withHint(fmt.Errorf("RIGOR_GIT_TIMEOUT: %q is not a duration", v),
			"write it as a Go duration (90s, 2m) or a number of seconds; unset, git remotes get "+gitsrc.DefaultTimeout.String())
	}
	return d, nil
}

// cfg returns the configuration, read on first use.
func (e *env) cfg() config {
	if e.config == nil {
		c := loadConfig()
		e.config = &c
	}
	return *e.config
}

// detectRig describes this machine (or reads the rig file that replaces
// detection).
func (e *env) detectRig(ctx context.Context) (*rig.Rig, error) {
	c := e.cfg()
	return rig.Detect(ctx, rig.DetectOptions{Cache: c.Cache, RigFile: c.RigFile})
}

// runner returns a runner for an experiment of the module at root, with
// the configuration filled in.
func (e *env) runner(root string) *run.Runner {
	c := e.cfg()
	r := &run.Runner{Root: root, Cache: c.Cache, HFCache: c.HFCache, Getenv: c.Lookup, RigorVersion: Version, Secrets: e.secrets,
		SysRoot: c.SysRoot}
	if o, err := c.hfOptions(); err == nil {
		r.Hub = hf.NewClient(o) // a bad setting is refused where the hub is first asked (lock, pull)
	}
	return r
}

// store returns the results store of the module at root, its commits
// configured (author, the secrets kept out of commit messages).
func (e *env) store(root string) *results.Store {
	c := e.cfg()
	s := results.Open(root)
	s.Author, s.Scrubber = c.GitAuthor, c.Secrets
	return s
}

// moduleSettingsFile holds a module's own settings, committed at its
// root beside cue.mod/: today only where its archive is,
//
//	archive: "oci://registry.lab:5000/lab/rigor"
//
// read here and nowhere else. --archive and RIGOR_ARCHIVE override it.
const moduleSettingsFile = "rigor.cue"

// knownSettings refuses a field of rigor.cue that is no setting (a typo
// such as archiv: would otherwise leave the module without its archive,
// silently).
func knownSettings(v cue.Value) error {
	it, err := v.Fields()
	if err != nil {
		return err
	}
	for it.Next() {
		if name := it.Selector().String(); name != "archive" {
			pos := it.Value().Pos()
			return withHint(fmt.Errorf("%s:%d:%d: %s is not a setting of the module", moduleSettingsFile, pos.Line(), pos.Column(), name),
				moduleSettingsFile+" holds the module's settings, today only archive: \"oci://host[:port]/repository\"")
		}
	}
	return nil
}

// moduleArchive is the archive the module at root sets in rigor.cue; ""
// when there is no such file or no archive field.
func moduleArchive(root string) (string, error) {
	p := filepath.Join(root, moduleSettingsFile)
	b, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	v := cuecontext.New().CompileBytes(b, cue.Filename(moduleSettingsFile))
	if err := v.Err(); err != nil {
		return "", withHint(fmt.Errorf("%s", strings.TrimSpace(cueerrors.Details(err, nil))),
			moduleSettingsFile+" holds the module's settings, e.g. archive: \"oci://registry.lab:5000/lab/rigor\"")
	}
	if err := knownSettings(v); err != nil {
		return "", err
	}
	a := v.LookupPath(cue.ParsePath("archive"))
	if !a.Exists() {
		return "", nil
	}
	s, err := a.String()
	if err != nil {
		pos := a.Pos()
		return "", withHint(fmt.Errorf("%s:%d:%d: archive must be a string", moduleSettingsFile, pos.Line(), pos.Column()),
			"write it as archive: \"oci://host[:port]/repository\"")
	}
	return strings.TrimSpace(s), nil
}
