package gitsrc_test

import (
	"fmt"

	"github.com/rigorbench/rigor/internal/gitsrc"
)

func ExampleMirrorPath() {
	fmt.Println(gitsrc.MirrorPath("/home/me/.cache/rigor", "https://github.com/ggml-org/llama.cpp"))
	// Output: /home/me/.cache/rigor/git/github.com-ggml-org-llama.cpp-8f4d2163b5e6
}
