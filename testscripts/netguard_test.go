package testscripts

import (
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

func init() {
	// netguard start [ADDR]: listen on a loopback port (or ADDR, the port
	// of a stand-in just stopped) that nothing may connect to, and set
	// NETGUARD (host:port) and NETGUARD_PORT; point every registry and
	// endpoint at it to prove a command stays offline.
	// netguard check: fail if anything connected since start.
	scriptCmds["netguard"] = netguardCmd
}

type netguard struct {
	ln       net.Listener
	mu       sync.Mutex
	accepted []string
	sentinel chan struct{}
}

// sentinelLine is what check sends itself: connections are accepted in
// order, so once it arrives every earlier connection has been recorded.
const sentinelLine = "NETGUARD-SENTINEL"

var (
	guardsMu sync.Mutex
	guards   = map[*testscript.TestScript]*netguard{}
)

func netguardCmd(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 1 || len(args) > 2 || len(args) == 2 && args[0] != "start" {
		ts.Fatalf("usage: netguard start [ADDR] | netguard check")
	}
	switch args[0] {
	case "start":
		addr := "127.0.0.1:0"
		if len(args) == 2 {
			addr = args[1]
		}
		ln, err := net.Listen("tcp", addr)
		ts.Check(err)
		g := &netguard{ln: ln, sentinel: make(chan struct{}, 1)}
		guardsMu.Lock()
		guards[ts] = g
		guardsMu.Unlock()
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				// A client that sends nothing (a TLS or git client waiting
				// for the server) is recorded after a short read.
				c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
				buf := make([]byte, 200)
				n, _ := c.Read(buf)
				c.Close()
				first := strings.SplitN(string(buf[:n]), "\n", 2)[0]
				if first == sentinelLine {
					g.sentinel <- struct{}{}
					continue
				}
				g.mu.Lock()
				g.accepted = append(g.accepted, strconv.Quote(first))
				g.mu.Unlock()
			}
		}()
		ts.Defer(func() { ln.Close() })
		ts.Setenv("NETGUARD", ln.Addr().String())
		ts.Setenv("NETGUARD_PORT", strconv.Itoa(ln.Addr().(*net.TCPAddr).Port))
	case "check":
		guardsMu.Lock()
		g := guards[ts]
		guardsMu.Unlock()
		if g == nil {
			ts.Fatalf("netguard check: no netguard started")
		}
		c, err := net.Dial("tcp", g.ln.Addr().String())
		ts.Check(err)
		c.Write([]byte(sentinelLine + "\n"))
		<-g.sentinel
		c.Close()
		g.mu.Lock()
		defer g.mu.Unlock()
		if len(g.accepted) > 0 {
			ts.Fatalf("%d network connection(s) to %s, first bytes: %s", len(g.accepted), g.ln.Addr(), strings.Join(g.accepted, "; "))
		}
	default:
		ts.Fatalf("usage: netguard start|check")
	}
}
