// Command vllm is the stand-in vLLM CLI as a binary, for experiments with
// `source: path` in tests: go build -o DIR/vllm ./engine/vllm/standin/vllm
package main

import (
	"os"

	"github.com/rigorbench/rigor/internal/engine/vllm/standin"
)

func main() { os.Exit(standin.Main()) }
