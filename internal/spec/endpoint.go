package spec

import (
	"net/url"
	"strings"
)

// checkEndpoint checks an experiment of the endpoint family: a server
// rigor did not start, reached at engine.source.url in serve mode, whose
// model is named, not locked. The URL is never part of a message: it may
// hold credentials.
func (s *Set) checkEndpoint(e *Experiment, bad func(p, msg string, hints ...string)) {
	sp := e.Spec
	m := sp.Model
	if m.HF != "" || m.Path != "" || m.Synthetic != nil {
		which := "hf"
		switch {
		case m.Path != "":
			which = "path"
		case m.Synthetic != nil:
			which = "synthetic"
		}
		bad("model."+which, "an endpoint's model is the server's: rigor cannot lock its bytes, so model."+which+" does not apply",
			`name the model as the endpoint serves it (one of the ids its /v1/models lists): model: name: "qwen3-8b"`)
	}
	if m.Name == "" {
		bad("model", "model.name is required for the endpoint family: the model every request asks the server for",
			`name the model as the endpoint serves it (one of the ids its /v1/models lists): model: name: "qwen3-8b"`)
	}
	src := sp.Engine.Source
	for k, v := range map[string]string{"git": src.Git, "ref": src.Ref, "npm": src.NPM, "python": src.Python, "path": src.Path} {
		if v != "" {
			bad("engine.source."+k, "engine family endpoint cannot come from a "+k+" source: it is a running server at engine.source.url",
				sourceHint(FamilyEndpoint))
		}
	}
	if src.URL == "" {
		bad("engine.source", "engine.source.url is required for the endpoint family", sourceHint(FamilyEndpoint))
	} else if msg, hint := CheckEndpointURL(src.URL); msg != "" {
		bad("engine.source.url", msg, hint)
	}
	if len(sp.Engine.Patches) > 0 {
		bad("engine.patches", "engine.patches do not apply to an endpoint: rigor does not build it")
	}
	b := sp.Engine.Build
	if b.Backend != "" || len(b.CMake) > 0 || len(b.Targets) > 0 || len(b.Env) > 0 {
		bad("engine.build", "engine.build does not apply to an endpoint: rigor does not build it")
	}
	if len(sp.ExtraArgs) > 0 {
		bad("extraArgs", "extraArgs do not apply to an endpoint: rigor does not start it",
			"configure the server where it runs; the record keeps what it reports of itself (/v1/models, /props, /version)")
	}
	if sp.Serve == nil {
		bad("engine.family", "the endpoint family is measured in serve mode: the experiment needs serve",
			`add serve: {endpoint: "chat"} (or "completions"), with bench the #Workload`)
		return
	}
	for _, k := range []string{"host", "port", "readyTimeoutSeconds"} {
		if _, ok := sp.Serve[k]; ok {
			bad("serve."+k, "serve."+k+" does not apply to an endpoint: rigor does not start it, and reaches it at engine.source.url")
		}
	}
}

// checkAPIKeyEnv refuses an API key's variable that the experiment also
// sets (env: the key would be part of the experiment) or, for an endpoint,
// passes (passEnv: its value would be recorded with every run, and no
// process but the load generator needs it; a server rigor starts may take
// its key from passEnv, whose secret-looking names are redacted).
func checkAPIKeyEnv(e *Experiment, bad func(p, msg string, hints ...string)) {
	name, _ := e.Spec.Serve["apiKeyEnv"].(string)
	if name == "" {
		return
	}
	if _, ok := e.Spec.Env[name]; ok {
		bad("env."+name, "env sets "+name+", the API key's variable (serve.apiKeyEnv): the key would be part of the experiment",
			"remove it from env and export it in the shell that runs rigor")
	}
	for _, p := range e.Spec.PassEnv {
		if p == name && e.Spec.Engine.Family == FamilyEndpoint {
			bad("passEnv", name+" is the API key's variable (serve.apiKeyEnv) and is in passEnv, whose values are recorded with every run",
				"remove it from passEnv: serve.apiKeyEnv alone gives the key to the load generator, and records only its name")
		}
	}
}

// CheckEndpointURL says what is wrong with an endpoint's base URL, and
// how to fix it; "" when nothing is. The message never repeats the URL
// or any part of it that may be a secret.
func CheckEndpointURL(u string) (msg, hint string) {
	p, err := url.Parse(u)
	if err != nil {
		return "engine.source.url is not a URL", `write the server's base URL: source: url: "http://gpu-box:8000"`
	}
	if p.User != nil {
		return "engine.source.url holds credentials (user:password@): a secret must not be part of the experiment",
			"remove them from the URL, put the API key in an environment variable and name it in serve.apiKeyEnv; if the credentials were committed, rotate them"
	}
	if p.Scheme != "http" && p.Scheme != "https" {
		return "engine.source.url must be an http or https URL", `write the server's base URL: source: url: "http://gpu-box:8000"`
	}
	if p.Host == "" {
		return "engine.source.url has no host", `write the server's base URL: source: url: "http://gpu-box:8000"`
	}
	if p.RawQuery != "" || p.Fragment != "" || strings.HasSuffix(u, "?") {
		return "engine.source.url must not have a query or a fragment (a key in a query string would be recorded)",
			"give the base URL only; put the API key in an environment variable and name it in serve.apiKeyEnv"
	}
	if path := strings.TrimRight(p.Path, "/"); strings.HasSuffix(path, "/v1") || strings.Contains(path, "/v1/") {
		return "engine.source.url must be the server's base URL, without /v1",
			"rigor adds /v1/completions and /v1/chat/completions itself: leave /v1 off the URL"
	}
	return "", ""
}
