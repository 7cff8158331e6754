package testscripts

import (
	"net"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

func init() {
	// waitport ADDR: wait (up to 30 s) until something accepts
	// connections on ADDR, such as a server the script started in the
	// background (`exec fake-vllm serve … &`).
	scriptCmds["waitport"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 1 {
			ts.Fatalf("usage: waitport ADDR")
		}
		deadline := time.Now().Add(30 * time.Second)
		for {
			c, err := net.DialTimeout("tcp", args[0], time.Second)
			if err == nil {
				c.Close()
				return
			}
			if time.Now().After(deadline) {
				ts.Fatalf("nothing accepts connections on %s: %v", args[0], err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}
