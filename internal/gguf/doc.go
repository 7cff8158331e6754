// Package gguf reads the header of GGUF model files and writes synthetic
// llama models, so that a lock or result record can say what a model hash
// stands for and an experiment can run on a model that needs no download.
//
// Reading:
//
//  1. [Read] or [ReadFile] decodes the magic, version (2 or 3, either byte
//     order), the metadata key-value pairs and the tensor table, and stops
//     there: tensor data is never read, so a 100 GB file costs a few
//     kilobytes of I/O.
//  2. Every count and length in the file is untrusted: it is checked
//     against limits ([ReadOptions]) and, for [ReadFile], against the bytes
//     left in the file before anything is allocated from it. Long arrays
//     such as the tokenizer vocabulary are summarized by their length.
//  3. [File.Facts] condenses the header into [Facts] (architecture, name,
//     parameter count, file type, quantization mix, context length, layer
//     count, …) and [Facts.Map] gives them as a JSON-friendly map for
//     results.File.GGUF.
//
// Writing:
//
//  1. [SyntheticSpec] mirrors the schema's `model: synthetic: {…}`;
//     [SyntheticSpec.Validate] names the field of every impossible shape.
//  2. [WriteSynthetic] streams a GGUF v3 file laid out like the tiny-llama
//     fixtures that llama.cpp and node-llama-cpp load, with weights drawn
//     from a seeded generator: the same spec always gives the same bytes,
//     on every platform, so a lockfile can pin their sha256.
package gguf
