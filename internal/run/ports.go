package run

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/rigorbench/rigor/internal/flock"
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

// listener finds the process listening on a TCP port from /proc (see
// [listenerHolders]). It returns 0 when it cannot tell.
func listener(port int) (pid int, command string) {
	for _, hs := range listenerHolders(port) {
		if len(hs) > 0 {
			return hs[0].pid, hs[0].command
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

// NotOurWorkerError is a worker's port on which some process other than
// the worker (or what it spawned) listens once the worker has started: a
// second run that started the same worker at the same moment, whose
// socket answers while ours failed to bind. Readiness is proved by the
// socket's owner, never by a connection alone.
type NotOurWorkerError struct {
	Worker, Addr string
	// WorkerPID is the worker rigor started.
	WorkerPID int
	// PID and Command name the process holding the port (0 and "" when
	// /proc does not say: another user's process, or no socket listed).
	PID     int
	Command string
}

func (e *NotOurWorkerError) Error() string {
	who := "a process rigor cannot identify"
	if e.PID > 0 {
		who = fmt.Sprintf("another process (pid %d, %s)", e.PID, e.Command)
	}
	return fmt.Sprintf("port %s of worker %s answers, but the socket belongs to %s, not to the worker rigor started (pid %d): the run would measure someone else's worker", e.Addr, e.Worker, who, e.WorkerPID)
}

// Hint says what to do.
func (e *NotOurWorkerError) Hint() string {
	return "another run probably started a worker on the same port at the same moment: run them one after the other, or give the workers other ports (engine.rpc.basePort)"
}

// holder is a process holding a listening socket.
type holder struct {
	pid, pgid int
	command   string
}

// listeningOn returns the inodes of the sockets listening on port.
func listeningOn(port int) map[string]bool {
	inodes := map[string]bool{}
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		for _, ino := range listeningInodes(f, port) {
			inodes[ino] = true
		}
	}
	return inodes
}

// socketsOf returns the inodes of the sockets process pid holds.
func socketsOf(pid int) map[string]bool {
	out := map[string]bool{}
	dir := filepath.Join("/proc", strconv.Itoa(pid), "fd")
	fds, _ := os.ReadDir(dir)
	for _, fd := range fds {
		if link, err := os.Readlink(filepath.Join(dir, fd.Name())); err == nil && strings.HasPrefix(link, "socket:[") {
			out[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")] = true
		}
	}
	return out
}

// listenerHolders returns, for each socket listening on port (by inode,
// from /proc/net/tcp{,6}), the processes holding it among /proc/*/fd. A
// socket whose holder cannot be read (another user's process) has none.
func listenerHolders(port int) map[string][]holder {
	sockets := map[string][]holder{}
	for ino := range listeningOn(port) {
		sockets[ino] = nil
	}
	if len(sockets) == 0 {
		return sockets
	}
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, dir := range procs {
		fds, err := os.ReadDir(filepath.Join(dir, "fd"))
		if err != nil {
			continue
		}
		seen := map[string]bool{}
		for _, fd := range fds {
			link, err := os.Readlink(filepath.Join(dir, "fd", fd.Name()))
			if err != nil || !strings.HasPrefix(link, "socket:[") {
				continue
			}
			ino := strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")
			if _, ok := sockets[ino]; !ok || seen[ino] {
				continue
			}
			seen[ino] = true
			pid, _ := strconv.Atoi(filepath.Base(dir))
			comm, _ := os.ReadFile(filepath.Join(dir, "comm"))
			sockets[ino] = append(sockets[ino], holder{pid: pid, pgid: pgidOf(pid), command: strings.TrimSpace(string(comm))})
		}
	}
	return sockets
}

// pgidOf reads a process's group from /proc/PID/stat (0 when it cannot).
func pgidOf(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// pid (comm) state ppid pgrp …; comm may hold spaces and parentheses.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 3 {
		return 0
	}
	g, _ := strconv.Atoi(f[2])
	return g
}

// errNoListener is [ownsPort]'s answer when nothing listens on the port
// any more.
var errNoListener = errors.New("no socket listens on the port")

// ownsPort checks that every socket listening on addr's port is held by
// the process group pgid (the worker rigor started, which leads its own
// group, and what it spawned). A socket held by anyone else, or one whose
// holder /proc does not show, fails the check.
func ownsPort(worker, addr string, pgid int) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("worker %s: ready address %q: %w", worker, addr, err)
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		return fmt.Errorf("worker %s: ready address %q: port is not a number", worker, addr)
	}
	// The usual case, cheaply: the worker itself holds every socket that
	// listens on the port. Scanning every process's descriptors takes
	// long on a busy machine, and is left for naming a stranger.
	if ins := listeningOn(p); len(ins) > 0 {
		held := socketsOf(pgid)
		all := true
		for ino := range ins {
			all = all && held[ino]
		}
		if all {
			return nil
		}
	}
	sockets := listenerHolders(p)
	e := &NotOurWorkerError{Worker: worker, Addr: addr, WorkerPID: pgid}
	if len(sockets) == 0 {
		// It answered, but no longer listens: whoever it was closed
		// the socket (or died) since. The caller looks again.
		return errNoListener
	}
	for _, hs := range sockets {
		if len(hs) == 0 {
			return e // held by a process /proc does not show us
		}
		for _, h := range hs {
			if h.pgid != pgid && h.pid != pgid {
				e.PID, e.Command = h.pid, h.command
				return e
			}
		}
	}
	return nil
}

// PortLockDir returns the directory of the cache that holds the worker
// port locks ([Options.LockDir]).
func PortLockDir(cache string) string { return filepath.Join(cache, "locks", "ports") }

// lockPort takes the lock of a worker port in dir, waiting (and saying so)
// while another rigor starts a worker on it. The lock is per port, whatever
// the host: 0.0.0.0:P and 127.0.0.1:P cannot both be bound.
func lockPort(ctx context.Context, dir, addr string, progress func(string)) (*flock.Lock, error) {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("ready address %q: %w", addr, err)
	}
	path := filepath.Join(dir, "port-"+port+".lock")
	l, err := flock.Acquire(ctx, path, flock.Options{NoWait: true, Owner: true})
	if !errors.Is(err, flock.ErrLocked) {
		return l, err
	}
	who := "another rigor"
	if pid := flock.Owner(path); pid > 0 {
		who = fmt.Sprintf("another rigor (pid %d)", pid)
	}
	progress(fmt.Sprintf("waiting for %s, which is starting a worker on port %s", who, port))
	return flock.Acquire(ctx, path, flock.Options{Owner: true, Waiting: who + " starting a worker on port " + port})
}
