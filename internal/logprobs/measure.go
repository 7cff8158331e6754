package logprobs

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
)

// Format is the first field of a reference file: a header line (JSON),
// then one line per scored position (a [Position]).
const Format = "rigor-topk1"

// Header is a reference file's first line: how it was computed, and the
// tokens of its chunks, which the scoring run sends as they are (the
// candidate is scored on the baseline's tokens, as llama-perplexity's
// base file does).
type Header struct {
	Format string `json:"format"`
	API    string `json:"api"`
	TopK   int    `json:"topK"`
	Ctx    int    `json:"ctx"`
	Chunks int    `json:"chunks"`
	Tokens []int  `json:"tokens"`
}

// Job is what a measurement is asked for: chunks of Ctx tokens, at most
// Chunks of them, the top K log-probabilities, through API ("" finds
// one).
type Job struct {
	Ctx, Chunks, K int
	API            string
}

// ReferenceBytes estimates a reference file's size: per scored token a
// JSON line of k+1 entries of about 37 bytes ({"t":"1234","lp":-5.551115123125783},),
// and the chunks' tokens (TestReference_sizeAndSelf holds it within a
// quarter of what is written).
func ReferenceBytes(k, ctx, chunks int64) int64 {
	return 200 + chunks*ctx*4 + chunks*(ctx-1-ctx/2)*((k+1)*37+20)
}

// scored is the part of a chunk's positions that is scored: the second
// half, as llama-perplexity scores it (positions first+1 … ctx-1, each
// the distribution of its token given those before it).
func scored(pos []Position, ctx int) []Position { return pos[ctx/2+1 : ctx] }

// WriteBase computes the baseline's reference of corpus and writes it to
// out; it prints llama-perplexity's "[1]x.xxxx,…" line to stdout and
// "Final estimate: PPL = … +/- …" to log.
func WriteBase(ctx context.Context, c *Client, corpus string, job Job, out io.Writer, stdout, log io.Writer) error {
	tokens, err := c.Tokenize(ctx, corpus)
	if err != nil {
		return err
	}
	if len(tokens) < 2*job.Ctx {
		return fmt.Errorf("you need at least %d tokens to evaluate perplexity with a context of %d; the corpus tokenizes to only %d tokens", 2*job.Ctx, job.Ctx, len(tokens))
	}
	n := len(tokens) / job.Ctx
	if job.Chunks > 0 {
		n = min(n, job.Chunks)
	}
	w := bufio.NewWriter(out)
	h := Header{Format: Format, API: job.API, TopK: job.K, Ctx: job.Ctx, Chunks: n, Tokens: tokens[:n*job.Ctx]}
	var lines [][]Position
	var nll, nll2 float64
	count := 0
	for i := range n {
		pos, api, err := c.Prompt(ctx, h.Tokens[i*job.Ctx:(i+1)*job.Ctx], job.K, h.API)
		if err != nil {
			return err
		}
		if h.API == "" {
			fmt.Fprintf(log, "log-probabilities from /v1/completions with %s\n", describe(api, job.K))
		}
		h.API = api
		sc := scored(pos, job.Ctx)
		lines = append(lines, sc)
		for _, p := range sc {
			x := -p.Next.LP
			nll += x
			nll2 += x * x
			count++
		}
		fmt.Fprintf(stdout, "[%d]%.4f,", i+1, math.Exp(nll/float64(count)))
	}
	fmt.Fprintln(stdout)
	enc := json.NewEncoder(w)
	if err := enc.Encode(h); err != nil {
		return err
	}
	for _, sc := range lines {
		for _, p := range sc {
			if err := enc.Encode(p); err != nil {
				return err
			}
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	m, m2 := nll/float64(count), nll2/float64(count)
	ppl := math.Exp(m)
	if v := m2 - m*m; v > 0 {
		fmt.Fprintf(log, "Final estimate: PPL = %.4f +/- %.5f\n", ppl, math.Sqrt(v/float64(count-1))*ppl)
	} else {
		fmt.Fprintln(log, "Unexpected negative standard deviation of log(prob)")
	}
	return nil
}

func describe(api string, k int) string {
	if api == APIEcho {
		return fmt.Sprintf("echo and logprobs=%d (OpenAI's)", k)
	}
	return fmt.Sprintf("prompt_logprobs=%d (vLLM's)", k)
}

// Score scores the server against the reference in base, printing
// llama-perplexity --kl-divergence's table and statistics to stdout (the
// KL divergence in its top-k form) after a line naming the API.
func Score(ctx context.Context, c *Client, base io.Reader, job Job, stdout, log io.Writer) error {
	dec := json.NewDecoder(bufio.NewReaderSize(base, 1<<20))
	var h Header
	if err := dec.Decode(&h); err != nil || h.Format != Format {
		return fmt.Errorf("the reference does not look like rigor's top-k log-probabilities (%s)", Format)
	}
	if h.Ctx != job.Ctx {
		return fmt.Errorf("the reference has been computed with a context of %d, while the current context is %d", h.Ctx, job.Ctx)
	}
	if h.TopK != job.K {
		return fmt.Errorf("the reference holds the top %d log-probabilities, while this measurement asks for %d", h.TopK, job.K)
	}
	fmt.Fprintf(stdout, "api: %s\n", h.API)
	fmt.Fprintf(log, "log-probabilities from /v1/completions with %s\n", describe(h.API, job.K))
	s := NewScorer(stdout)
	for i := range h.Chunks {
		pos, _, err := c.Prompt(ctx, h.Tokens[i*h.Ctx:(i+1)*h.Ctx], h.TopK, h.API)
		if err != nil {
			return err
		}
		for j, q := range scored(pos, h.Ctx) {
			var p Position
			if err := dec.Decode(&p); err != nil {
				return fmt.Errorf("the reference ends at chunk %d: %v", i+1, err)
			}
			if p.Next.Key != q.Next.Key {
				return fmt.Errorf("chunk %d, position %d: the server names the prompt's token %q, the reference %q: not the same tokenizer", i+1, h.Ctx/2+1+j, q.Next.Key, p.Next.Key)
			}
			s.Add(p, q)
		}
		s.EndChunk()
	}
	s.Finish(h.TopK)
	return nil
}
