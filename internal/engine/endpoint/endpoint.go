// Package endpoint is the engine family of an OpenAI-compatible server
// that rigor did not start: a URL (engine.source.url) with an API key from
// the environment (serve.apiKeyEnv names the variable; its value is never
// recorded), measured in serve mode by rigor's load generator.
//
// Nothing of such an engine can be pinned: rigor neither built nor
// started it, and the model behind the name it serves is its own. The
// lock records the URL (which holds no credentials: the spec refuses
// them) and the model's name; each record says the engine is not pinned
// (results.Engine.Unpinned) and keeps what the server reported of itself
// during the run (/v1/models, and /props or /version where it answers
// them), which the comparability guard compares.
package endpoint

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/rigorbench/rigor/internal/engine"
	"github.com/rigorbench/rigor/internal/results"
	"github.com/rigorbench/rigor/internal/spec"
)

// Engine is the endpoint family. It only serves: an experiment without
// serve is refused by the spec, and by Plan.
type Engine struct{}

var (
	_ engine.Engine = Engine{}
	_ engine.Server = Engine{}
)

// Unpinned is what a record of an endpoint says of its engine.
const Unpinned = "an endpoint rigor did not start: its build and its model are not pinned, only what it reported of itself is recorded"

// ProbeTimeout bounds the reachability check before a run.
var ProbeTimeout = 10 * time.Second

// Family is spec.FamilyEndpoint.
func (Engine) Family() string { return spec.FamilyEndpoint }

// Prepare is PrepareServer: an endpoint is only measured serving.
func (e Engine) Prepare(ctx context.Context, req engine.Request) (*engine.Prepared, error) {
	return e.PrepareServer(ctx, req)
}

// PrepareServer checks what a run needs before it starts: the URL holds no
// credentials, the API key's variable is set, and (unless offline) the
// server answers at all, so that a missing key or an unreachable server
// is an error before anything is recorded. An HTTP error status (a
// refused key, say) is not checked here: the run records it. The
// prepared engine has no binaries and is not pinned.
func (Engine) PrepareServer(ctx context.Context, req engine.Request) (*engine.Prepared, error) {
	s := req.Experiment.Spec
	base := s.Engine.Source.URL
	if msg, hint := spec.CheckEndpointURL(base); msg != "" {
		return nil, &Error{Msg: req.Experiment.ID + ": " + msg, hint: hint}
	}
	keyEnv := APIKeyEnv(&s)
	key, err := Key(req.Getenv, keyEnv)
	if err != nil {
		return nil, err
	}
	var warnings []string
	if !req.Offline {
		req.Say("reaching %s", base)
		ids, err := Probe(ctx, base, key)
		if err != nil {
			return nil, err
		}
		if len(ids) > 0 && !slices.Contains(ids, s.Model.Name) {
			warnings = append(warnings, fmt.Sprintf("the endpoint's /v1/models lists %s, not %s (model.name): a server that checks the name refuses the requests",
				strings.Join(ids, ", "), s.Model.Name))
		}
	}
	return &engine.Prepared{
		Engine:   results.Engine{Family: spec.FamilyEndpoint, Source: base, Unpinned: Unpinned},
		Cached:   true,
		Warnings: warnings,
	}, nil
}

// APIKeyEnv is the serve.apiKeyEnv of a spec, "" when unset.
func APIKeyEnv(s *spec.Spec) string {
	v, _ := s.Serve["apiKeyEnv"].(string)
	return v
}

// Key reads the API key from the variable name through getenv (nil reads
// nothing); no name means no key. The error names the variable, never a
// value.
func Key(getenv func(string) (string, bool), name string) (string, error) {
	if name == "" {
		return "", nil
	}
	var v string
	var ok bool
	if getenv != nil {
		v, ok = getenv(name)
	}
	if !ok || v == "" {
		state := "is not set"
		if ok {
			state = "is empty"
		}
		return "", &Error{Msg: fmt.Sprintf("the API key's variable %s (serve.apiKeyEnv) %s", name, state),
			hint: "export " + name + " in the shell that runs rigor; its value is sent to the endpoint and never written anywhere"}
	}
	return v, nil
}

// Probe asks the server for /v1/models once and returns the model ids it
// lists, when it answers 200 with OpenAI's list. A server that answers,
// with any status, is reachable; one that does not is an *Error naming the
// URL (which holds no credentials) and the network's reason.
func Probe(ctx context.Context, base, key string) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, ProbeTimeout)
	defer cancel()
	r, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(base, "/")+"/v1/models", nil)
	if err != nil {
		return nil, &Error{Msg: "the endpoint's URL is not usable: " + err.Error()}
	}
	if key != "" {
		r.Header.Set("Authorization", "Bearer "+key)
	}
	// As the load generator: straight to the server, no proxy.
	client := &http.Client{Transport: &http.Transport{Proxy: nil}}
	resp, err := client.Do(r)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		why := err.Error()
		if errors.Is(err, context.DeadlineExceeded) {
			why = fmt.Sprintf("no answer within %s", ProbeTimeout)
		}
		hint := "check that the server is running and that engine.source.url names it as this machine reaches it; nothing was recorded"
		var unknownCA x509.UnknownAuthorityError
		var badHost x509.HostnameError
		if errors.As(err, &unknownCA) || errors.As(err, &badHost) {
			hint = "this machine does not trust the server's certificate: point SSL_CERT_FILE at the CA that signed it; nothing was recorded"
		}
		return nil, &Error{Msg: fmt.Sprintf("the endpoint %s is unreachable: %s", base, why), hint: hint}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		return nil, nil
	}
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if json.Unmarshal(b, &list) != nil {
		return nil, nil
	}
	var ids []string
	for _, m := range list.Data {
		if m.ID != "" {
			ids = append(ids, m.ID)
		}
	}
	return ids, nil
}

// Error is an endpoint's error with its hint.
type Error struct {
	Msg  string
	hint string
}

func (e *Error) Error() string { return e.Msg }

// Hint says what to do.
func (e *Error) Hint() string { return e.hint }

// Plan refuses: an endpoint experiment is a serve experiment, which the
// serve mode wrapper plans with Serve.
func (Engine) Plan(p *spec.Point, in engine.Inputs) (*engine.Plan, error) {
	return nil, fmt.Errorf("%s: the endpoint family is measured in serve mode: the experiment needs serve", p.ID)
}

// Judge has nothing to judge outside serve mode.
func (Engine) Judge(p *spec.Point, f engine.Finished) engine.Verdict {
	return engine.Verdict{Status: results.StatusFailed, Error: "the endpoint family is measured in serve mode only"}
}

// Serve starts nothing: the load generator talks to engine.source.url,
// without waiting for /health (a server rigor did not start need not
// have one), and sends the key from serve.apiKeyEnv.
func (Engine) Serve(p *spec.Point, in engine.Inputs, at engine.Listen) (*engine.Served, error) {
	return &engine.Served{URL: p.Spec.Engine.Source.URL, APIKeyEnv: APIKeyEnv(&p.Spec)}, nil
}
