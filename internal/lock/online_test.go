package lock

import "testing"

func TestDrift_String(t *testing.T) {
	for _, tc := range []struct {
		d    Drift
		want string
	}{
		{Drift{Input: DriftEngine, Ref: "b4747", Locked: "28165161ffe1aaaaaaaaaaaaaaaaaaaaaaaaaaaa", Upstream: "2e41d733a5cebbbbbbbbbbbbbbbbbbbbbbbbbbbb"},
			"engine ref b4747: 28165161ffe1 → 2e41d733a5ce (moved upstream; the lock still pins 28165161ffe1)"},
		{Drift{Input: DriftModel, Ref: "main", Locked: "0c3d986bbc9cb25eb547fbdff4f80b6caae38789", Upstream: "efc287135f9b0000000000000000000000000000"},
			"model revision main: 0c3d986bbc9c → efc287135f9b (moved upstream; the lock still pins 0c3d986bbc9c)"},
		{Drift{Input: DriftNPM, Source: "node-llama-cpp", Ref: "3.x", Locked: "3.22.1", Upstream: "3.23.0"},
			"engine npm node-llama-cpp@3.x: 3.22.1 → 3.23.0 (moved upstream; the lock still pins 3.22.1)"},
	} {
		if got := tc.d.String(); got != tc.want {
			t.Errorf("%+v: got %q, want %q", tc.d, got, tc.want)
		}
	}
}

func TestGone_String(t *testing.T) {
	const c = "1c211d55d33b0000000000000000000000000000"
	for _, tc := range []struct {
		g    Gone
		want string
	}{
		{Gone{Input: DriftEngine, Ref: "v2", Locked: c}, "engine ref v2: 1c211d55d33b"},
		{Gone{Input: DriftEngine, Ref: c, Locked: c, pinned: true}, "engine commit 1c211d55d33b"},
		{Gone{Input: DriftEngine, Ref: "1c211d5", Locked: c, pinned: true}, "engine commit 1c211d55d33b"},
		// A tag named like a sha is a ref, not the commit.
		{Gone{Input: DriftEngine, Ref: "b4747", Locked: c}, "engine ref b4747: 1c211d55d33b"},
		{Gone{Input: DriftModel, Source: "org/m", Ref: "main", Locked: c}, "model revision main: 1c211d55d33b"},
		{Gone{Input: DriftModel, Source: "org/m", Ref: c, Locked: c, pinned: true}, "model commit 1c211d55d33b"},
		{Gone{Input: DriftModelFile, Source: "org/m", Ref: "main", Locked: c, Path: "m-Q8_0.gguf"}, "model file org/m@main: m-Q8_0.gguf"},
		{Gone{Input: DriftModelFile, Source: "org/m", Ref: c, Locked: c, Path: "m-Q8_0.gguf", pinned: true}, "model file org/m@1c211d55d33b: m-Q8_0.gguf"},
		{Gone{Input: DriftNPM, Source: "node-llama-cpp", Ref: "3.x", Locked: "3.22.1"}, "engine npm node-llama-cpp@3.x: 3.22.1"},
		{Gone{Input: DriftCorpus, Source: "org/texts", Ref: "main", Locked: c, Path: "corpus.txt"}, "corpus org/texts@main: corpus.txt (1c211d55d33b)"},
		{Gone{Input: DriftCorpus, Source: "org/texts", Ref: c, Locked: c, Path: "corpus.txt", pinned: true}, "corpus org/texts@1c211d55d33b: corpus.txt"},
	} {
		if got := tc.g.String(); got != tc.want {
			t.Errorf("%+v: got %q, want %q", tc.g, got, tc.want)
		}
	}
}
