package testscripts

import (
	"os"
	"path/filepath"
	"strconv"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/rigorbench/rigor/internal/gguf"
)

func init() {
	// synthetic-gguf FILE VOCAB [TYPE]: write the tiny synthetic llama
	// (rigor's own writer, the quick start's shape at a smaller width)
	// with a VOCAB-token vocabulary in TYPE (f16 unless given): a real
	// GGUF whose header the lock reads, to serve from the stand-in hub.
	scriptCmds["synthetic-gguf"] = syntheticGGUF
}

func syntheticGGUF(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 || len(args) > 3 {
		ts.Fatalf("usage: synthetic-gguf FILE VOCAB [TYPE]")
	}
	vocab, err := strconv.Atoi(args[1])
	ts.Check(err)
	typ := "f16"
	if len(args) == 3 {
		typ = args[2]
	}
	name := ts.MkAbs(args[0])
	ts.Check(os.MkdirAll(filepath.Dir(name), 0o755))
	f, err := os.Create(name)
	ts.Check(err)
	err = gguf.WriteSynthetic(f, gguf.SyntheticSpec{Arch: "llama", Layers: 1, Embd: 32, Heads: 1, KVHeads: 1, FF: 32, Vocab: vocab, Ctx: 256, Type: typ})
	ts.Check(err)
	ts.Check(f.Close())
}
