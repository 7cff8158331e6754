package logprobs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
)

// The APIs that give a prompt's log-probabilities on /v1/completions.
const (
	// APIPromptLogprobs is vLLM's extra parameter prompt_logprobs: per
	// prompt token a map from token id to {logprob, rank,
	// decoded_token} holding the top k and the prompt's own token
	// (vllm/entrypoints/openai/completion/protocol.py,
	// CompletionResponseChoice.prompt_logprobs).
	APIPromptLogprobs = "prompt_logprobs"
	// APIEcho is OpenAI's echo with logprobs (and max_tokens 0): the
	// prompt's tokens as text, their log-probabilities and the top k per
	// position, keyed by the token's text (CompletionLogProbs).
	APIEcho = "echo"
)

// Client asks an OpenAI-compatible server for prompt log-probabilities.
type Client struct {
	// URL is the server's base URL, without /v1.
	URL    string
	Model  string
	APIKey string
	HTTP   *http.Client
}

// Error is a server's refusal, with its hint.
type Error struct {
	Msg, Hint string
}

func (e *Error) Error() string { return e.Msg }

func (c *Client) post(ctx context.Context, path string, body any) (int, []byte, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return 0, nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(c.URL, "/")+path, bytes.NewReader(b))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if c.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.APIKey)
	}
	hc := c.HTTP
	if hc == nil {
		hc = &http.Client{Transport: &http.Transport{Proxy: nil}}
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(io.LimitReader(resp.Body, 1<<30))
	return resp.StatusCode, out, err
}

// serverMessage is the error message in a server's answer: OpenAI's and
// vLLM's {"error": {"message": …}}, vLLM's older {"message": …}, or the
// body's start.
func serverMessage(status int, body []byte) string {
	var e struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
	}
	msg := ""
	if json.Unmarshal(body, &e) == nil {
		var inner struct {
			Message string `json:"message"`
		}
		var s string
		switch {
		case json.Unmarshal(e.Error, &inner) == nil && inner.Message != "":
			msg = inner.Message
		case json.Unmarshal(e.Error, &s) == nil && s != "":
			msg = s
		case e.Message != "":
			msg = e.Message
		}
	}
	if msg == "" {
		msg = strings.TrimSpace(string(body))
		if len(msg) > 200 {
			msg = msg[:200] + "…"
		}
	}
	return fmt.Sprintf("HTTP %d: %s", status, msg)
}

// Tokenize returns the server's tokens of text: vLLM's POST /tokenize
// ({"model", "prompt"}), else llama-server's ({"content"}).
func (c *Client) Tokenize(ctx context.Context, text string) ([]int, error) {
	var answers []string
	for _, body := range []any{
		map[string]any{"model": c.Model, "prompt": text},
		map[string]any{"content": text},
	} {
		status, b, err := c.post(ctx, "/tokenize", body)
		if err != nil {
			return nil, fmt.Errorf("tokenizing the corpus: %w", err)
		}
		if status == http.StatusOK {
			var r struct {
				Tokens []int `json:"tokens"`
			}
			if err := json.Unmarshal(b, &r); err == nil && len(r.Tokens) > 0 {
				return r.Tokens, nil
			}
			answers = append(answers, "HTTP 200 without tokens")
			continue
		}
		answers = append(answers, serverMessage(status, b))
	}
	return nil, &Error{Msg: fmt.Sprintf("the server at %s tokenizes nothing: POST /tokenize answered %s", c.URL, strings.Join(answers, "; then ")),
		Hint: "rigor cuts the corpus into chunks of ctx tokens with the server's own tokenizer: vLLM and llama-server offer /tokenize"}
}

// Prompt returns the positions of a prompt of tokens as the server scores
// them: element i (from 1) is the distribution of token i given those
// before it, with the top k. api is APIPromptLogprobs or APIEcho; ""
// tries prompt_logprobs, then echo, and returns the one that answered.
func (c *Client) Prompt(ctx context.Context, tokens []int, k int, api string) ([]Position, string, error) {
	if api != "" {
		pos, err := c.prompt(ctx, tokens, k, api)
		return pos, api, err
	}
	pos, err1 := c.prompt(ctx, tokens, k, APIPromptLogprobs)
	if err1 == nil {
		return pos, APIPromptLogprobs, nil
	}
	var refused *refusal
	if errors.As(err1, &refused) && refused.limit {
		return nil, "", &Error{Msg: fmt.Sprintf("the server at %s gives fewer log-probabilities than quality.measure.topK %d: asked for prompt_logprobs, it answered %s", c.URL, k, refused.msg),
			Hint: "lower quality.measure.topK, or start the server with a larger --max-logprobs (vLLM's default is 20)"}
	}
	pos, err2 := c.prompt(ctx, tokens, k, APIEcho)
	if err2 == nil {
		return pos, APIEcho, nil
	}
	return nil, "", &Error{
		Msg: fmt.Sprintf("the server at %s offers no prompt log-probabilities on /v1/completions: with prompt_logprobs (vLLM's) %v; with echo and logprobs (OpenAI's) %v", c.URL, err1, err2),
		Hint: "quality.measure needs each prompt token's log-probability and the top k of its position: vLLM gives them (prompt_logprobs), " +
			"llama-server does not; measure with a server that does, or without quality.measure",
	}
}

// refusal is a server's error answer; limit when it refused k as more
// log-probabilities than it returns.
type refusal struct {
	msg   string
	limit bool
}

func (r *refusal) Error() string { return "it answered " + r.msg }

func (c *Client) prompt(ctx context.Context, tokens []int, k int, api string) ([]Position, error) {
	body := map[string]any{"model": c.Model, "prompt": tokens, "temperature": 0}
	if api == APIPromptLogprobs {
		body["max_tokens"], body["prompt_logprobs"] = 1, k
	} else {
		body["max_tokens"], body["echo"], body["logprobs"] = 0, true, k
	}
	status, b, err := c.post(ctx, "/v1/completions", body)
	if err != nil {
		return nil, err
	}
	if status != http.StatusOK {
		msg := serverMessage(status, b)
		return nil, &refusal{msg: msg, limit: strings.Contains(msg, "greater than max allowed")}
	}
	var r struct {
		Choices []struct {
			PromptLogprobs []map[string]struct {
				Logprob float64 `json:"logprob"`
				Rank    *int    `json:"rank"`
			} `json:"prompt_logprobs"`
			Logprobs *struct {
				Tokens        []string             `json:"tokens"`
				TokenLogprobs []*float64           `json:"token_logprobs"`
				TopLogprobs   []map[string]float64 `json:"top_logprobs"`
			} `json:"logprobs"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(b, &r); err != nil || len(r.Choices) == 0 {
		return nil, fmt.Errorf("it answered HTTP 200 without choices")
	}
	ch := r.Choices[0]
	out := make([]Position, len(tokens))
	switch api {
	case APIPromptLogprobs:
		if len(ch.PromptLogprobs) != len(tokens) {
			return nil, fmt.Errorf("it answered without prompt_logprobs (%d of %d positions)", len(ch.PromptLogprobs), len(tokens))
		}
		for i := 1; i < len(tokens); i++ {
			m := ch.PromptLogprobs[i]
			next := strconv.Itoa(tokens[i])
			e, ok := m[next]
			if !ok {
				return nil, fmt.Errorf("its prompt_logprobs at position %d lack the prompt's token %s", i, next)
			}
			out[i].Next = Entry{Key: next, LP: e.Logprob}
			var top []Entry
			for key, v := range m {
				if v.Rank != nil && *v.Rank > k {
					continue // the prompt's own token, outside the top k
				}
				top = append(top, Entry{Key: key, LP: v.Logprob})
			}
			out[i].Top = sortTop(top, k)
		}
	default:
		lp := ch.Logprobs
		if lp == nil || len(lp.Tokens) < len(tokens) || len(lp.TokenLogprobs) < len(tokens) || len(lp.TopLogprobs) < len(tokens) {
			return nil, fmt.Errorf("it answered without logprobs of the echoed prompt")
		}
		for i := 1; i < len(tokens); i++ {
			if lp.TokenLogprobs[i] == nil || lp.TopLogprobs[i] == nil {
				return nil, fmt.Errorf("it answered without logprobs at position %d of the echoed prompt", i)
			}
			out[i].Next = Entry{Key: lp.Tokens[i], LP: *lp.TokenLogprobs[i]}
			var top []Entry
			for key, v := range lp.TopLogprobs[i] {
				top = append(top, Entry{Key: key, LP: v})
			}
			out[i].Top = sortTop(top, k)
		}
	}
	return out, nil
}

// sortTop orders a position's entries most likely first (by key among
// equals) and keeps k.
func sortTop(top []Entry, k int) []Entry {
	sort.Slice(top, func(a, b int) bool {
		if top[a].LP != top[b].LP {
			return top[a].LP > top[b].LP
		}
		return top[a].Key < top[b].Key
	})
	if len(top) > k {
		top = top[:k]
	}
	return top
}
