package serve

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/rigorbench/rigor/internal/engine"
	"github.com/rigorbench/rigor/internal/loadgen"
	"github.com/rigorbench/rigor/internal/redact"
	"github.com/rigorbench/rigor/internal/results"
	"github.com/rigorbench/rigor/internal/spec"
)

// maxReported bounds a string kept of what a server reports of itself (a
// chat template is kilobytes of Jinja).
const maxReported = 512

// unstarted completes the verdict on a server rigor did not start (a
// source URL): what the server reported of itself becomes the record's
// engine build, the only evidence of which engine answered, and refused
// credentials are explained.
func unstarted(v *engine.Verdict, p *spec.Point, f engine.Finished) {
	if b := reported(f, "endpoint"); b != nil {
		v.Build = b
	}
	var r loadgen.Result
	if data, ok := f.Outputs[ResultFile]; ok {
		json.Unmarshal(data, &r)
	}
	if v.Status != results.StatusFailed || r.Failures[loadgen.HTTPStatus] == 0 {
		return
	}
	var refused int
	if raw, ok := f.Outputs[RawFile]; ok {
		reqs, _ := loadgen.ReadRaw(raw)
		for _, q := range reqs {
			if q.Status == 401 || q.Status == 403 {
				refused++
			}
		}
	}
	if refused == 0 {
		return
	}
	what := "the endpoint asks for an API key: name the variable that holds it in serve.apiKeyEnv"
	if name, _ := p.Spec.Serve["apiKeyEnv"].(string); name != "" {
		what = "the endpoint refused the API key in " + name
	}
	v.Error = fmt.Sprintf("%s (%d %s answered 401 or 403); %s", what, refused, plural(refused, "request", "requests"), v.Error)
}

// reported is the engine build a server's account of itself makes (the
// load generator's result keeps the bodies of /v1/models, /props and
// /version): the flavour ("endpoint" for a server rigor did not start,
// "server" for one it started) with the build or version the server gives
// ("server (build b6000-abc1234)"), and the bodies, secrets redacted and
// long strings cut; nil when the server said nothing of itself.
func reported(f engine.Finished, flavour string) *results.Build {
	var r loadgen.Result
	data, ok := f.Outputs[ResultFile]
	if !ok || json.Unmarshal(data, &r) != nil || len(r.Server) == 0 {
		return nil
	}
	b := &results.Build{Flavour: flavour, Reported: map[string]json.RawMessage{}}
	for path, body := range r.Server {
		if kept := keepReported(body); kept != nil {
			b.Reported[path] = kept
		}
	}
	if id := identity(b.Reported); id != "" {
		b.Flavour += " (" + id + ")"
	}
	return b
}

// keepReported is a reported JSON body with its secrets redacted and its
// long strings cut, or nil when it is not JSON.
func keepReported(body json.RawMessage) json.RawMessage {
	var x any
	if json.Unmarshal(body, &x) != nil {
		return nil
	}
	x = cut(x)
	b, err := json.Marshal(x)
	if err != nil {
		return nil
	}
	red := redact.Bytes(b)
	if !json.Valid(red) {
		return nil
	}
	return red
}

func cut(x any) any {
	switch t := x.(type) {
	case string:
		if len(t) > maxReported {
			return fmt.Sprintf("(%d bytes, not kept)", len(t))
		}
	case []any:
		for i := range t {
			t[i] = cut(t[i])
		}
	case map[string]any:
		for k := range t {
			t[k] = cut(t[k])
		}
	}
	return x
}

// identity says in a few words which engine a server says it is: the
// version /version gives (vLLM), the build /props gives (llama-server).
// /v1/models is left out: it needs the key, and a refused run would read
// as another engine.
func identity(rep map[string]json.RawMessage) string {
	var parts []string
	var version struct {
		Version string `json:"version"`
	}
	if json.Unmarshal(rep["/version"], &version) == nil && version.Version != "" {
		parts = append(parts, "version "+version.Version)
	}
	var props struct {
		BuildInfo string `json:"build_info"`
	}
	if json.Unmarshal(rep["/props"], &props) == nil && props.BuildInfo != "" {
		parts = append(parts, "build "+props.BuildInfo)
	}
	return strings.Join(parts, ", ")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
