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

// TestByteProgress: a model file's progress on a terminal says how much of
// how much, as a percentage; a blob whose size is not known says only
// what is done.
func TestByteProgress(t *testing.T) {
	var out bytes.Buffer
	b := &byteProgress{w: &out, label: "model models/m.gguf", total: 400_000_000}
	b.update(100_000_000)
	b.done()
	if !regexp.MustCompile(`^\r\x1b\[Krigor: model models/m\.gguf: 100\.0 MB of 400\.0 MB, 25% \([^)]+/s\)\r\x1b\[K$`).Match(out.Bytes()) {
		t.Fatalf("with a total: %q", out.String())
	}
	out.Reset()
	b = &byteProgress{w: &out, label: "source engine at 0123456789ab"}
	b.update(2_000_000)
	if !regexp.MustCompile(`^\r\x1b\[Krigor: source engine at 0123456789ab: 2\.0 MB \([^)]+/s\)$`).Match(out.Bytes()) {
		t.Fatalf("without a total: %q", out.String())
	}
	if b := newByteProgress(&out, "x", 1); b != nil {
		t.Fatal("progress on a writer that is no terminal")
	}
}
