// Package llamabench reads llama-bench's output: the JSON and JSONL rows
// that mainline llama.cpp and ik_llama.cpp print with -o json/jsonl, the
// verdict on one process from its stdout, stderr and exit status, and the
// mapping between llama-bench flags and the JSON fields that report them,
// used to split a one-process sweep into its points and to check that the
// engine applied the flags it was given.
//
// The format is shared: llama.cpp and ik_llama.cpp (engine/llamacpp) print
// it, rigor's node-llama-cpp runner (engine/nodellama) prints it, and
// `rigor import` reads it. It is not an engine family.
package llamabench
