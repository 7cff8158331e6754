package run

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// PortInUseError is a worker's port that another process already listens
// on before rigor starts the worker: rigor never reuses a stranger.
type PortInUseError struct {
	Worker, Addr string
	// PID and Command name the process holding the port, when /proc says
	// (0 and "" when it cannot be read, e.g. another user's process).
	PID     int
	Command string
}

func (e *PortInUseError) Error() string {
	who := "another process"
	if e.PID > 0 {
		who = fmt.Sprintf("another process (pid %d, %s)", e.PID, e.Command)
	}
	return fmt.Sprintf("port %s of worker %s is already in use by %s, before rigor started the worker", e.Addr, e.Worker, who)
}

// Hint says what to do.
func (e *PortInUseError) Hint() string {
	return "stop that process, or give the workers other ports (engine.rpc.basePort)"
}

// portFree reports an error when something already accepts connections
// on addr.
func portFree(worker, addr string) error {
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		return nil
	}
	conn.Close()
	e := &PortInUseError{Worker: worker, Addr: addr}
	if _, port, err := net.SplitHostPort(addr); err == nil {
		if p, err := strconv.Atoi(port); err == nil {
			e.PID, e.Command = listener(p)
		}
	}
	return e
}

// listener finds the process listening on a TCP port from /proc: the
// socket's inode in /proc/net/tcp{,6}, then the process holding it among
// /proc/*/fd. It returns 0 when it cannot tell.
func listener(port int) (pid int, command string) {
	inodes := map[string]bool{}
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		for _, ino := range listeningInodes(f, port) {
			inodes[ino] = true
		}
	}
	if len(inodes) == 0 {
		return 0, ""
	}
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, dir := range procs {
		fds, err := os.ReadDir(filepath.Join(dir, "fd"))
		if err != nil {
			continue
		}
		for _, fd := range fds {
			link, err := os.Readlink(filepath.Join(dir, "fd", fd.Name()))
			if err != nil || !strings.HasPrefix(link, "socket:[") {
				continue
			}
			if inodes[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] {
				pid, _ := strconv.Atoi(filepath.Base(dir))
				comm, _ := os.ReadFile(filepath.Join(dir, "comm"))
				return pid, strings.TrimSpace(string(comm))
			}
		}
	}
	return 0, ""
}

// listeningInodes returns the inodes of sockets listening on port in a
// /proc/net/tcp-format file.
func listeningInodes(path string, port int) []string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	want := fmt.Sprintf(":%04X", port)
	var out []string
	sc := bufio.NewScanner(f)
	sc.Scan() // header
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
		if len(fields) < 10 || fields[3] != "0A" { // 0A: LISTEN
			continue
		}
		if strings.HasSuffix(fields[1], want) {
			out = append(out, fields[9])
		}
	}
	return out
}
