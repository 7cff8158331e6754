package logprobs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// llamaServer answers as llama-server does: /tokenize takes "content";
// /v1/completions ignores prompt_logprobs and echo, and gives no
// log-probabilities of the prompt.
func llamaServer(t *testing.T) *httptest.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /tokenize", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Content string `json:"content"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		toks := []int{}
		for i := range len(req.Content) {
			toks = append(toks, int(req.Content[i]))
		}
		json.NewEncoder(w).Encode(map[string]any{"tokens": toks})
	})
	mux.HandleFunc("POST /v1/completions", func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		io.WriteString(w, `{"choices":[{"text":" the","index":0,"logprobs":null,"finish_reason":"length"}],"object":"text_completion","model":"m"}`)
	})
	s := httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

// A server that gives no prompt log-probabilities (llama-server) is a
// clear error naming both ways rigor asked, with a hint.
func TestWriteBase_serverWithoutPromptLogprobs(t *testing.T) {
	s := llamaServer(t)
	c := &Client{URL: s.URL, Model: "m"}
	var out, stdout, log bytes.Buffer
	err := WriteBase(context.Background(), c, strings.Repeat("It is a truth universally acknowledged. ", 20), Job{Ctx: 64, Chunks: 2, K: 5}, &out, &stdout, &log)
	var le *Error
	if !errors.As(err, &le) {
		t.Fatalf("error %v, want a *logprobs.Error", err)
	}
	for _, want := range []string{
		"offers no prompt log-probabilities on /v1/completions",
		"with prompt_logprobs (vLLM's) it answered without prompt_logprobs (0 of 64 positions)",
		"with echo and logprobs (OpenAI's) it answered without logprobs of the echoed prompt",
	} {
		if !strings.Contains(le.Msg, want) {
			t.Errorf("error %q lacks %q", le.Msg, want)
		}
	}
	if !strings.Contains(le.Hint, "llama-server does not") {
		t.Errorf("hint %q", le.Hint)
	}
	if out.Len() != 0 {
		t.Errorf("a reference was written: %d bytes", out.Len())
	}
}

// vLLM's prompt_logprobs (a map per position holding the top k and the
// prompt's own token with its rank) read into positions: the prompt's
// token outside the top k is the next token, not one of the top.
func TestPrompt_vllmShape(t *testing.T) {
	base, _, _ := synthetic(1, 50, 0.25)
	lp := base[0]
	toks := []int{1, 40, 7}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/completions", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			PromptLogprobs int `json:"prompt_logprobs"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		type e struct {
			Logprob float64 `json:"logprob"`
			Rank    int     `json:"rank"`
		}
		pl := []any{nil}
		for _, t := range toks[1:] {
			m := map[string]e{}
			p := TopK(lp, t, req.PromptLogprobs)
			for i, x := range p.Top {
				m[x.Key] = e{x.LP, i + 1}
			}
			if _, ok := m[p.Next.Key]; !ok {
				m[p.Next.Key] = e{p.Next.LP, 40}
			}
			pl = append(pl, m)
		}
		json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{"index": 0, "text": "x", "prompt_logprobs": pl}}})
	})
	s := httptest.NewServer(mux)
	defer s.Close()
	pos, api, err := (&Client{URL: s.URL}).Prompt(context.Background(), toks, 3, "")
	if err != nil || api != APIPromptLogprobs {
		t.Fatalf("api %q, err %v", api, err)
	}
	for i := 1; i < len(toks); i++ {
		want := TopK(lp, toks[i], 3)
		if got, _ := json.Marshal(pos[i]); string(got) != string(must(json.Marshal(want))) {
			t.Errorf("position %d: %s, want %s", i, got, must(json.Marshal(want)))
		}
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

// fakeVLLM answers /tokenize (one token per byte, vocabulary 300) and
// prompt_logprobs from synthetic distributions, one per previous token.
func fakeVLLM(t *testing.T) *httptest.Server {
	dists, _, _ := synthetic(300, 300, 0.25)
	mux := http.NewServeMux()
	mux.HandleFunc("POST /tokenize", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Prompt string `json:"prompt"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		toks := []int{}
		for i := range len(req.Prompt) {
			toks = append(toks, int(req.Prompt[i]))
		}
		json.NewEncoder(w).Encode(map[string]any{"tokens": toks, "count": len(toks)})
	})
	mux.HandleFunc("POST /v1/completions", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Prompt         []int `json:"prompt"`
			PromptLogprobs int   `json:"prompt_logprobs"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		type e struct {
			Logprob float64 `json:"logprob"`
			Rank    int     `json:"rank"`
		}
		pl := []any{nil}
		for i := 1; i < len(req.Prompt); i++ {
			p := TopK(dists[req.Prompt[i-1]], req.Prompt[i], req.PromptLogprobs)
			m := map[string]e{p.Next.Key: {p.Next.LP, 300}}
			for j, x := range p.Top {
				m[x.Key] = e{x.LP, j + 1}
			}
			pl = append(pl, m)
		}
		json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{"index": 0, "text": "x", "prompt_logprobs": pl}}})
	})
	s := httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

// The size said before a reference is written is about the size written
// (within a quarter), and a model scored against its own reference
// diverges by exactly 0.
func TestReference_sizeAndSelf(t *testing.T) {
	s := fakeVLLM(t)
	c := &Client{URL: s.URL, Model: "m"}
	text := strings.Repeat("Light is propagated from luminous bodies in time. ", 40)
	for _, k := range []int{5, 20} {
		job := Job{Ctx: 128, Chunks: 4, K: k}
		var ref, stdout, log bytes.Buffer
		if err := WriteBase(context.Background(), c, text, job, &ref, &stdout, &log); err != nil {
			t.Fatal(err)
		}
		said := ReferenceBytes(int64(k), 128, 4)
		if r := float64(ref.Len()) / float64(said); r < 0.75 || r > 1.25 {
			t.Errorf("k=%d: %d bytes written, %d said", k, ref.Len(), said)
		}
		var out bytes.Buffer
		if err := Score(context.Background(), c, &ref, job, &out, &log); err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"api: prompt_logprobs", "Mean    KLD: 0.000000000 ± 0.000000000", "Same top p: 100.000 ± 0.000 %"} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("k=%d: the score lacks %q:\n%s", k, want, out.String())
			}
		}
	}
}

// A server that refuses vLLM's prompt_logprobs (OpenAI's answer to an
// argument it does not know) and answers echo with logprobs is read
// through echo: tokens by their text, the top k per position.
func TestPrompt_echo(t *testing.T) {
	base, _, _ := synthetic(1, 40, 0.25)
	lp := base[0]
	text := func(id int) string { return string(rune('a' + id)) }
	toks := []int{3, 17, 30, 2}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/completions", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			PromptLogprobs *int `json:"prompt_logprobs"`
			Echo           bool `json:"echo"`
			Logprobs       int  `json:"logprobs"`
			MaxTokens      int  `json:"max_tokens"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		if req.PromptLogprobs != nil {
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"error":{"message":"Unrecognized request argument supplied: prompt_logprobs","type":"invalid_request_error","param":null,"code":null}}`)
			return
		}
		if !req.Echo || req.MaxTokens != 0 {
			t.Errorf("echo %v, max_tokens %d: want echo with max_tokens 0", req.Echo, req.MaxTokens)
		}
		tokens := []string{}
		tlp := []any{nil}
		top := []any{nil}
		for i, id := range toks {
			tokens = append(tokens, text(id))
			if i == 0 {
				continue
			}
			tlp = append(tlp, lp[id])
			m := map[string]float64{text(id): lp[id]}
			for _, e := range TopK(lp, id, req.Logprobs).Top {
				n := 0
				for c := range e.Key {
					n = n*10 + int(e.Key[c]-'0')
				}
				m[text(n)] = e.LP
			}
			top = append(top, m)
		}
		json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{"index": 0, "text": "",
			"logprobs": map[string]any{"tokens": tokens, "token_logprobs": tlp, "top_logprobs": top, "text_offset": []int{0, 1, 2, 3}}}}})
	})
	s := httptest.NewServer(mux)
	defer s.Close()
	pos, api, err := (&Client{URL: s.URL}).Prompt(context.Background(), toks, 4, "")
	if err != nil || api != APIEcho {
		t.Fatalf("api %q, err %v", api, err)
	}
	for i := 1; i < len(toks); i++ {
		want := TopK(lp, toks[i], 4)
		if pos[i].Next.Key != text(toks[i]) || pos[i].Next.LP != lp[toks[i]] || len(pos[i].Top) != 4 || pos[i].Top[0].LP != want.Top[0].LP {
			t.Errorf("position %d: %+v, want next %s %g and the top 4 of %+v", i, pos[i], text(toks[i]), lp[toks[i]], want.Top)
		}
	}
}
