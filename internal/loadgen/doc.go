// Package loadgen is rigor's load generator for OpenAI-compatible servers:
// it streams /v1/completions or /v1/chat/completions over server-sent
// events and measures every request the way vLLM's `bench serve` does, so
// that the figures are comparable with it.
//
// The pipeline:
//
//  1. [Prompts] draws each request's prompt and output length from a
//     recorded seed (a fixed length, or uniform within ±rangeRatio).
//  2. [Run] sends the warm-up requests (not measured), then the measured
//     ones: arrivals at a Poisson rate (gamma intervals of shape
//     burstiness, as vLLM) or all at once, each waiting for one of the
//     concurrency slots before it is sent.
//  3. Each request records, from the moment it was sent: TTFT (the first
//     token chunk), every inter-token gap (ITL: the time between
//     successive token chunks), the end-to-end latency (the last token
//     chunk), the prompt and output token counts (the server's usage when
//     it reports one, else the words sent and the chunks that carried
//     text), and how it ended ([Outcome]). A token chunk is any event
//     whose choices list is not empty, as vLLM's bench serve counts them
//     (vllm/benchmarks/lib/endpoint_request_func.py): a chat's role-only
//     delta and a chunk of empty text are tokens, a usage chunk with
//     empty choices is not. Unlike vLLM, a stream that ends without
//     [DONE] fails (vLLM accepts it).
//  4. [Summarize] turns the requests into vLLM's aggregates: duration,
//     completed and failed, request and token throughputs, goodput
//     against the SLOs, and mean, median, standard deviation and
//     percentiles (numpy's linear interpolation) of TTFT, TPOT, ITL and
//     E2EL. TPOT of a request is (latency − TTFT) / (output tokens − 1),
//     defined for requests with more than one output token.
//
// Faults are data: a refused connection, an HTTP error status (429, 500),
// a malformed event, a stream that ends without [DONE], and a request
// slower than its timeout each end that request with its outcome
// recorded; the others go on, and what was measured is kept.
package loadgen
