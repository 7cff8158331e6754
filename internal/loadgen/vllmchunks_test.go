package loadgen

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// kinds is a stand-in server that streams every kind of chunk a server
// sends: an SSE comment (a ping), a role-only delta (chat; content null),
// a chunk whose text is empty (a special token), a chunk whose choices list
// is empty, text chunks, and a usage chunk with empty choices, then [DONE].
// text is how many text chunks it sends; usage false leaves the usage out.
func kinds(text int, usage bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		chat := strings.HasSuffix(r.URL.Path, "/chat/completions")
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		send := func(s string) {
			fmt.Fprint(w, s)
			fl.Flush()
		}
		tok := func(s string) string {
			if chat {
				return fmt.Sprintf(`data: {"choices":[{"index":0,"delta":{"content":%s}}]}`+"\n\n", s)
			}
			return fmt.Sprintf(`data: {"choices":[{"index":0,"text":%s}]}`+"\n\n", s)
		}
		send(": ping\n\n")
		if chat {
			send(`data: {"choices":[{"index":0,"delta":{"role":"assistant","content":null}}]}` + "\n\n")
		}
		send(tok(`""`))
		send(`data: {"choices":[]}` + "\n\n")
		for i := range text {
			send(tok(fmt.Sprintf(`" t%d"`, i)))
		}
		send(": ping\n\n")
		if usage {
			send(fmt.Sprintf(`data: {"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":%d}}`+"\n\n", text+1))
		}
		send("data: [DONE]\n\n")
	}
}

// TestRun_ChunksAsVLLM: TTFT, ITL and E2EL count a streamed chunk as vLLM's
// `bench serve` does, in vllm/benchmarks/lib/endpoint_request_func.py
// (async_request_openai_completions and
// async_request_openai_chat_completions, vLLM main as of 2026-12): every
// data event whose "choices" list is not empty is a token, whatever its
// text — a chat's role-only delta (content null) and a chunk with empty
// text included; the first is TTFT, each later one adds a gap to ITL, and
// the last one ends the request's latency. An event with no or empty
// choices (the usage chunk, a keep-alive) and an SSE comment are not
// tokens. A stream with a token-bearing chunk and no text is a success, as
// there ("Never received a valid chunk" fails only a stream with none).
// Token counts still come from the server's usage (else the text chunks).
func TestRun_ChunksAsVLLM(t *testing.T) {
	for _, ep := range []string{Completions, Chat} {
		for _, usage := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/usage=%v", ep, usage), func(t *testing.T) {
				srv := httptest.NewServer(kinds(4, usage))
				defer srv.Close()
				c := Config{URL: srv.URL, Endpoint: ep, Requests: 2, InputLen: 5, OutputLen: 5}
				reqs, _, err := Run(context.Background(), c, nil)
				if err != nil {
					t.Fatal(err)
				}
				// chat: role + empty + 4 text = 6 tokens; completions:
				// empty + 4 text = 5.
				want := 5
				if ep == Chat {
					want = 6
				}
				for _, r := range reqs {
					if !r.OK() {
						t.Fatalf("request %d: %s %s", r.Index, r.Outcome, r.Error)
					}
					if r.Chunks != want || len(r.ITL) != want-1 {
						t.Errorf("request %d: %d chunks counted, %d gaps; vLLM counts %d and %d", r.Index, r.Chunks, len(r.ITL), want, want-1)
					}
					sum := r.TTFT
					for _, g := range r.ITL {
						sum += g
					}
					if d := r.Latency - sum; d > 1e-9 || d < -1e-9 {
						t.Errorf("request %d: latency %.6f is not TTFT + the gaps (%.6f): it ends at the last token chunk", r.Index, r.Latency, sum)
					}
					switch {
					case usage && (r.OutputLen != 5 || !r.Usage || r.PromptLen != 5):
						t.Errorf("request %d: output %d prompt %d (usage %v), want the server's 5 and 5", r.Index, r.OutputLen, r.PromptLen, r.Usage)
					case !usage && (r.OutputLen != 4 || r.Usage):
						t.Errorf("request %d: output %d (usage %v), want the 4 text chunks counted", r.Index, r.OutputLen, r.Usage)
					}
				}
			})
		}
	}
	// A stream whose only token-bearing chunk carries no text succeeds,
	// as in vLLM; one with no choices at all fails.
	t.Run("no-text", func(t *testing.T) {
		srv := httptest.NewServer(kinds(0, true))
		defer srv.Close()
		reqs, _, err := Run(context.Background(), Config{URL: srv.URL, Endpoint: Chat, Requests: 1, InputLen: 5, OutputLen: 5}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if r := reqs[0]; !r.OK() || r.Chunks != 2 || len(r.ITL) != 1 || r.OutputLen != 1 {
			t.Errorf("got %s %q, %d chunks, %d gaps, output %d; want ok, 2, 1, 1", r.Outcome, r.Error, r.Chunks, len(r.ITL), r.OutputLen)
		}
	})
	t.Run("no-choices", func(t *testing.T) {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "data: {\"choices\":[]}\n\ndata: {\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":0}}\n\ndata: [DONE]\n\n")
		}))
		defer srv.Close()
		reqs, _, err := Run(context.Background(), Config{URL: srv.URL, Endpoint: Completions, Requests: 1, InputLen: 5, OutputLen: 5}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if r := reqs[0]; r.Outcome != NoToken {
			t.Errorf("got %s %q, want %s", r.Outcome, r.Error, NoToken)
		}
	})
}
