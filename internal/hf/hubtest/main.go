package hubtest

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http/httptest"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"syscall"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// Config describes a stand-in hub in JSON, for [Load], [Main] and [Cmd]:
//
//	{
//	  "repos": {
//	    "org/tiny-GGUF": {
//	      "files": [
//	        {"path": "README.md", "text": "# tiny\n"},
//	        {"path": "tiny-Q8_0.gguf", "size": 1048576, "seed": 1, "lfs": true},
//	        {"path": "config.json", "from": "testdata/config.json"}
//	      ],
//	      "branches": ["main"], "tags": ["v1"],
//	      "gated": true, "token": "hf_granted", "pageSize": 2,
//	      "pushes": [{"branch": "main", "files": [{"path": "README.md", "text": "# v2\n"}]}],
//	      "deleted": ["tiny-Q8_0.gguf"], "purged": ["README.md"]
//	    }
//	  },
//	  "noRange": false, "delay": "0s"
//	}
type Config struct {
	Repos map[string]RepoConfig `json:"repos"`
	// NoRange makes the hub ignore Range headers ([Hub.NoRange]).
	NoRange bool `json:"noRange,omitempty"`
	// Delay is a Go duration every request waits ([Hub.Delay]).
	Delay string `json:"delay,omitempty"`
}

// RepoConfig is one repo of a [Config]; see [RepoOptions].
type RepoConfig struct {
	Files    []FileConfig `json:"files"`
	Branches []string     `json:"branches,omitempty"`
	Tags     []string     `json:"tags,omitempty"`
	Gated    bool         `json:"gated,omitempty"`
	Private  bool         `json:"private,omitempty"`
	Token    string       `json:"token,omitempty"`
	PageSize int          `json:"pageSize,omitempty"`
	// Pushes are later commits, in order, each the whole tree of a new
	// commit on its branch ([Hub.Push]); the earlier commits stay
	// reachable by sha, as on the hub after a push.
	Pushes []PushConfig `json:"pushes,omitempty"`
	// Deleted are files the hub no longer has at any commit, while the
	// repo and its commits stay as they were ([Hub.DeleteFile]).
	Deleted []string `json:"deleted,omitempty"`
	// Purged are files every commit still lists but the hub no longer
	// serves ([Hub.PurgeFile]).
	Purged []string `json:"purged,omitempty"`
}

// PushConfig is one later commit of a [RepoConfig].
type PushConfig struct {
	Branch string       `json:"branch"`
	Files  []FileConfig `json:"files"`
}

// FileConfig is one file of a [RepoConfig]. Its content is Text, or the
// file From (relative to the config file), or Size pseudo-random bytes
// generated from Seed.
type FileConfig struct {
	Path string `json:"path"`
	Text string `json:"text,omitempty"`
	From string `json:"from,omitempty"`
	Size int64  `json:"size,omitempty"`
	Seed uint64 `json:"seed,omitempty"`
	LFS  bool   `json:"lfs,omitempty"`
}

// RandomBytes returns n pseudo-random bytes determined by seed, the
// content of a generated [FileConfig].
func RandomBytes(n int64, seed uint64) []byte {
	var key [32]byte
	for i := range 8 {
		key[i] = byte(seed >> (8 * i))
	}
	b := make([]byte, n)
	rand.NewChaCha8(key).Read(b)
	return b
}

// apply adds cfg's repos and settings to h; dir resolves "from" paths.
func (cfg Config) apply(h *Hub, dir string) error {
	ids := make([]string, 0, len(cfg.Repos))
	for id := range cfg.Repos {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		rc := cfg.Repos[id]
		opts := RepoOptions{Branches: rc.Branches, Tags: rc.Tags, Gated: rc.Gated, Private: rc.Private, Token: rc.Token, PageSize: rc.PageSize}
		var err error
		if opts.Files, err = files(id, dir, rc.Files); err != nil {
			return err
		}
		if err := addRepo(h, id, opts); err != nil {
			return err
		}
		for _, pc := range rc.Pushes {
			fs, err := files(id, dir, pc.Files)
			if err != nil {
				return err
			}
			branch := pc.Branch
			if branch == "" {
				branch = "main"
			}
			h.Push(id, branch, fs)
		}
		for _, p := range rc.Deleted {
			if err := deleteFile(h, id, p, h.DeleteFile); err != nil {
				return err
			}
		}
		for _, p := range rc.Purged {
			if err := deleteFile(h, id, p, h.PurgeFile); err != nil {
				return err
			}
		}
	}
	h.NoRange(cfg.NoRange)
	if cfg.Delay != "" {
		d, err := time.ParseDuration(cfg.Delay)
		if err != nil {
			return fmt.Errorf("delay: %w", err)
		}
		h.Delay(d)
	}
	return nil
}

// files builds the files of a commit from their configs.
func files(id, dir string, fcs []FileConfig) ([]File, error) {
	var out []File
	for _, fc := range fcs {
		f := File{Path: fc.Path, LFS: fc.LFS}
		switch {
		case fc.From != "":
			p := fc.From
			if !filepath.IsAbs(p) {
				p = filepath.Join(dir, p)
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return nil, fmt.Errorf("repo %s: file %s: %w", id, fc.Path, err)
			}
			f.Data = b
		case fc.Size > 0:
			f.Data = RandomBytes(fc.Size, fc.Seed)
		default:
			f.Data = []byte(fc.Text)
		}
		out = append(out, f)
	}
	return out, nil
}

// addRepo is AddRepo returning fixture errors instead of panicking.
func addRepo(h *Hub, id string, opts RepoOptions) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	h.AddRepo(id, opts)
	return nil
}

// deleteFile is del (DeleteFile, PurgeFile) refusing a path no commit of
// the repo holds, a fixture error.
func deleteFile(h *Hub, id, file string, del func(id, file string)) error {
	h.mu.Lock()
	found := false
	for _, c := range h.repos[id].commits {
		_, ok := c.files[file]
		found = found || ok
	}
	h.mu.Unlock()
	if !found {
		return fmt.Errorf("repo %s: no commit has %s to delete", id, file)
	}
	del(id, file)
	return nil
}

// readConfig reads a Config from a JSON file.
func readConfig(name string) (Config, error) {
	var cfg Config
	b, err := os.ReadFile(name)
	if err != nil {
		return cfg, err
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		return cfg, fmt.Errorf("parsing hub config %s: %w", name, err)
	}
	return cfg, nil
}

// Load starts a stand-in hub (like [New]) with the repos of the JSON
// [Config] file name.
func Load(name string) (*Hub, error) {
	cfg, err := readConfig(name)
	if err != nil {
		return nil, err
	}
	h := New()
	if err := cfg.apply(h, filepath.Dir(name)); err != nil {
		h.Close()
		return nil, fmt.Errorf("hub config %s: %w", name, err)
	}
	return h, nil
}

// Cmd is a testscript command that starts a stand-in hub in-process from
// a JSON [Config] and points HF_ENDPOINT at it for the rest of the script;
// the hub stops when the script ends. Register it in testscript.Params:
//
//	Cmds: map[string]func(*testscript.TestScript, bool, []string){"fake-hub": hubtest.Cmd}
//
// and use it in a script as
//
//	fake-hub hub.json            # sets HF_ENDPOINT
//	fake-hub -env MIRROR hub.json # sets MIRROR instead
func Cmd(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! fake-hub")
	}
	env := "HF_ENDPOINT"
	if len(args) == 3 && args[0] == "-env" {
		env, args = args[1], args[2:]
	}
	if len(args) != 1 {
		ts.Fatalf("usage: fake-hub [-env NAME] config.json")
	}
	h, err := Load(ts.MkAbs(args[0]))
	ts.Check(err)
	ts.Defer(h.Close)
	ts.Setenv(env, h.URL)
}

// Main runs a stand-in hub as a program: it reads a JSON [Config], serves
// on 127.0.0.1:0 (or -addr), prints the base URL on stdout (and to
// -url-file), and serves until SIGINT or SIGTERM. Register it as a
// testscript program with
//
//	testscript.Main(m, map[string]func(){"fake-hub": hubtest.Main})
//
// and start it in the background in a script:
//
//	exec fake-hub -url-file hub.url hub.json &hub&
//
// A script cannot read a background program's output into a variable,
// so [Cmd] is the simpler choice when the code under test reads
// HF_ENDPOINT.
func Main() {
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, os.Interrupt, syscall.SIGTERM)
	os.Exit(Run(os.Args[1:], os.Stdout, os.Stderr, stop))
}

// Run is [Main] with its arguments, output and stop signal passed in; it
// returns the exit code (2 for usage errors).
func Run(args []string, stdout, stderr io.Writer, stop <-chan os.Signal) int {
	fs := flag.NewFlagSet("fake-hub", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:0", "listen `address`")
	urlFile := fs.String("url-file", "", "also write the base URL to `file`")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: fake-hub [-addr host:port] [-url-file file] config.json")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return 2
	}
	cfg, err := readConfig(fs.Arg(0))
	if err != nil {
		fmt.Fprintf(stderr, "fake-hub: %v\n", err)
		return 1
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintf(stderr, "fake-hub: %v\n", err)
		return 1
	}
	h := newHub()
	h.Server = httptest.NewUnstartedServer(h.handler("hub"))
	h.Server.Listener.Close()
	h.Server.Listener = ln
	h.Server.Start()
	defer h.Close()
	h.URL = h.Server.URL
	if err := cfg.apply(h, filepath.Dir(fs.Arg(0))); err != nil {
		fmt.Fprintf(stderr, "fake-hub: %v\n", err)
		return 1
	}
	if *urlFile != "" {
		if err := os.WriteFile(*urlFile, []byte(h.URL+"\n"), 0o644); err != nil {
			fmt.Fprintf(stderr, "fake-hub: %v\n", err)
			return 1
		}
	}
	fmt.Fprintln(stdout, h.URL)
	<-stop
	return 0
}
