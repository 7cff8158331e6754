package testscripts

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/rigorbench/rigor/internal/engine/llamacpp/testengine"
	"github.com/rigorbench/rigor/internal/hf/hubtest"
	"github.com/rigorbench/rigor/internal/lock/locktest"
	"github.com/rigorbench/rigor/internal/lock/npmtest"
)

// scriptCmds are the custom testscript commands. Files add theirs in init().
var scriptCmds = map[string]func(*testscript.TestScript, bool, []string){
	// A stand-in Hugging Face hub on loopback; sets HF_ENDPOINT.
	"fake-hub":        hubtest.Cmd,
	"fake-hub-faulty": locktest.FaultyHub,
	// A stand-in npm registry on loopback; sets npm_config_registry.
	"fake-npm-registry": npmtest.Cmd,
	// survivors DIR: fail when any process whose program lives under DIR
	// is still running (rigor must leave no worker behind).
	"survivors": survivors,
	// waitport HOST:PORT [SECONDS]: wait (up to SECONDS, default 30) until
	// something accepts connections, such as a server the script started
	// in the background (`exec fake-vllm serve … &`).
	"waitport": waitport,
	// testengine DIR [--ik] [--patches PDIR]: a small llama.cpp-shaped
	// engine source tree as a git repository (internal/engine/llamacpp/testengine).
	"testengine": testengine.Cmd,
}

func survivors(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: survivors DIR")
	}
	dir := ts.MkAbs(args[0])
	// A killed process takes a moment to go: look again for up to two
	// seconds before reporting survivors.
	var alive []string
	for i := 0; i < 40; i++ {
		if alive = processesUnder(dir); len(alive) == 0 || neg {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if neg {
		if len(alive) == 0 {
			ts.Fatalf("no process of %s is running", dir)
		}
		return
	}
	if len(alive) > 0 {
		ts.Fatalf("processes left behind:\n%s", strings.Join(alive, "\n"))
	}
}

// processesUnder lists the live processes whose executable is under dir.
func processesUnder(dir string) []string {
	entries, _ := os.ReadDir("/proc")
	var alive []string
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe"))
		if err != nil || !strings.HasPrefix(exe, dir) {
			continue
		}
		stat, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if strings.Contains(string(stat), ") Z ") {
			continue // a zombie is already dead
		}
		alive = append(alive, fmt.Sprintf("%d %s", pid, exe))
	}
	return alive
}

func waitport(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 1 || len(args) > 2 {
		ts.Fatalf("usage: waitport HOST:PORT [SECONDS]")
	}
	secs := 30
	if len(args) == 2 {
		var err error
		secs, err = strconv.Atoi(args[1])
		ts.Check(err)
	}
	deadline := time.Now().Add(time.Duration(secs) * time.Second)
	for time.Now().Before(deadline) {
		if c, err := net.DialTimeout("tcp", args[0], time.Second); err == nil {
			c.Close()
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	ts.Fatalf("nothing accepted connections on %s within %ds", args[0], secs)
}
