// Package nodellama is the engine for node-llama-cpp: real llama.cpp shipped
// inside npm packages, driven by a bench runner that rigor embeds.
//
// The pipeline:
//
//  1. [Install] puts node-llama-cpp and its platform package (prebuilt
//     llama.cpp) into the content-addressed engine cache, verifies their
//     integrity against the lock and writes the runner beside them.
//  2. [Engine.Plan] builds the argv of the one bench process: node running
//     the runner ([RunnerFile]) with llama-bench-like arguments.
//  3. The runner measures like llama-bench and prints llama-bench JSON rows,
//     plus llama.cpp's own performance counters per repetition.
//  4. [ParseOutput] turns the process's output into an [Outcome]: a status,
//     the rows and their metrics (tokSPrompt, tokSOut, tokSTotal, with raw
//     samples), and the engine-counter metrics beside them.
package nodellama
