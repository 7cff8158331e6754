package llamabench

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rigorbench/rigor/internal/results"
)

// fixtureDir holds copies of every llama-bench case in
// ../shared/fixtures/llama-bench (beside the project root): <case>.stdout, .stderr and .rc.
const fixtureDir = "testdata/output"

// sharedFixtureDir is where the fixtures come from; when it exists, every
// case in it must have been copied here.
const sharedFixtureDir = "../../../../shared/fixtures/llama-bench"

// fixtureCase is what Classify must make of one fixture.
type fixtureCase struct {
	status string
	// errHas are fragments Outcome.Error must contain.
	errHas []string
	// metrics lists the metric keys (name and test) of every row, in
	// order, joined by ", "; it fixes the row count too.
	metrics string
	// samples is the number of samples per row (-r).
	samples int
	// format is the OutputFormatError.Format ParseJSON must return, if any.
	format string
}

func rep(s string, n int) string { return strings.TrimSuffix(strings.Repeat(s+", ", n), ", ") }

const ppTg = "tokSPrompt pp32, tokSOut tg16"

func mdCase() fixtureCase {
	return fixtureCase{status: results.StatusFailed, errHas: []string{"output is markdown, not JSON"}, format: "markdown"}
}

func rejected(arg string) fixtureCase {
	return fixtureCase{status: results.StatusFailed, errHas: []string{"engine rejected arguments: " + arg}, format: "usage text"}
}

func okCase(metrics string, samples int) fixtureCase {
	return fixtureCase{status: results.StatusOK, metrics: metrics, samples: samples}
}

// fixtureCases lists every fixture; a fixture missing here fails the test.
var fixtureCases = map[string]fixtureCase{
	"ik_llama.cpp_ctk_ctv_f16_json":        okCase(ppTg, 2),
	"ik_llama.cpp_ctk_q8_fa_json":          okCase(rep(ppTg, 4), 2),
	"ik_llama.cpp_ctk_q8_fa_md":            mdCase(),
	"ik_llama.cpp_err_bad_flag_value":      okCase("tokSOut tg16", 1), // -ctk bogus silently read as f16: VerifyRows catches it
	"ik_llama.cpp_err_bad_flag_value_last": rejected("-ctk (usage: -ctk, --cache-type-k"),
	"ik_llama.cpp_err_bad_int":             okCase("tokSOut tg16", 1), // -p abc read as 0
	"ik_llama.cpp_err_bad_model_file": {status: results.StatusFailed,
		errHas: []string{"failed to load model 'make_tiny_gguf.py'", "invalid magic characters"}},
	"ik_llama.cpp_err_bad_output": rejected("-o (usage: -o, --output <csv|json|md|sql>"),
	"ik_llama.cpp_err_missing_model": {status: results.StatusFailed,
		errHas: []string{"failed to load model 'models/does-not-exist.gguf'", "No such file or directory"}},
	"ik_llama.cpp_err_mqkv_novalue_abort": {status: results.StatusFailed,
		errHas: []string{"engine rejected arguments", "std::invalid_argument from stoi"}},
	"ik_llama.cpp_err_progress_flag": rejected("--progress (not in this build's usage text)"),
	"ik_llama.cpp_err_rpc_unreachable": {status: results.StatusFailed,
		errHas: []string{"engine crashed (exit 139, SIGSEGV) before printing results", "Failed to connect to 127.0.0.1:1"}},
	"ik_llama.cpp_err_unknown_flag":  rejected("--no-such-flag"),
	"ik_llama.cpp_fmoe_rtr_json":     okCase(ppTg, 2),
	"ik_llama.cpp_fmoe_rtr_md":       mdCase(),
	"ik_llama.cpp_gp_json":           okCase("tokSOut tg16@pp32", 2),
	"ik_llama.cpp_gp_md":             mdCase(),
	"ik_llama.cpp_ikflags_json":      okCase(rep(ppTg, 2), 2),
	"ik_llama.cpp_ikflags_md":        mdCase(),
	"ik_llama.cpp_json_plus_oe_md":   okCase(ppTg, 2),
	"ik_llama.cpp_mqkv_rcache_md":    mdCase(),
	"ik_llama.cpp_multimodel_md":     mdCase(),
	"ik_llama.cpp_ngl0_json":         okCase(ppTg, 2),
	"ik_llama.cpp_nkvo_json":         okCase(rep(ppTg, 2), 2),
	"ik_llama.cpp_nkvo_md":           mdCase(),
	"ik_llama.cpp_ot_json":           okCase(ppTg, 2),
	"ik_llama.cpp_pg_json":           okCase("tokSTotal pp32+tg16", 2),
	"ik_llama.cpp_pp32_tg16_r2_json": okCase(ppTg, 2),
	"ik_llama.cpp_pp32_tg16_r2_md":   mdCase(),
	// The rpc-server's own log, not llama-bench output (no .rc): garbage.
	"ik_llama.cpp_rpc-server": {status: results.StatusFailed,
		errHas: []string{`not JSON: starts with "Starting RPC server`}, format: "unrecognized"},
	"ik_llama.cpp_rpc_crash_verbose": {status: results.StatusCrashed, metrics: "tokSOut tg16", samples: 1,
		errHas: []string{"engine crashed (exit 134, SIGABRT) after 1 row", "double free or corruption"}},
	"ik_llama.cpp_rpc_json": {status: results.StatusCrashed, metrics: "tokSPrompt pp32", samples: 2,
		errHas: []string{"engine crashed (exit 134, SIGABRT) after 1 row", "double free or corruption"}},
	"ik_llama.cpp_rpc_md": {status: results.StatusFailed, format: "markdown",
		errHas: []string{"output is markdown", "also crashed (exit 134, SIGABRT)", "double free or corruption"}},
	"ik_llama.cpp_rpc_ngl0_json":   okCase(ppTg, 2),
	"ik_llama.cpp_rtr1_q8_json":    okCase(ppTg, 2),
	"ik_llama.cpp_rtr_f16_md":      mdCase(),
	"ik_llama.cpp_sweep_ub_t_json": okCase(rep(ppTg, 4), 2),
	"ik_llama.cpp_sweep_ub_t_md":   mdCase(),
	"ik_llama.cpp_tg16_r3_csv":     {status: results.StatusFailed, errHas: []string{"output is CSV, not JSON"}, format: "CSV"},
	"ik_llama.cpp_tg16_r3_default": mdCase(),
	"ik_llama.cpp_tg16_r3_json":    okCase("tokSOut tg16", 3),
	"ik_llama.cpp_tg16_r3_jsonl":   rejected("-o (usage: -o, --output <csv|json|md|sql>"), // ik has no jsonl
	"ik_llama.cpp_tg16_r3_md":      mdCase(),
	"ik_llama.cpp_tg16_r3_sql":     {status: results.StatusFailed, errHas: []string{"output is SQL, not JSON"}, format: "SQL"},
	"ik_llama.cpp_tgb_json":        okCase(ppTg, 2),
	"ik_llama.cpp_tgb_md":          mdCase(),
	"ik_llama.cpp_verbose_json":    okCase("tokSOut tg16", 1),

	"llama.cpp-cpu_ctk_ctv_f16_json": okCase(ppTg, 2),
	"llama.cpp-cpu_ctk_q8_fa_md":     mdCase(),
	"llama.cpp-cpu_err_missing_model": {status: results.StatusFailed,
		errHas: []string{"failed to load model 'models/does-not-exist.gguf'", "failed to open GGUF file"}},
	"llama.cpp-cpu_err_rpc_not_compiled": rejected("-rpc (not in this build's usage text)"),
	"llama.cpp-cpu_nkvo_md":              mdCase(),
	"llama.cpp-cpu_pg_md":                mdCase(),
	"llama.cpp-cpu_pp32_tg16_r2_json":    okCase(ppTg, 2),
	"llama.cpp-cpu_pp32_tg16_r2_md":      mdCase(),
	"llama.cpp-cpu_sweep_ub_t_json":      okCase(rep(ppTg, 4), 2),
	"llama.cpp-cpu_sweep_ub_t_md":        mdCase(),
	"llama.cpp-cpu_tg16_r3_csv":          {status: results.StatusFailed, errHas: []string{"output is CSV"}, format: "CSV"},
	"llama.cpp-cpu_tg16_r3_default":      mdCase(),
	"llama.cpp-cpu_tg16_r3_json":         okCase("tokSOut tg16", 3),
	"llama.cpp-cpu_tg16_r3_jsonl":        okCase("tokSOut tg16", 3),
	"llama.cpp-cpu_tg16_r3_md":           mdCase(),

	"llama.cpp_ctk_ctv_f16_json":   okCase(ppTg, 2),
	"llama.cpp_ctk_q8_fa_json":     okCase(rep(ppTg, 4), 2),
	"llama.cpp_ctk_q8_fa_md":       mdCase(),
	"llama.cpp_err_bad_flag_value": rejected("-ctk (usage: -ctk, --cache-type-k"),
	"llama.cpp_err_bad_int":        okCase("tokSOut tg16", 1), // -p abc read as 0
	"llama.cpp_err_bad_model_file": {status: results.StatusFailed,
		errHas: []string{"failed to load model 'make_tiny_gguf.py'", "invalid magic characters"}},
	"llama.cpp_err_bad_output": rejected("-o (usage: -o, --output <csv|json|jsonl|md|sql>"),
	"llama.cpp_err_missing_model": {status: results.StatusFailed,
		errHas: []string{"failed to load model 'models/does-not-exist.gguf'", "failed to open GGUF file"}},
	"llama.cpp_err_rpc_unreachable": {status: results.StatusFailed,
		errHas: []string{"failed to load model 'models/tiny-llama.gguf'", "Failed to connect to 127.0.0.1:1"}},
	"llama.cpp_err_unknown_flag":  rejected("--no-such-flag"),
	"llama.cpp_json_plus_oe_md":   okCase(ppTg, 2),
	"llama.cpp_multimodel_md":     mdCase(),
	"llama.cpp_ngl0_json":         okCase(ppTg, 2),
	"llama.cpp_nkvo_json":         okCase(rep(ppTg, 2), 2),
	"llama.cpp_nkvo_md":           mdCase(),
	"llama.cpp_pg_json":           okCase("tokSTotal pp32+tg16", 2),
	"llama.cpp_pp32_tg16_r2_json": okCase(ppTg, 2),
	"llama.cpp_pp32_tg16_r2_md":   mdCase(),
	"llama.cpp_progress_jsonl":    okCase(ppTg, 2),
	"llama.cpp_rpc-server": {status: results.StatusFailed,
		errHas: []string{`not JSON: starts with "Starting RPC server`}, format: "unrecognized"},
	"llama.cpp_rpc_json":          okCase(ppTg, 2),
	"llama.cpp_rpc_md":            mdCase(),
	"llama.cpp_sweep_ub_t_json":   okCase(rep(ppTg, 4), 2),
	"llama.cpp_sweep_ub_t_md":     mdCase(),
	"llama.cpp_tg16_r3_csv":       {status: results.StatusFailed, errHas: []string{"output is CSV"}, format: "CSV"},
	"llama.cpp_tg16_r3_default":   mdCase(),
	"llama.cpp_tg16_r3_json":      okCase("tokSOut tg16", 3),
	"llama.cpp_tg16_r3_jsonl":     okCase("tokSOut tg16", 3),
	"llama.cpp_tg16_r3_md":        mdCase(),
	"llama.cpp_tg16_r3_sql":       {status: results.StatusFailed, errHas: []string{"output is SQL"}, format: "SQL"},
	"llama.cpp_ub0_accepted_json": okCase("tokSPrompt pp32", 1),
	"llama.cpp_verbose_json":      okCase("tokSOut tg16", 1),
}

// fixture is one case's files.
type fixture struct {
	name           string
	stdout, stderr []byte
	rc             int
}

func readFixture(t testing.TB, name string) fixture {
	t.Helper()
	base := filepath.Join(fixtureDir, name)
	stdout, err := os.ReadFile(base + ".stdout")
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := os.ReadFile(base + ".stderr")
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	fx := fixture{name: name, stdout: stdout, stderr: stderr}
	rc, err := os.ReadFile(base + ".rc")
	switch {
	case errors.Is(err, os.ErrNotExist): // a worker's log: no exit status
	case err != nil:
		t.Fatal(err)
	default:
		if fx.rc, err = strconv.Atoi(strings.TrimSpace(string(rc))); err != nil {
			t.Fatalf("%s.rc: %v", base, err)
		}
	}
	return fx
}

func fixtureNames(t testing.TB, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.stdout"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		names = append(names, strings.TrimSuffix(filepath.Base(f), ".stdout"))
	}
	return names
}

func TestClassify_fixtures(t *testing.T) {
	names := fixtureNames(t, fixtureDir)
	if len(names) < len(fixtureCases) {
		t.Errorf("found %d fixtures in %s, want at least the %d listed", len(names), fixtureDir, len(fixtureCases))
	}
	seen := map[string]bool{}
	for _, name := range names {
		seen[name] = true
		want, ok := fixtureCases[name]
		if !ok {
			t.Errorf("fixture %s has no expectation in fixtureCases", name)
			continue
		}
		fx := readFixture(t, name)
		t.Run(name, func(t *testing.T) {
			o := Classify(fx.stdout, fx.stderr, fx.rc, false)
			if o.Status != want.status {
				t.Errorf("Classify(%s, rc %d).Status = %q (error %q), want %q", name, fx.rc, o.Status, o.Error, want.status)
			}
			for _, frag := range want.errHas {
				if !strings.Contains(o.Error, frag) {
					t.Errorf("Classify(%s).Error = %q, want it to contain %q", name, o.Error, frag)
				}
			}
			if (o.Status == results.StatusOK) != (o.Error == "") {
				t.Errorf("Classify(%s) = status %q with error %q: want an error exactly when not ok", name, o.Status, o.Error)
			}
			if o.Status != results.StatusOK && o.LogTail == "" && len(strings.TrimSpace(string(fx.stderr))) > 0 {
				t.Errorf("Classify(%s).LogTail is empty, want the end of stderr", name)
			}
			if n := strings.Count(o.LogTail, "\n") + 1; n > outTailLines {
				t.Errorf("Classify(%s).LogTail has %d lines, want at most %d", name, n, outTailLines)
			}

			var keys []string
			for i, r := range o.Rows {
				ms := r.Metrics()
				if len(ms) != 1 {
					t.Fatalf("%s row %d: got %d metrics, want 1", name, i+1, len(ms))
				}
				m := ms[0]
				keys = append(keys, m.Key())
				if m.Unit != "tok/s" || m.Direction != results.HigherIsBetter {
					t.Errorf("%s row %d: got unit %q direction %q, want tok/s higher", name, i+1, m.Unit, m.Direction)
				}
				if len(m.Samples) != want.samples || len(r.SamplesNs) != want.samples {
					t.Errorf("%s row %d: got %d samples_ts and %d samples_ns, want %d", name, i+1, len(m.Samples), len(r.SamplesNs), want.samples)
				}
				if m.Value != r.AvgTs || m.Value <= 0 || m.Stddev != r.StddevTs {
					t.Errorf("%s row %d: metric value %v stddev %v, want avg_ts %v stddev_ts %v (> 0)", name, i+1, m.Value, m.Stddev, r.AvgTs, r.StddevTs)
				}
				checkCommonFields(t, name, i+1, r)
			}
			if got := strings.Join(keys, ", "); got != want.metrics {
				t.Errorf("%s: got metrics %q, want %q", name, got, want.metrics)
			}

			_, _, perr := ParseJSON(fx.stdout)
			var fe *OutputFormatError
			switch {
			case want.format == "" && perr != nil:
				t.Errorf("ParseJSON(%s) error: %v", name, perr)
			case want.format != "" && (!errors.As(perr, &fe) || fe.Format != want.format):
				t.Errorf("ParseJSON(%s) error = %v, want an OutputFormatError for %s", name, perr, want.format)
			}
		})
	}
	for name := range fixtureCases {
		if !seen[name] {
			t.Errorf("fixtureCases lists %s, but %s has no %s.stdout", name, fixtureDir, name)
		}
	}
}

// checkCommonFields checks what every row of the tiny-model fixtures
// reports, in either fork.
func checkCommonFields(t *testing.T, name string, i int, r Row) {
	t.Helper()
	ik := strings.HasPrefix(name, "ik_")
	check := func(field string, got, want any) {
		t.Helper()
		if got != want {
			t.Errorf("%s row %d: got %s %v, want %v", name, i, field, got, want)
		}
	}
	check("model_size", r.ModelSize > 0, true)
	check("model_n_params", r.ModelNParams, int64(1574144))
	check("cpu_info", r.CPUInfo, "AMD EPYC")
	check("test_time zero", r.TestTime.IsZero(), false)
	check("n_batch", r.NBatch, 2048)
	check("avg_ns > 0", r.AvgNs > 0, true)
	wantBackend := "CPU"
	switch {
	case strings.HasPrefix(name, "llama.cpp_"):
		wantBackend = "RPC" // this build says RPC even without a server
		check("build_commit", r.BuildCommit, "c392e5094")
	case strings.HasPrefix(name, "llama.cpp-cpu_"):
		check("build_commit", r.BuildCommit, "c392e5094")
	case ik && strings.Contains(name, "_rpc_"):
		wantBackend = "RPC"
	}
	check("backends", r.Backends, wantBackend)
	if ik {
		check("build_commit", r.BuildCommit, "8337e4cd3")
		check("build_number", r.BuildNumber, 4840)
		// ik prints rpc as the string "0" or "1".
		wantRPC := "0"
		if wantBackend == "RPC" {
			wantRPC = "1"
		}
		check("raw rpc", r.Fields["rpc"], any(wantRPC))
		if _, ok := r.Fields["mla_attn"]; !ok {
			t.Errorf("%s row %d: ik field mla_attn missing from Fields", name, i)
		}
		if r.Fields["test"] != any(r.Test) {
			t.Errorf("%s row %d: Test %q differs from ik's test field %v", name, i, r.Test, r.Fields["test"])
		}
	} else {
		check("build_number", r.BuildNumber, 4748)
		if _, ok := r.Fields["cpu_mask"]; !ok {
			t.Errorf("%s row %d: mainline field cpu_mask missing from Fields", name, i)
		}
	}
}

// TestFixtures_copied checks that every shared fixture was copied into
// testdata, so a new fixture cannot go untested.
func TestFixtures_copied(t *testing.T) {
	if _, err := os.Stat(sharedFixtureDir); err != nil {
		t.Skipf("no shared fixtures: %v", err)
	}
	for _, name := range fixtureNames(t, sharedFixtureDir) {
		for _, ext := range []string{".stdout", ".stderr", ".rc"} {
			src, err := os.ReadFile(filepath.Join(sharedFixtureDir, name+ext))
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			dst, err := os.ReadFile(filepath.Join(fixtureDir, name+ext))
			if err != nil || string(dst) != string(src) {
				t.Errorf("%s%s: testdata copy missing or different from %s (err %v)", name, ext, sharedFixtureDir, err)
			}
		}
	}
}
