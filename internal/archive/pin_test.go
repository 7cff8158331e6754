package archive

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/rigorbench/rigor/internal/lock"
)

// A pin round-trips through the real registry with the lock's facts (GGUF
// numbers as the lockfile writes them); it is pushed only with its
// content, once; one with other facts replaces it; a pin whose content
// went, or that is not of the key asked, is refused.
func TestPinRoundTrip(t *testing.T) {
	host, user, pw := testRegistry(t)
	a := open(t, host, randomRepo(t), dockerConfig(t, host, user, pw))
	ctx := context.Background()
	path, sha := randomFile(t, 4096)
	key := lock.HubKey("org/tiny-GGUF", "", []string{"tiny-*.gguf"})
	if key != `hf org/tiny-GGUF@main ["tiny-*.gguf"]` {
		t.Fatalf("HubKey = %q", key)
	}
	var facts map[string]any
	dec := json.NewDecoder(strings.NewReader(`{"architecture": "llama", "contextLength": 1000000, "ratio": 0.25}`))
	dec.UseNumber()
	if err := dec.Decode(&facts); err != nil {
		t.Fatal(err)
	}
	p := lock.Pin{Request: key, Commit: strings.Repeat("ab", 20),
		Files:     []lock.FileLock{{Path: "tiny-Q8_0.gguf", Size: 4096, SHA256: sha, GGUF: facts}},
		Artifacts: []string{ModelTag(sha)}}

	if got, err := a.Pin(ctx, key); err != nil || got != nil {
		t.Fatalf("Pin of nothing archived = %+v, %v; want nil, nil", got, err)
	}
	sent, missing, err := a.PushPin(ctx, p)
	if err != nil || sent || len(missing) != 1 || missing[0] != ModelTag(sha) {
		t.Fatalf("PushPin without its content: sent %v, missing %v, %v; want the model artifact missing", sent, missing, err)
	}
	if _, err := a.PushModelFile(ctx, "tiny-Q8_0.gguf", path, sha, 4096, "llama", nil); err != nil {
		t.Fatal(err)
	}
	if sent, missing, err = a.PushPin(ctx, p); err != nil || !sent || missing != nil {
		t.Fatalf("PushPin: sent %v, missing %v, %v", sent, missing, err)
	}
	if sent, _, err = a.PushPin(ctx, p); err != nil || sent {
		t.Fatalf("second PushPin: sent %v, %v; want not sent", sent, err)
	}
	got, err := a.Pin(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(p)
	if b, _ := json.Marshal(got); string(b) != string(want) {
		t.Fatalf("Pin = %s\nwant  %s", b, want)
	}
	if n, ok := got.Files[0].GGUF["contextLength"].(json.Number); !ok || n != "1000000" {
		t.Fatalf("GGUF number %#v, want json.Number 1000000", got.Files[0].GGUF["contextLength"])
	}

	// Other facts replace the pin: the newest pushed is the pin.
	p2 := p
	p2.Commit = strings.Repeat("cd", 20)
	if sent, _, err = a.PushPin(ctx, p2); err != nil || !sent {
		t.Fatalf("PushPin of new facts: sent %v, %v", sent, err)
	}
	if got, err = a.Pin(ctx, key); err != nil || got.Commit != p2.Commit {
		t.Fatalf("Pin after a new push = %+v, %v; want commit %s", got, err, p2.Commit)
	}

	// A pin stored under another key's tag is refused.
	other := lock.HubKey("org/other", "", nil)
	b, _ := json.Marshal(p)
	if err := a.PushArtifact(ctx, Artifact{Tag: PinTag(other), ConfigType: MediaTypePin, Config: b}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Pin(ctx, other); err == nil || !strings.Contains(err.Error(), "not \""+other+"\": refused") {
		t.Fatalf("Pin of a pin of another key: %v, want refused", err)
	}

	// A pin whose content the archive does not hold is refused.
	p3 := p
	p3.Request = lock.HubKey("org/gone", "", nil)
	p3.Artifacts = []string{ModelTag(strings.Repeat("0", 64))}
	b, _ = json.Marshal(p3)
	if err := a.PushArtifact(ctx, Artifact{Tag: PinTag(p3.Request), ConfigType: MediaTypePin, Config: b}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Pin(ctx, p3.Request); err == nil || !strings.Contains(err.Error(), "but not its content model-0000") {
		t.Fatalf("Pin without its content: %v, want refused", err)
	}
}
