// Package locktest holds testscript commands for the lock scripts.
package locktest

import (
	"strconv"
	"strings"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/rigorbench/rigor/internal/hf/hubtest"
)

// FaultyHub is a testscript command that starts a stand-in hub (see
// hubtest.Cmd) with a fault: "malformed-model" or "malformed-tree" make
// that endpoint answer broken JSON, "delay=DURATION" delays every answer,
// "fail=PATH=STATUS" makes every request to PATH (a trailing * matches a
// prefix) answer STATUS.
// It points HF_ENDPOINT at the hub for the rest of the script:
//
//	fake-hub-faulty malformed-tree hub.json
func FaultyHub(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! fake-hub-faulty")
	}
	if len(args) != 2 {
		ts.Fatalf("usage: fake-hub-faulty malformed-model|malformed-tree|delay=D|fail=PATH=STATUS config.json")
	}
	h, err := hubtest.Load(ts.MkAbs(args[1]))
	ts.Check(err)
	ts.Defer(h.Close)
	switch fault := args[0]; {
	case fault == "malformed-model":
		h.Malformed(hubtest.EndpointModel)
	case fault == "malformed-tree":
		h.Malformed(hubtest.EndpointTree)
	case strings.HasPrefix(fault, "fail="):
		// fail=PATH=STATUS: every request to PATH (a trailing * matches
		// a prefix) answers STATUS.
		path, status, ok := strings.Cut(strings.TrimPrefix(fault, "fail="), "=")
		code, err := strconv.Atoi(status)
		if !ok || err != nil {
			ts.Fatalf("fail=PATH=STATUS: got %q", fault)
		}
		h.FailNext(path, code, 1<<30)
	case len(fault) > 6 && fault[:6] == "delay=":
		d, err := time.ParseDuration(fault[6:])
		ts.Check(err)
		h.Delay(d)
	default:
		ts.Fatalf("unknown fault %q", fault)
	}
	ts.Setenv("HF_ENDPOINT", h.URL)
}
