package results

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rigorbench/rigor/internal/gitrepo/gittest"
	"github.com/rigorbench/rigor/internal/rig"
)

// testRun returns a realistic record: the shape of seed 000's baseline
// (ik_llama.cpp over four rpc-server workers), with the given id,
// experiment and decode samples.
func testRun(id, experiment string, start time.Time, samples ...float64) *Run {
	exit := 0
	mean := 0.0
	for _, s := range samples {
		mean += s
	}
	if len(samples) > 0 {
		mean /= float64(len(samples))
	}
	return &Run{
		Schema: SchemaVersion, RigorVersion: "devel", ID: id, Experiment: experiment, Point: experiment,
		SpecDigest: "sha256:5d1f0c3e0e8a4b6f9d2c7a1b3e5f7091a2b3c4d5e6f708192a3b4c5d6e7f8091",
		LockDigest: "sha256:9b8a7c6d5e4f30211f2e3d4c5b6a79881726354453627180a9b8c7d6e5f40312",
		Spec:       json.RawMessage(`{"bench":{"n":64,"p":0,"r":3},"flags":{"ngl":99,"nkvo":1,"ub":32},"env":{"GGML_DISABLE_FUSED_RMS_NORM":"1"}}`),
		Engine: Engine{Family: "ik_llama.cpp", Source: "https://github.com/ikawrakow/ik_llama.cpp", Ref: "9a26522",
			Commit: "9a26522b1f0e3c4d5a6b7c8d9e0f1a2b3c4d5e6f", Backend: "sycl",
			Patches: []Patch{{Path: "patches/ik-llama-minimax-rpc-device-map-and-graphsplit-20260508.patch", SHA256: "0b1c2d3e4f5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0"}}},
		Model: Model{HF: "unsloth/MiniMax-M2.7-GGUF", Revision: "main", Commit: "a1b2c3d4e5f60718293a4b5c6d7e8f9012345678", Quant: "UD-IQ4_XS",
			Files: []File{{Path: "UD-IQ4_XS/MiniMax-M2.7-UD-IQ4_XS-00001-of-00004.gguf", Size: 49_000_000_000, SHA256: "3f9a1c2b4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f8"}}},
		Processes: []Process{
			{Role: "rpc-server", Argv: []string{"rpc-server", "-H", "127.0.0.1", "-p", "50100"}, Env: map[string]string{"ONEAPI_DEVICE_SELECTOR": "level_zero:0"}},
			{Role: "bench", Argv: []string{"llama-bench", "-m", "/models/m.gguf", "-rpc", "127.0.0.1:50100", "-nkvo", "1", "-o", "json"}, Env: map[string]string{"GGML_DISABLE_FUSED_RMS_NORM": "1"}, Exit: &exit},
		},
		Rig: &rig.Rig{Hostname: "b70-box", AcceleratorModelName: "Intel Arc Pro B70", AcceleratorsPerNode: 4,
			AcceleratorMemoryCapacityGB: 32, AcceleratorDriverVersion: "1.6.33578", OperatingSystem: "Ubuntu 24.04.4 LTS", Kernel: "6.17.0-14-generic"},
		Start: start, End: start.Add(3 * time.Minute), Status: StatusOK,
		Metrics: []Metric{{Name: "tokSOut", Test: "tg64", Unit: "tok/s", Direction: HigherIsBetter, Value: mean, Samples: samples}},
	}
}

var t0 = time.Date(2026, 5, 8, 3, 27, 53, 0, time.UTC)

func TestNewRunID(t *testing.T) {
	a := NewRunID(t0)
	if !strings.HasPrefix(a, "20260508T032753Z-") || len(a) != len("20260508T032753Z-3f9a") || !IsRunID(a) {
		t.Errorf("NewRunID(%v) = %q, want 20260508T032753Z-xxxx", t0, a)
	}
	local := t0.In(time.FixedZone("CEST", 2*3600))
	if b := NewRunID(local); b[:16] != a[:16] {
		t.Errorf("NewRunID in another zone = %q, want the UTC time %s", b, a[:16])
	}
	if c := NewRunID(t0.Add(time.Second)); c <= a {
		t.Errorf("a later id %q sorts before %q", c, a)
	}
	seen := map[string]bool{}
	for range 50 {
		seen[NewRunID(t0)] = true
	}
	if len(seen) < 40 {
		t.Errorf("50 ids in one second gave only %d distinct suffixes", len(seen))
	}
}

func TestStore_Write(t *testing.T) {
	s := Open(t.TempDir())
	r := testRun("20260508T032753Z-3f9a", "minimax-m27-b70/baseline", t0, 13.8745, 14.4737, 14.529)
	r.Schema = 0
	r.Processes[1].Env["HF_TOKEN"] = "hf_abcdefghijklmnop"
	r.Processes[1].Argv = append(r.Processes[1].Argv, "--hf-token", "hf_abcdefghijklmnop")
	r.Error = "download failed with token hf_abcdefghijklmnop"
	raw := map[string][]byte{
		"stdout":            []byte(`[{"avg_ts": 14.29}]`),
		"stderr":            []byte("using token hf_abcdefghijklmnop\n"),
		"workers/rpc-0.log": []byte("listening on 127.0.0.1:50100\n"),
	}
	path, err := s.Write(r, raw)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(s.Dir, "minimax-m27-b70", "baseline", "20260508T032753Z-3f9a.json"); path != want {
		t.Errorf("record path = %s, want %s", path, want)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), "hf_abcdefghijklmnop") {
		t.Errorf("the record holds the token:\n%s", data)
	}
	if !strings.HasSuffix(string(data), "}\n") {
		t.Errorf("the record does not end in a newline")
	}
	got, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if got.Schema != SchemaVersion || got.Processes[1].Env["HF_TOKEN"] != Redacted {
		t.Errorf("loaded schema %d, HF_TOKEN %q; want %d, %q", got.Schema, got.Processes[1].Env["HF_TOKEN"], SchemaVersion, Redacted)
	}
	if want := []string{"stderr", "stdout", "workers/rpc-0.log"}; !reflect.DeepEqual(got.Files, want) {
		t.Errorf("Files = %q, want %q", got.Files, want)
	}
	stderr, err := os.ReadFile(filepath.Join(s.RawDir(r.Experiment, r.ID), "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	if string(stderr) != "using token <redacted>\n" {
		t.Errorf("raw stderr = %q, want the token scrubbed", stderr)
	}
	if _, err := os.Stat(filepath.Join(s.RawDir(r.Experiment, r.ID), "workers", "rpc-0.log")); err != nil {
		t.Errorf("raw worker log: %v", err)
	}

	// Never overwrite.
	again := testRun("20260508T032753Z-3f9a", "minimax-m27-b70/baseline", t0, 1)
	if _, err := s.Write(again, nil); !errors.Is(err, ErrExists) {
		t.Errorf("writing the same id again: got %v, want ErrExists", err)
	}
	if b, _ := os.ReadFile(path); string(b) != string(data) {
		t.Errorf("the first record changed")
	}
	left, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".*tmp"))
	if len(left) > 0 {
		t.Errorf("temporary files left: %q", left)
	}

	for _, c := range []struct {
		exp, id string
		raw     map[string][]byte
	}{
		{"../escape", "20260508T032753Z-0001", nil},
		{"a/../../b", "20260508T032753Z-0001", nil},
		{"/abs/x", "20260508T032753Z-0001", nil},
		{"ok/x", "../x", nil},
		{"ok/x", "", nil},
		{"ok/x", "20260508T032753Z-0002", map[string][]byte{"../stdout": nil}},
		{"ok/x", "20260508T032753Z-0003", map[string][]byte{"/etc/passwd": nil}},
	} {
		if _, err := s.Write(testRun(c.id, c.exp, t0, 1), c.raw); err == nil {
			t.Errorf("Write(experiment %q, id %q, raw %v) succeeded, want an error", c.exp, c.id, c.raw)
		}
	}
}

func TestLoad_errors(t *testing.T) {
	good, err := Encode(testRun("20260508T032753Z-3f9a", "x/y", t0, 1, 2, 3))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, data string
		want       string // substring of the error, after the path
		is         error
	}{
		{"empty", "", "empty file", ErrTruncated},
		{"spaces", "  \n", "empty file", ErrTruncated},
		{"truncated", string(good[:len(good)/2]), "truncated: the JSON ends after", ErrTruncated},
		{"array", "[1,2]", ":1:1: not a run record: expected a JSON object", nil},
		{"syntax", "{\n  \"schema\": 1,\n  \"id\": x\n}", ":3:9: malformed JSON: invalid character 'x'", nil},
		{"type", "{\n  \"schema\": \"one\"\n}", ":2:17: schema: got JSON string, want int", nil},
		{"no schema", `{"id":"a","experiment":"x/y","status":"ok"}`, `: no "schema" field: not a rigor run record`, ErrSchema},
		{"newer schema", `{"schema":2,"id":"a","experiment":"x/y","status":"ok"}`, ": unsupported schema version 2: this rigor reads schema 1; upgrade rigor", ErrSchema},
		{"no id", `{"schema":1,"experiment":"x/y","status":"ok"}`, `missing "id"`, nil},
		{"no experiment", `{"schema":1,"id":"a","status":"ok"}`, `missing "experiment"`, nil},
		{"no status", `{"schema":1,"id":"a","experiment":"x/y"}`, `missing "status"`, nil},
		{"bad status", `{"schema":1,"id":"a","experiment":"x/y","status":"done"}`, `unknown status "done"`, nil},
		{"nameless metric", `{"schema":1,"id":"a","experiment":"x/y","status":"ok","metrics":[{"value":1}]}`, `metrics[0]: missing "name"`, nil},
	} {
		p := filepath.Join(t.TempDir(), "r.json")
		os.WriteFile(p, []byte(c.data), 0o644)
		_, err := Load(p)
		var le *LoadError
		if !errors.As(err, &le) || le.Path != p {
			t.Errorf("%s: Load(%q) = %v, want a *LoadError for %s", c.name, c.data, err, p)
			continue
		}
		if msg := strings.TrimPrefix(err.Error(), p); !strings.Contains(msg, c.want) {
			t.Errorf("%s: Load(%q) = %q, want it to contain %q", c.name, c.data, msg, c.want)
		}
		if c.is != nil && !errors.Is(err, c.is) {
			t.Errorf("%s: Load(%q) = %v, want errors.Is %v", c.name, c.data, err, c.is)
		}
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing.json")); !errors.Is(err, ErrNotFound) || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load(missing) = %v, want ErrNotFound and fs.ErrNotExist", err)
	}
	r, err := Decode([]byte(`{"schema":1,"id":"a","experiment":"x/y","status":"ok","future":{"field":true}}`))
	if err != nil || r.Point != "x/y" {
		t.Errorf("a record with an unknown field: %v, point %q; want it loaded with point x/y", err, r.Point)
	}
}

var writeFile = gittest.WriteFile

func TestStore_List(t *testing.T) {
	s := Open(t.TempDir())
	if runs, warns, err := s.List(Filter{}); err != nil || len(runs) != 0 || len(warns) != 0 {
		t.Fatalf("List of a missing results dir = %d runs, %v, %v; want nothing", len(runs), warns, err)
	}
	mk := func(id, exp, point string, minute int) {
		r := testRun(id, exp, t0.Add(time.Duration(minute)*time.Minute), 1, 2, 3)
		r.Point = point
		if _, err := s.Write(r, map[string][]byte{"engine.json": []byte(`{"not":"a record"}`)}); err != nil {
			t.Fatal(err)
		}
	}
	mk("20260508T040000Z-0003", "m/base", "m/base", 30)
	mk("20260508T032753Z-0001", "m/base", "m/base", 0)
	mk("20260508T033000Z-0002", "m/sweep", "m/sweep[ub=16]", 10)
	mk("20260508T034000Z-0004", "m/sweep", "m/sweep[ub=32,t=4]", 20)
	mk("20260508T035000Z-0005", "m/base/nested", "m/base/nested", 25)
	writeFile(t, filepath.Join(s.Dir, "m", "base", "broken.json"), `{"schema":1,"id":`)
	writeFile(t, filepath.Join(s.Dir, "m", "base", ".hidden.json"), `garbage`)
	writeFile(t, filepath.Join(s.Dir, "stray.json"), `garbage`)

	ids := func(runs []*Run) string {
		var out []string
		for _, r := range runs {
			out = append(out, r.ID)
		}
		return strings.Join(out, " ")
	}
	for _, c := range []struct {
		f     Filter
		want  string
		warns int
	}{
		{Filter{}, "20260508T032753Z-0001 20260508T033000Z-0002 20260508T034000Z-0004 20260508T035000Z-0005 20260508T040000Z-0003", 1},
		{Filter{Experiment: "m/base"}, "20260508T032753Z-0001 20260508T040000Z-0003", 1},
		{Filter{Experiment: "m/sweep"}, "20260508T033000Z-0002 20260508T034000Z-0004", 0},
		{Filter{Experiment: "m/sweep", Point: "m/sweep[t=4, ub=32]"}, "20260508T034000Z-0004", 0},
		{Filter{Experiment: "m/none"}, "", 0},
	} {
		runs, warns, err := s.List(c.f)
		if err != nil {
			t.Errorf("List(%+v): %v", c.f, err)
			continue
		}
		if got := ids(runs); got != c.want {
			t.Errorf("List(%+v) = %s, want %s", c.f, got, c.want)
		}
		if len(warns) != c.warns {
			t.Errorf("List(%+v) warnings = %v, want %d", c.f, warns, c.warns)
		} else if c.warns > 0 && !strings.Contains(warns[0].Error(), filepath.Join("m", "base", "broken.json")+": truncated") {
			t.Errorf("List(%+v) warning = %v, want it to name broken.json as truncated", c.f, warns[0])
		}
	}
	if _, _, err := s.List(Filter{Experiment: "../x"}); err == nil {
		t.Errorf("List(../x) succeeded, want an error")
	}

	p, err := s.Find("20260508T034000Z-0004")
	if err != nil || p != s.RecordPath("m/sweep", "20260508T034000Z-0004") {
		t.Errorf("Find = %q, %v; want the record of m/sweep", p, err)
	}
	if _, err := s.Find("20260508T000000Z-ffff"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Find(unknown) = %v, want ErrNotFound", err)
	}
}

func TestLatestPerPoint(t *testing.T) {
	mk := func(id, point, status string, minute int) *Run {
		r := testRun(id, "m/s", t0.Add(time.Duration(minute)*time.Minute), 1)
		r.Point, r.Status = point, status
		return r
	}
	runs := []*Run{
		mk("a1", "m/s[ub=16]", StatusOK, 0),
		mk("a2", "m/s[ub=16]", StatusOK, 10),
		mk("a3", "m/s[ub=16]", StatusFailed, 20), // latest, but failed
		mk("b1", "m/s[ub=32]", StatusOK, 5),
		mk("c1", "m/s[ub=64]", StatusFailed, 1),
		mk("c2", "m/s[ub=64]", StatusCrashed, 2),
	}
	var got []string
	for _, r := range LatestPerPoint(runs) {
		got = append(got, r.ID)
	}
	if want := []string{"c2", "b1", "a2"}; !reflect.DeepEqual(got, want) {
		t.Errorf("LatestPerPoint = %v, want %v (latest ok run per point, else the latest; in start order)", got, want)
	}
}

func TestLatestInvocationPerPoint(t *testing.T) {
	mk := func(id, point, inv string, round, minute int) *Run {
		r := testRun(id, "m/s", t0.Add(time.Duration(minute)*time.Minute), 1)
		r.Point, r.Status, r.Invocation, r.Round = point, StatusOK, inv, round
		return r
	}
	runs := []*Run{
		mk("old", "m/s[ub=16]", "", 0, 0),
		mk("i1r1", "m/s[ub=16]", "inv1", 1, 10),
		mk("i1r2", "m/s[ub=16]", "inv1", 2, 12),
		mk("i1r3", "m/s[ub=16]", "inv1", 3, 14),
		mk("i0", "m/s[ub=32]", "inv0", 1, 1),
		mk("b1", "m/s[ub=32]", "", 0, 5), // latest of its point, no invocation: alone
	}
	var got []string
	for _, r := range LatestInvocationPerPoint(runs) {
		got = append(got, r.ID)
	}
	if want := []string{"b1", "i1r1", "i1r2", "i1r3"}; !reflect.DeepEqual(got, want) {
		t.Errorf("LatestInvocationPerPoint = %v, want %v (every round of the latest invocation; a run without one alone)", got, want)
	}
}

func TestParseRef(t *testing.T) {
	for _, c := range []struct {
		ref, id string
		kind    RefKind
		rev     string
	}{
		{"20260508T032753Z-3f9a", "20260508T032753Z-3f9a", RefRun, ""},
		{"20260508T032753Z-3f9a@HEAD~2", "20260508T032753Z-3f9a", RefRun, "HEAD~2"},
		{"minimax-m27-b70/baseline", "minimax-m27-b70/baseline", RefExperiment, ""},
		{"minimax-m27-b70/baseline@v1.0", "minimax-m27-b70/baseline", RefExperiment, "v1.0"},
		{"m/ubSweep[ub=16]@main", "m/ubSweep[ub=16]", RefPoint, "main"},
		{"results/m/x/20260508T032753Z-3f9a.json", "results/m/x/20260508T032753Z-3f9a.json", RefFile, ""},
		{"./r.json@HEAD", "./r.json", RefFile, "HEAD"},
		{"m/x@", "m/x@", RefExperiment, ""},
	} {
		id, kind, rev := ParseRef(c.ref)
		if id != c.id || kind != c.kind || rev != c.rev {
			t.Errorf("ParseRef(%q) = %q, %s, %q; want %q, %s, %q", c.ref, id, kind, rev, c.id, c.kind, c.rev)
		}
	}
}

func ExampleNewRunID() {
	id := NewRunID(time.Date(2026, 5, 8, 3, 27, 53, 0, time.UTC))
	fmt.Println(id[:17], IsRunID(id))
	// Output: 20260508T032753Z- true
}
