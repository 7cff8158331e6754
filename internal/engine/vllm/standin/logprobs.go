package standin

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"
)

// The stand-in's model: a small language model over bytes, computed, not
// stored, so that prompt log-probabilities are those of a real
// distribution. Token 1 is BOS, 2 EOS, 0 unknown; byte b is token b+3.
// The logits at a position depend on the two tokens before it: a
// Zipf-shaped distribution whose order is drawn from them. A server
// started with --kv-cache-dtype fp8* rounds the logits to 1/8 and one
// with --quantization to 1/2, each with a little noise, as a lower
// precision changes them: its KL divergence from the unquantized server
// is real and not 0, and the same server against itself is exactly 0.
const (
	vocabSize = 259
	bosToken  = 1
)

// lm is a stand-in model at a precision.
type lm struct {
	step float64 // 0: exact
}

func modelOf(flags map[string]string) lm {
	switch {
	case flags["--quantization"] != "":
		return lm{step: 0.5}
	case strings.HasPrefix(flags["--kv-cache-dtype"], "fp8"):
		return lm{step: 0.125}
	}
	return lm{}
}

func mix(a ...uint64) uint64 {
	h := fnv.New64a()
	var b [8]byte
	for _, x := range a {
		for i := range b {
			b[i] = byte(x >> (8 * i))
		}
		h.Write(b[:])
	}
	return h.Sum64()
}

// logprobs are the log-probabilities of the token after prev2, prev1.
func (m lm) logprobs(prev2, prev1 int) []float64 {
	order := make([]int, vocabSize)
	for i := range order {
		order[i] = i
	}
	seed := mix(uint64(prev2), uint64(prev1))
	// A Fisher-Yates shuffle driven by the context, with the printable
	// bytes favoured: the distribution looks like text's.
	for i := vocabSize - 1; i > 0; i-- {
		j := int(mix(seed, uint64(i)) % uint64(i+1))
		order[i], order[j] = order[j], order[i]
	}
	sort.SliceStable(order, func(a, b int) bool { return printable(order[a]) && !printable(order[b]) })
	logits := make([]float64, vocabSize)
	for rank, t := range order {
		u := float64(mix(seed, uint64(t), 7)%1000)/1000 - 0.5
		logits[t] = -1.1*math.Log(float64(rank+1)) + 0.6*u
		if m.step > 0 {
			n := float64(mix(seed, uint64(t), 11)%1000)/1000 - 0.5
			logits[t] = math.Round(logits[t]/m.step)*m.step + m.step/4*n
		}
	}
	mx := math.Inf(-1)
	for _, l := range logits {
		mx = math.Max(mx, l)
	}
	var s float64
	for _, l := range logits {
		s += math.Exp(l - mx)
	}
	lse := mx + math.Log(s)
	for i := range logits {
		logits[i] -= lse
	}
	return logits
}

func printable(t int) bool { return t >= 3+32 && t < 3+127 }

func tokenize(text string, special bool) []int {
	var out []int
	if special {
		out = append(out, bosToken)
	}
	for i := 0; i < len(text); i++ {
		out = append(out, int(text[i])+3)
	}
	return out
}

// decoded is a token's text as vLLM decodes it; bytes that are not
// printable ASCII as sentencepiece's byte fallback writes them.
func decoded(t int) string {
	switch {
	case t == bosToken:
		return "<s>"
	case t == 2:
		return "</s>"
	case t < 3:
		return "<unk>"
	case printable(t):
		return string(rune(t - 3))
	}
	return fmt.Sprintf("<0x%02X>", t-3)
}

// tokenizeHandler is vLLM's POST /tokenize.
func tokenizeHandler(name string, maxLen int) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model            string `json:"model"`
			Prompt           string `json:"prompt"`
			AddSpecialTokens *bool  `json:"add_special_tokens"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Prompt == "" {
			badRequest(w, "Either prompt or messages must be provided.", "prompt")
			return
		}
		toks := tokenize(req.Prompt, req.AddSpecialTokens == nil || *req.AddSpecialTokens)
		json.NewEncoder(w).Encode(map[string]any{"count": len(toks), "max_model_len": maxLen, "tokens": toks, "token_strs": nil})
	}
}

func badRequest(w http.ResponseWriter, msg, param string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": msg, "type": "BadRequestError", "param": param, "code": 400}})
}

// promptRequest is a /v1/completions request that asks for the prompt's
// log-probabilities: prompt_logprobs (vLLM's), or echo with logprobs.
type promptRequest struct {
	Prompt         json.RawMessage `json:"prompt"`
	PromptLogprobs *int            `json:"prompt_logprobs"`
	Echo           bool            `json:"echo"`
	Logprobs       *int            `json:"logprobs"`
	MaxTokens      *int            `json:"max_tokens"`
	Stream         bool            `json:"stream"`
}

func (p promptRequest) wantsPrompt() bool {
	return p.PromptLogprobs != nil || p.Echo && p.Logprobs != nil
}

// rankOf is the 1-based rank of token t in lp (vLLM's Logprob.rank).
func rankOf(lp []float64, t int) int {
	r := 1
	for i, v := range lp {
		if v > lp[t] || v == lp[t] && i < t {
			r++
		}
	}
	return r
}

func topOf(lp []float64, k int) []int {
	ids := make([]int, len(lp))
	for i := range ids {
		ids[i] = i
	}
	sort.SliceStable(ids, func(a, b int) bool { return lp[ids[a]] > lp[ids[b]] })
	return ids[:min(k, len(ids))]
}

// answerPrompt answers a request for prompt log-probabilities without
// streaming, in vLLM's shapes: choices[0].prompt_logprobs (null, then
// per token a map from token id to {logprob, rank, decoded_token}
// holding the top k and the prompt's token), or, for echo,
// choices[0].logprobs with the prompt's tokens as text
// (vllm/entrypoints/openai/completion/protocol.py).
func answerPrompt(w http.ResponseWriter, name string, m lm, maxLogprobs int, req promptRequest) {
	if req.Stream {
		badRequest(w, "`prompt_logprobs` are not available when `stream=True`.", "prompt_logprobs")
		return
	}
	var toks []int
	var text string
	if json.Unmarshal(req.Prompt, &toks) != nil {
		if json.Unmarshal(req.Prompt, &text) != nil || text == "" {
			badRequest(w, "Either prompt or prompt_embeds must be provided and non-empty.", "prompt")
			return
		}
		toks = tokenize(text, true)
	}
	k := 0
	if req.PromptLogprobs != nil {
		k = *req.PromptLogprobs
	} else {
		k = *req.Logprobs
	}
	if k > maxLogprobs {
		badRequest(w, fmt.Sprintf("Requested prompt logprobs of %d, which is greater than max allowed: %d", k, maxLogprobs), "prompt_logprobs")
		return
	}
	for _, t := range toks {
		if t < 0 || t >= vocabSize {
			badRequest(w, fmt.Sprintf("Token id %d is out of vocabulary", t), "prompt")
			return
		}
	}
	type logprob struct {
		Logprob float64 `json:"logprob"`
		Rank    int     `json:"rank"`
		Decoded string  `json:"decoded_token"`
	}
	choice := map[string]any{"index": 0, "finish_reason": "length", "stop_reason": nil}
	var sb strings.Builder
	for _, t := range toks[1:] {
		sb.WriteString(decoded(t))
	}
	if req.PromptLogprobs != nil {
		pl := make([]map[string]logprob, len(toks))
		for i := 1; i < len(toks); i++ {
			prev2 := 0
			if i >= 2 {
				prev2 = toks[i-2]
			}
			lp := m.logprobs(prev2, toks[i-1])
			e := map[string]logprob{}
			for r, t := range topOf(lp, k) {
				e[strconv.Itoa(t)] = logprob{lp[t], r + 1, decoded(t)}
			}
			e[strconv.Itoa(toks[i])] = logprob{lp[toks[i]], rankOf(lp, toks[i]), decoded(toks[i])}
			pl[i] = e
		}
		choice["prompt_logprobs"] = pl
		choice["prompt_token_ids"] = toks
		choice["text"] = " t0"
	} else {
		n := len(toks)
		tokens := make([]string, n)
		tlp := make([]*float64, n)
		top := make([]map[string]float64, n)
		offsets := make([]int, n)
		off := 0
		for i := range n {
			tokens[i] = decoded(toks[i])
			offsets[i] = off
			off += len(tokens[i])
			if i == 0 {
				continue
			}
			prev2 := 0
			if i >= 2 {
				prev2 = toks[i-2]
			}
			lp := m.logprobs(prev2, toks[i-1])
			v := lp[toks[i]]
			tlp[i] = &v
			e := map[string]float64{}
			for _, t := range topOf(lp, k) {
				e[decoded(t)] = lp[t]
			}
			e[tokens[i]] = v
			top[i] = e
		}
		choice["logprobs"] = map[string]any{"text_offset": offsets, "token_logprobs": tlp, "tokens": tokens, "top_logprobs": top}
		choice["text"] = decoded(toks[0]) + sb.String()
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{
		"id": "cmpl-standin", "object": "text_completion", "created": 1785579300, "model": name,
		"choices": []any{choice},
		"usage":   map[string]any{"prompt_tokens": len(toks), "total_tokens": len(toks) + 1, "completion_tokens": 1},
	})
}
