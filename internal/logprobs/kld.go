// Package logprobs measures quality through a server's prompt
// log-probabilities: vLLM's `prompt_logprobs` and OpenAI's `echo` with
// `logprobs` on /v1/completions give, for each token of a prompt, its own
// log-probability and those of the k most likely tokens at its position —
// not the whole distribution over the vocabulary that llama-perplexity
// and node-llama-cpp's runner keep.
//
// From those it computes what llama-perplexity --kl-divergence computes
// (perplexity, KL divergence, Δp, same top token) and prints it in
// llama-perplexity's format. Everything but the KL divergence is exact
// with the top k. The KL divergence is the top-k form: the divergence
// between the two distributions coarsened to the tokens whose
// probability both sides know (those in both top-k lists, and the token
// that follows) and one bucket holding the rest of the vocabulary. The
// probabilities of these buckets are exact on both sides, so by the
// log-sum inequality the top-k KLD is a lower bound of the full one,
// and it grows towards it as k grows (a larger k refines the buckets).
package logprobs

import (
	"math"
	"sort"
	"strconv"
)

// Entry is one token and its log-probability. Key names the token: its
// id in decimal (vLLM's prompt_logprobs) or its text (OpenAI's echo).
type Entry struct {
	Key string  `json:"t"`
	LP  float64 `json:"lp"`
}

// Position is what a server said of one scored position: the token that
// follows it, with its log-probability, and the top-k tokens, most likely
// first.
type Position struct {
	Next Entry   `json:"next"`
	Top  []Entry `json:"top"`
}

// minBucket keeps the "other" bucket's probability above 0 where rounding
// of probabilities that sum to 1 made it 0 or less on one side only.
const minBucket = 1e-15

// KLD is the top-k KL divergence of candidate q from baseline p at one
// position: sum over the buckets of P·ln(P/Q), the buckets being each
// token both sides know (both top-k lists, and the next token) and one
// for the rest of the vocabulary. It is never above the full KL
// divergence of the two distributions.
func KLD(p, q Position) float64 {
	qlp := make(map[string]float64, len(q.Top)+1)
	for _, e := range q.Top {
		qlp[e.Key] = e.LP
	}
	qlp[q.Next.Key] = q.Next.LP
	known := make(map[string]float64, len(p.Top)+1)
	for _, e := range p.Top {
		if lq, ok := qlp[e.Key]; ok {
			known[e.Key] = lq
		}
	}
	plp := map[string]float64{p.Next.Key: p.Next.LP}
	for _, e := range p.Top {
		plp[e.Key] = e.LP
	}
	if lq, ok := qlp[p.Next.Key]; ok && p.Next.Key == q.Next.Key {
		known[p.Next.Key] = lq
	}
	keys := make([]string, 0, len(known))
	for k := range known {
		keys = append(keys, k)
	}
	sort.Strings(keys) // the same sum, in the same order, every time
	var kld, pk, qk float64
	for _, k := range keys {
		lp, lq := plp[k], known[k]
		pp := math.Exp(lp)
		kld += pp * (lp - lq)
		pk += pp
		qk += math.Exp(lq)
	}
	po, qo := 1-pk, 1-qk
	if po > minBucket {
		kld += po * math.Log(po/math.Max(qo, minBucket))
	}
	return math.Max(kld, 0)
}

// FullKLD is the KL divergence of q from p over the whole vocabulary,
// both given as log-probabilities.
func FullKLD(p, q []float64) float64 {
	var kld float64
	for i := range p {
		if pp := math.Exp(p[i]); pp > 0 {
			kld += pp * (p[i] - q[i])
		}
	}
	return kld
}

// TopK is the position a server would report for log-probabilities lp
// over the vocabulary (token ids 0..n-1) and the next token next: the k
// most likely tokens (the lower id first among equals) and the next one.
func TopK(lp []float64, next, k int) Position {
	ids := make([]int, len(lp))
	for i := range ids {
		ids[i] = i
	}
	sort.SliceStable(ids, func(a, b int) bool { return lp[ids[a]] > lp[ids[b]] })
	k = min(k, len(ids))
	top := make([]Entry, k)
	for i := range k {
		top[i] = Entry{Key: strconv.Itoa(ids[i]), LP: lp[ids[i]]}
	}
	return Position{Next: Entry{Key: strconv.Itoa(next), LP: lp[next]}, Top: top}
}

// LogSoftmax turns logits into log-probabilities (float64 sums).
func LogSoftmax(logits []float64) []float64 {
	m := math.Inf(-1)
	for _, l := range logits {
		m = math.Max(m, l)
	}
	var s float64
	for _, l := range logits {
		s += math.Exp(l - m)
	}
	lse := m + math.Log(s)
	out := make([]float64, len(logits))
	for i, l := range logits {
		out[i] = l - lse
	}
	return out
}
