/* ggml's base library of the test engine: a shared library in build/lib/
 * with versioned names (libggml-base.so -> libggml-base.so.0 ->
 * libggml-base.so.0.1.0), which libllama loads. */
int testengine_ggml_base_init(void) { return 0; }
