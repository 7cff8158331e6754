package nodellama

import (
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
)

// runnerJS is the bench runner, written into every install as [RunnerFile].
//
//go:embed runner/rigor-bench.mjs
var runnerJS []byte

// serveJS is the OpenAI-compatible server of serve experiments, written
// into every install as [ServeFile].
//
//go:embed runner/rigor-serve.mjs
var serveJS []byte

// qualityJS is the quality runner (perplexity and KL divergence from the
// model's logits), written into every install as [QualityFile].
//
//go:embed runner/rigor-quality.mjs
var qualityJS []byte

// QualityFile is the quality runner's file name inside the engine install.
const QualityFile = "rigor-quality.mjs"

// ServeFile is the server's file name inside the engine install.
const ServeFile = "rigor-serve.mjs"

// Runner returns the bench runner's source (JavaScript, an ES module).
func Runner() []byte { return append([]byte(nil), runnerJS...) }

// RunnerDigest is the sha256 of the runner's source, in hex; records can
// name the exact runner that measured them.
func RunnerDigest() string {
	sum := sha256.Sum256(runnerJS)
	return hex.EncodeToString(sum[:])
}
