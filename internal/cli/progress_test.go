package cli

import (
	"bytes"
	"regexp"
	"testing"
)

// TestPrepareProgress: off a terminal every phase is a line, a silent
// stretch gets a heartbeat with the percentage and the time so far, and a
// build waiting on another one's lock names that process.
func TestPrepareProgress(t *testing.T) {
	var out bytes.Buffer
	p := newPrepareProgress(&out, "llama.cpp 0123456789ab")
	p.tick()
	p.waiting(4242, "/c/builds/k.lock")
	p.building("fedcba9876543210", "/c/builds/k.tmp-1/build.log")
	p.Write([]byte("rigor: checked out x with 0 patches\n-- The C compiler\n"))
	p.build(45, "[ 45%] Building CXX object x.o")
	p.build(60, "[ 60%] Building CXX object y.o")
	p.tick()
	p.Write([]byte("rigor: build commit abc matches "))
	p.Write([]byte("abcdef\n"))
	p.close()
	want := `^rigor: still preparing the engine llama\.cpp 0123456789ab, \d+s elapsed
rigor: waiting for another build of this engine, pid 4242 \(lock /c/builds/k\.lock\)
rigor: build log: /c/builds/k\.tmp-1/build\.log \(build fedcba987654\)
rigor: fetching the source of llama\.cpp 0123456789ab \(\d+s elapsed\)
rigor: configuring llama\.cpp 0123456789ab \(\d+s elapsed\)
rigor: compiling llama\.cpp 0123456789ab \(\d+s elapsed\)
rigor: still compiling llama\.cpp 0123456789ab: 60%, \d+s elapsed
rigor: verifying llama\.cpp 0123456789ab \(\d+s elapsed\)
$`
	if !regexp.MustCompile(want).Match(out.Bytes()) {
		t.Errorf("progress:\n%s\nwant:\n%s", out.String(), want)
	}
}
