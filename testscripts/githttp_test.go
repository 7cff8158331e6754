package testscripts

import (
	"fmt"
	"net"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"strings"
	"sync"

	"github.com/rogpeppe/go-internal/testscript"
)

func init() {
	// git-http ROOT USER:PASS [--echo]: the git repositories under ROOT
	// served over smart HTTP by the real git (git http-backend) on a
	// loopback port, for clients that send basic auth USER:PASS; sets
	// GIT_HTTP to http://127.0.0.1:PORT and GIT_HTTP_ADDR to
	// 127.0.0.1:PORT. Every request's Authorization
	// header and URL are appended to $WORK/git-http.log, so that a script
	// can tell whether a credential was sent. Others get 401; with
	// --echo, the 401's body echoes the credentials they sent, decoded
	// (`bad credentials for x-access-token:…`), as some servers do.
	// While $WORK/git-http.hang exists, every request is read and never
	// answered.
	//
	// git-http --hang: a server that accepts connections and never
	// answers; sets GIT_HTTP and GIT_HTTP_ADDR likewise.
	scriptCmds["git-http"] = gitHTTP
}

func gitHTTP(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! git-http")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	ts.Check(err)
	ts.Setenv("GIT_HTTP", "http://"+l.Addr().String())
	ts.Setenv("GIT_HTTP_ADDR", l.Addr().String())
	if len(args) == 1 && args[0] == "--hang" {
		var mu sync.Mutex
		var conns []net.Conn
		ts.Defer(func() {
			l.Close()
			mu.Lock()
			for _, c := range conns {
				c.Close()
			}
			mu.Unlock()
		})
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				mu.Lock()
				conns = append(conns, c) // held open, never answered
				mu.Unlock()
			}
		}()
		return
	}
	if len(args) < 2 || len(args) > 3 || len(args) == 3 && args[2] != "--echo" {
		ts.Fatalf("usage: git-http ROOT USER:PASS [--echo] | git-http --hang")
	}
	git, err := exec.LookPath("git")
	ts.Check(err)
	root := ts.MkAbs(args[0])
	user, pass, _ := strings.Cut(args[1], ":")
	echo := len(args) == 3
	logPath := ts.MkAbs("git-http.log")
	hangPath := ts.MkAbs("git-http.hang")
	var logMu sync.Mutex
	backend := &cgi.Handler{
		Path: git,
		Args: []string{"http-backend"},
		Env:  []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1", "GIT_CONFIG_NOSYSTEM=1", "HOME=" + root},
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		logMu.Lock()
		if f, err := os.OpenFile(logPath, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
			fmt.Fprintf(f, "%s %s auth=%q\n", r.Method, r.URL, r.Header.Get("Authorization"))
			f.Close()
		}
		logMu.Unlock()
		if _, err := os.Stat(hangPath); err == nil {
			<-r.Context().Done() // accepted, never answered
			return
		}
		u, p, ok := r.BasicAuth()
		if !ok || u != user || p != pass {
			w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
			w.WriteHeader(http.StatusUnauthorized)
			if echo {
				fmt.Fprintf(w, "bad credentials for %s:%s\n", u, p)
			}
			return
		}
		backend.ServeHTTP(w, r)
	})}
	go srv.Serve(l)
	ts.Defer(func() { srv.Close() })
}
