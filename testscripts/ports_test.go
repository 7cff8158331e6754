package testscripts

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
)

// TestFixedPortsOutsideEphemeralRange keeps the scripts' fixed ports out of
// Linux's ephemeral range (net.ipv4.ip_local_port_range, 32768–60999 by
// default). Scripts run beside each other, and every outgoing connection
// of one of them takes a local port from that range: a worker or server
// port there can be held by another script's client socket at the moment
// it is needed, which failed a CI rehearsal (rpc-server: "Failed to create
// server socket on 127.0.0.1:52610"). Ports below 32768 are never handed
// out that way.
func TestFixedPortsOutsideEphemeralRange(t *testing.T) {
	files, err := filepath.Glob("*.txtar")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts: %v", err)
	}
	// Where a script's experiments and commands name a port to listen on
	// or wait for (ports inside imported records and seeds are data).
	port := regexp.MustCompile(`(?:basePort:\s*\*?|port:\s*\*?|(?:listen|waitport) 127\.0\.0\.1:)(\d{4,5})\b`)
	// A script that runs experiments (not as a dry run), listens or
	// waits on a port, or starts a server.
	starts := regexp.MustCompile(`(?m)^!? ?exec rigor (?:run|jobs|loadgen)\b|^(?:listen|waitport) `)
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if !starts.Match(data) {
			continue // it starts nothing: its ports are only configuration
		}
		for _, m := range port.FindAllSubmatchIndex(data, -1) {
			n, _ := strconv.Atoi(string(data[m[2]:m[3]]))
			if n >= 32768 && n <= 60999 {
				line := 1
				for _, c := range data[:m[0]] {
					if c == '\n' {
						line++
					}
				}
				t.Errorf("%s:%d: port %d is in the ephemeral range 32768–60999; use a port below 32768, distinct from the other scripts'", f, line, n)
			}
		}
	}
}
