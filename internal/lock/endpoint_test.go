package lock

import (
	"context"
	"net"
	"testing"

	"github.com/rigorbench/rigor/internal/hf"
	"github.com/rigorbench/rigor/internal/spec"
)

// TestResolver_endpoint: an endpoint locks its URL and its model's name,
// contacts nothing (not even the URL: a server that is down, or a key not
// set, does not stop the lock) and says nothing is pinned.
func TestResolver_endpoint(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	contacted := make(chan struct{}, 1)
	go func() {
		if c, err := l.Accept(); err == nil {
			contacted <- struct{}{}
			c.Close()
		}
	}()
	s := spec.Spec{Model: spec.Model{Name: "qwen3-8b"},
		Engine: spec.Engine{Family: spec.FamilyEndpoint, Source: spec.Source{URL: "http://" + l.Addr().String()}},
		Serve:  map[string]any{"apiKeyEnv": "RIGOR_TEST_UNSET_KEY"}}
	r := NewResolver(Options{Root: t.TempDir(), Cache: t.TempDir(), HF: hf.NewClient(hf.ClientOptions{Offline: true})})
	e, err := r.Resolve(context.Background(), experiment("ep/chat", s), nil)
	if err != nil {
		t.Fatal(err)
	}
	if e.Engine.Requested.URL != s.Engine.Source.URL || e.Engine.Unpinned == "" || e.Engine.Commit != "" || len(e.Engine.Binaries) > 0 {
		t.Errorf("engine lock %+v, want the URL, unpinned, nothing pinned", e.Engine)
	}
	if e.Model.Requested.Name != "qwen3-8b" || len(e.Model.Files) > 0 || e.Model.Commit != "" {
		t.Errorf("model lock %+v, want the name only", e.Model)
	}
	if got := e.EntryModel(t.TempDir(), t.TempDir()); got != "" {
		t.Errorf("EntryModel %q, want none: an endpoint's model is no file", got)
	}
	select {
	case <-contacted:
		t.Error("locking an endpoint contacted it")
	default:
	}
}
