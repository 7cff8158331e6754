/* libllama of the test engine: a shared library beside the programs
 * (build/bin/libllama.so), as llama.cpp builds it, which llama-bench loads
 * at start. It loads ggml's base library in turn (build/lib/). */
extern int testengine_ggml_base_init(void);

int testengine_llama_init(void) { return testengine_ggml_base_init(); }
