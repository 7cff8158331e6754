package standin

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// server is `vllm serve MODEL [flags]`: the OpenAI-compatible server.
func server(args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	model, flags, unknown := serveArgs(args)
	if len(unknown) > 0 {
		fmt.Fprintf(stderr, "usage: vllm serve [model_tag] [options]\nvllm: error: unrecognized arguments: %s\n", strings.Join(unknown, " "))
		return 2
	}
	if getenv("FAKE_VLLM_FAIL") == "noload" {
		fmt.Fprintln(stderr, "Traceback (most recent call last):")
		fmt.Fprintf(stderr, "OSError: %s does not appear to have a file named config.json.\n", model)
		fmt.Fprintln(stderr, "RuntimeError: Engine core initialization failed. See root cause above. Failed to load model")
		return 1
	}
	speed := 40.0
	if s, err := strconv.ParseFloat(getenv("FAKE_VLLM_TOKS"), 64); err == nil && s > 0 {
		speed = s
	}
	host, port := flags["--host"], flags["--port"]
	if host == "" {
		host = "0.0.0.0"
	}
	if port == "" {
		port = "8000"
	}
	name := flags["--served-model-name"]
	if name == "" {
		name = model
	}
	l, err := net.Listen("tcp", net.JoinHostPort(host, port))
	if err != nil {
		fmt.Fprintf(stderr, "OSError: [Errno 98] error while attempting to bind on address (%s, %s): address already in use\n", host, port)
		return 1
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) {})
	mux.HandleFunc("GET /version", func(w http.ResponseWriter, r *http.Request) {
		v := getenv("FAKE_VLLM_VERSION")
		if v == "" {
			v = DefaultVersion
		}
		json.NewEncoder(w).Encode(map[string]string{"version": v})
	})
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": []map[string]any{{"id": name, "object": "model", "owned_by": "vllm"}}})
	})
	maxLogprobs := 20 // vLLM's default --max-logprobs
	if n, err := strconv.Atoi(flags["--max-logprobs"]); err == nil {
		maxLogprobs = n
	}
	maxLen := 4096
	if n, err := strconv.Atoi(flags["--max-model-len"]); err == nil {
		maxLen = n
	}
	mux.HandleFunc("POST /tokenize", tokenizeHandler(name, maxLen))
	mux.HandleFunc("POST /v1/completions", completions(name, speed, false, modelOf(flags), maxLogprobs))
	mux.HandleFunc("POST /v1/chat/completions", completions(name, speed, true, modelOf(flags), maxLogprobs))
	var handler http.Handler = mux
	key := flags["--api-key"]
	if key == "" {
		key = getenv("VLLM_API_KEY")
	}
	if key != "" {
		// vLLM's authentication: /v1/ routes need the bearer token;
		// /health and /version do not.
		handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasPrefix(r.URL.Path, "/v1") && r.Header.Get("Authorization") != "Bearer "+key {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusUnauthorized)
				fmt.Fprint(w, `{"error":"Unauthorized"}`)
				return
			}
			mux.ServeHTTP(w, r)
		})
	}
	fmt.Fprintf(stdout, "INFO:     Started server process [%d]\nINFO:     Uvicorn running on http://%s:%s (Press CTRL+C to quit)\n", os.Getpid(), host, port)
	srv := &http.Server{Handler: handler}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, os.Interrupt)
	go func() { <-stop; srv.Close() }()
	if err := srv.Serve(l); err != nil && err != http.ErrServerClosed {
		fmt.Fprintln(stderr, err)
		return 1
	}
	return 0
}

// serveArgs parses `vllm serve`'s arguments: the model, the flags it
// knows, and the arguments it does not.
func serveArgs(args []string) (model string, flags map[string]string, unknown []string) {
	flags = map[string]string{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, val, hasVal := strings.Cut(a, "=")
		switch {
		case !strings.HasPrefix(a, "-") && model == "":
			model = a
		case (valueFlags[name] || name == "--api-key") && hasVal:
			flags[name] = val
		case (valueFlags[name] || name == "--api-key") && i+1 < len(args):
			i++
			flags[name] = args[i]
		case switchFlags[name] && !hasVal:
			flags[name] = "true"
		default:
			unknown = append(unknown, a)
		}
	}
	return model, flags, unknown
}

// completions streams max_tokens tokens of the served model name at speed
// tokens a second, as /v1/completions or (chat) /v1/chat/completions.
func completions(name string, speed float64, chat bool, m lm, maxLogprobs int) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model     string `json:"model"`
			MaxTokens int    `json:"max_tokens"`
			Stream    bool   `json:"stream"`
		}
		body, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(body, &req); err != nil {
			http.Error(w, `{"object":"error","message":"invalid JSON","code":400}`, http.StatusBadRequest)
			return
		}
		if req.Model != name {
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprintf(w, `{"object":"error","message":"The model %s does not exist.","type":"NotFoundError","code":404}`, req.Model)
			return
		}
		var pr promptRequest
		if !chat && json.Unmarshal(body, &pr) == nil && pr.wantsPrompt() {
			answerPrompt(w, name, m, maxLogprobs, pr)
			return
		}
		if req.MaxTokens < 1 {
			req.MaxTokens = 16
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fl, _ := w.(http.Flusher)
		start := time.Now()
		for k := 0; k < req.MaxTokens; k++ {
			time.Sleep(time.Until(start.Add(10*time.Millisecond + time.Duration(float64(k)/speed*float64(time.Second)))))
			if chat {
				fmt.Fprintf(w, "data: {\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\" t%d\"}}]}\n\n", k)
			} else {
				fmt.Fprintf(w, "data: {\"object\":\"text_completion\",\"choices\":[{\"index\":0,\"text\":\" t%d\"}]}\n\n", k)
			}
			if fl != nil {
				fl.Flush()
			}
		}
		fmt.Fprintf(w, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":16,\"completion_tokens\":%d}}\n\ndata: [DONE]\n\n", req.MaxTokens)
	}
}
