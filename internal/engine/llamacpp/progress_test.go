package llamacpp

import (
	"io"
	"testing"
)

// TestProgressWriter_cmakeCounter: one `cmake --build --target a b c`
// prints one counter for all its targets, so the progress is cmake's
// figure as it is. Dividing it by the number of targets printed 48% while
// cmake said [ 96%] on real ik_llama.cpp (issue 31).
func TestProgressWriter_cmakeCounter(t *testing.T) {
	var got []int
	p := &progressWriter{w: io.Discard, targets: 3, fn: func(pct int, _ string) { got = append(got, pct) }}
	for _, line := range []string{
		"[  2%] Building C object ggml/src/CMakeFiles/ggml-base.dir/ggml.c.o",
		"[ 48%] Built target ggml",
		"[ 49%] Built target llama",
		"[ 45%] Building CXX object a late line out of order",
		"[ 96%] Linking CXX executable ../../bin/llama-bench",
		"[ 98%] Built target rpc-server",
		"[100%] Built target llama-bench",
	} {
		p.Write([]byte(line + "\n"))
	}
	want := []int{2, 48, 49, 49, 96, 98, 99}
	if len(got) != len(want) {
		t.Fatalf("progress %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("progress %v, want %v (cmake's own counter, never decreasing, below 100 until done)", got, want)
		}
	}
}
