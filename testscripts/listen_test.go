package testscripts

import (
	"net"

	"github.com/rogpeppe/go-internal/testscript"
)

func init() {
	// listen ADDR: a stranger listening on ADDR (it accepts and closes
	// connections) until the script ends.
	scriptCmds["listen"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) != 1 {
			ts.Fatalf("usage: listen ADDR")
		}
		l, err := net.Listen("tcp", args[0])
		ts.Check(err)
		ts.Defer(func() { l.Close() })
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				c.Close()
			}
		}()
	}
}
