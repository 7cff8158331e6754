package metric

import "testing"

func TestLookup(t *testing.T) {
	check := func(name, unit, dir string, engine bool) {
		t.Helper()
		in, ok := Lookup(name)
		if !ok {
			t.Fatalf("Lookup(%q): not found", name)
		}
		if in.Name != name || in.Unit != unit || in.Direction != dir || in.EngineCounter != engine {
			t.Errorf("Lookup(%q) = %+v, want unit %s direction %s engine %v", name, in, unit, dir, engine)
		}
	}
	check(TokSOut, TokPerSec, Higher, false)
	check("engineTokSOut", TokPerSec, Higher, true)
	check("engineTokSPrompt", TokPerSec, Higher, true)
	check("ttftMsP99", Ms, Lower, false)
	check("ttftMsMedian", Ms, Lower, false)
	check("latencyP99.9Ms", Ms, Lower, false)
	check(E2ELMs+"P50", Ms, Lower, false)
	check(RequestGoodput, ReqPerSec, Higher, false)
	check(PeakVRAMGB, GB, Lower, false)
	for _, bad := range []string{"", "engine", "engines", "tokSOutX", "fooMs"} {
		if in, ok := Lookup(bad); ok {
			t.Errorf("Lookup(%q) = %+v, want not found", bad, in)
		}
	}
}

func TestEngineBase(t *testing.T) {
	if got := Engine(TokSOut); got != "engineTokSOut" || got != EngineTokSOut {
		t.Errorf("Engine(tokSOut) = %q", got)
	}
	for _, c := range []struct {
		in, want string
		ok       bool
	}{{"engineTokSOut", "tokSOut", true}, {"tokSOut", "tokSOut", false}, {"engineers", "engineers", false}, {"engine", "engine", false}} {
		got, ok := Base(c.in)
		if got != c.want || ok != c.ok {
			t.Errorf("Base(%q) = %q, %v; want %q, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

func TestDirection(t *testing.T) {
	for _, c := range []struct{ name, unit, dir, want string }{
		{"tokSOut", "", "", Higher},
		{"tokSOut", "", Lower, Lower}, // the record's word wins
		{"fooMs", "", "", Lower},
		{"fooTokens", "tok/s", "", Higher},
		{"tokSFoo", "", "", Higher},
		{"peakFooGb", "", "", Lower},
		{"mystery", "", "", ""},
	} {
		if got := Direction(c.name, c.unit, c.dir); got != c.want {
			t.Errorf("Direction(%q, %q, %q) = %q, want %q", c.name, c.unit, c.dir, got, c.want)
		}
	}
}
