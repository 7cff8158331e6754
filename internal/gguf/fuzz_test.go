package gguf

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// FuzzRead feeds arbitrary bytes to the reader, with and without a known
// size. It must return an error or a header, never panic, and never
// allocate much more than the input's size whatever the counts and
// lengths in it claim.
func FuzzRead(f *testing.F) {
	for _, name := range []string{"tiny-llama.head.gguf", "tiny-llama-f32.head.gguf", "tiny-llama-q8_0.head.gguf"} {
		data, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data[:4096])
		f.Add(data[:24])
		f.Add(data[:1000])
		for _, at := range []int{8, 16} { // tensor count, metadata count
			huge := bytes.Clone(data[:4096])
			binary.LittleEndian.PutUint64(huge[at:], 1<<62)
			f.Add(huge)
		}
		long := bytes.Clone(data[:4096])
		binary.LittleEndian.PutUint64(long[24:], 1<<60) // first key's length
		f.Add(long)
	}
	f.Add(allTypes(binary.LittleEndian))
	f.Add(allTypes(binary.BigEndian))
	f.Add(deepArrays(9))
	f.Add([]byte("GGUF"))

	f.Fuzz(func(t *testing.T, data []byte) {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for _, size := range []int64{0, int64(len(data))} {
			file, err := ReadWith(bytes.NewReader(data), ReadOptions{Size: size})
			if err != nil {
				continue
			}
			fa := file.Facts()
			_ = fa.Map()
			if fa.ParameterCount > 0 && len(file.Tensors) == 0 {
				t.Fatalf("parameters without tensors: %+v", fa)
			}
		}
		runtime.ReadMemStats(&after)
		// Two reads, each with a 64 KiB buffer and at most one 64 KiB
		// string chunk, plus a small multiple of the input.
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 1<<20+64*uint64(len(data)) {
			t.Fatalf("reading %d bytes allocated %d bytes", len(data), alloc)
		}
	})
}

func BenchmarkReadFacts(b *testing.B) {
	data, err := os.ReadFile("testdata/tiny-llama.head.gguf")
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		f, err := Read(bytes.NewReader(data))
		if err != nil {
			b.Fatal(err)
		}
		if f.Facts().ParameterCount != 1574144 {
			b.Fatal("wrong parameter count")
		}
	}
}

// BenchmarkWriteSynthetic writes a model of about 256 MB per type; the
// MB/s column is the writer's throughput.
func BenchmarkWriteSynthetic(b *testing.B) {
	for _, tc := range []struct {
		typ  string
		embd int
	}{{"f32", 768}, {"f16", 1024}, {"q8_0", 1536}} {
		spec := SyntheticSpec{Arch: "llama", Layers: 8, Embd: tc.embd, Heads: 8, KVHeads: 8,
			FF: tc.embd * 11 / 4 / 32 * 32, Vocab: 16000, Ctx: 2048, Type: tc.typ, Seed: 1}
		size, err := spec.Size()
		if err != nil {
			b.Fatal(err)
		}
		b.Run(tc.typ, func(b *testing.B) {
			b.SetBytes(size)
			for b.Loop() {
				if err := WriteSynthetic(&countingWriter{}, spec); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
