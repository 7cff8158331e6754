package cli

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/rigorbench/rigor/internal/engine"
)

var update = flag.Bool("update", false, "rewrite golden files")

func repoRoot(t *testing.T) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// seedIDs are the experiments that capture the seed records.
var seedIDs = []string{
	"minimax-m27-b70/baseline",
	"minimax-m27-b70/kvoffloadSmoke",
	"minimax-m27-b70/kvoffload",
	"minimax-m27-b70/ubSweep",
	"minimax-m27-b70/sas1",
	"minimax-m27-b70/q8kv",
	"minimax-m27-b70/q8kF16v",
	"minimax-m27-b70/ropeCache",
	"minimax-m27-b70/timingProbe",
	"minimax-m27-b70/sasLeaderboard",
	"minimax-m27-int4-b70/vllmThroughput",
}

func runCLI(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Run(args, &out, &errb)
	return out.String(), errb.String(), code
}

// TestSeedPlans compares the plan of every seed experiment with its golden
// file (go test ./internal/cli -run TestSeedPlans -update rewrites them).
func TestSeedPlans(t *testing.T) {
	root := repoRoot(t)
	for _, id := range seedIDs {
		t.Run(strings.ReplaceAll(id, "/", "_"), func(t *testing.T) {
			stdout, stderr, code := runCLI(t, "-C", root, "show", id, "--plan")
			if code != 0 {
				t.Fatalf("rigor show %s: exit %d\n%s", id, code, stderr)
			}
			golden := filepath.Join("testdata", "plans", strings.ReplaceAll(id, "/", "_")+".txt")
			if *update {
				os.MkdirAll(filepath.Dir(golden), 0o755)
				if err := os.WriteFile(golden, []byte(stdout), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if stdout != string(want) {
				os.WriteFile(golden+".got", []byte(stdout), 0o644)
				t.Errorf("plan of %s differs from %s (got written to %s.got)\ngot:\n%s\nwant:\n%s", id, golden, golden, stdout, want)
			}
		})
	}
}

// flagPairs splits a command line into its flags with their values.
func flagPairs(words []string) map[string]string {
	m := map[string]string{}
	isFlag := func(w string) bool {
		return len(w) > 1 && w[0] == '-' && (w[1] == '-' || w[1] >= 'a' && w[1] <= 'z' || w[1] >= 'A' && w[1] <= 'Z')
	}
	for i := 0; i < len(words); i++ {
		if !isFlag(words[i]) {
			continue
		}
		v := ""
		if i+1 < len(words) && !isFlag(words[i+1]) {
			v = words[i+1]
			i++
		}
		m[words[i-btoi(v != "")]] = v
	}
	return m
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

type showJSON struct {
	Points []struct {
		ID   string       `json:"id"`
		Plan *engine.Plan `json:"plan"`
	} `json:"points"`
}

func benchProcess(t *testing.T, root, id string) engine.Process {
	t.Helper()
	stdout, stderr, code := runCLI(t, "-C", root, "show", id, "--json")
	if code != 0 {
		t.Fatalf("rigor show %s --json: exit %d\n%s", id, code, stderr)
	}
	var s showJSON
	if err := json.Unmarshal([]byte(stdout), &s); err != nil {
		t.Fatal(err)
	}
	procs := s.Points[0].Plan.Processes
	return procs[len(procs)-1]
}

// checkCommand asserts that every flag of a seed's command appears in the
// plan's bench argv with the same value (order aside), and every env
// assignment in its environment.
func checkCommand(t *testing.T, root, id, command string) {
	t.Helper()
	words := strings.Fields(command)
	env := map[string]string{}
	for len(words) > 0 && strings.Contains(words[0], "=") && !strings.HasPrefix(words[0], "-") {
		k, v, _ := strings.Cut(words[0], "=")
		env[k] = v
		words = words[1:]
	}
	p := benchProcess(t, root, id)
	got := flagPairs(p.Argv)
	for flag, want := range flagPairs(words) {
		have, ok := got[flag]
		switch {
		case !ok:
			t.Errorf("%s: seed flag %s %s is missing from the plan: %s", id, flag, want, strings.Join(p.Argv, " "))
		case flag == "-m" || flag == "--model" || flag == "--tokenizer":
			if !strings.HasSuffix(have, want) {
				t.Errorf("%s: %s is %q, want a path ending in %q", id, flag, have, want)
			}
		case have != want:
			t.Errorf("%s: %s is %q, want %q (seed)", id, flag, have, want)
		}
	}
	for k, v := range env {
		if p.Env[k] != v {
			t.Errorf("%s: env %s=%q, want %q (seed)", id, k, p.Env[k], v)
		}
	}
}

func readSeed(t *testing.T, name string, v any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "seeds", name))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatal(err)
	}
}

// TestSeedCommands checks each seed experiment against the command its seed
// record holds: seed 000's commandTail per labelled run, seed 003's
// observed_command, seed 004's commandSnippet.
func TestSeedCommands(t *testing.T) {
	root := repoRoot(t)

	var s000 struct {
		Runs []struct {
			Label       string `json:"label"`
			CommandTail string `json:"commandTail"`
		} `json:"runs"`
	}
	readSeed(t, "000_6ca3690f63b2438f.json", &s000)
	byLabel := map[string]string{
		"K/Q/V offload enabled smoke": "minimax-m27-b70/kvoffloadSmoke",
		"K/Q/V offload enabled r3":    "minimax-m27-b70/kvoffload",
	}
	checked := 0
	for _, r := range s000.Runs {
		if r.CommandTail == "" {
			continue
		}
		id, ok := byLabel[r.Label]
		if !ok {
			t.Errorf("seed 000 run %q has a command but no experiment", r.Label)
			continue
		}
		checkCommand(t, root, id, r.CommandTail)
		checked++
	}
	if checked != 2 {
		t.Errorf("checked %d seed 000 commands, want 2", checked)
	}

	var s003 struct {
		Data struct {
			Metadata struct {
				LocalMaxxing struct {
					ObservedCommand string `json:"observed_command"`
				} `json:"localmaxxing"`
			} `json:"metadata"`
		} `json:"data"`
	}
	readSeed(t, "003_876d20171dbd1767.json", &s003)
	cmd := s003.Data.Metadata.LocalMaxxing.ObservedCommand
	if cmd == "" {
		t.Fatal("seed 003 has no observed_command")
	}
	checkCommand(t, root, "minimax-m27-b70/sasLeaderboard", strings.Replace(cmd, " llama-bench ", " ", 1))

	var s004 struct {
		EngineFlags struct {
			CommandSnippet string `json:"commandSnippet"`
		} `json:"engineFlags"`
	}
	readSeed(t, "004_5d337bcd44405d36.json", &s004)
	snippet := strings.Replace(s004.EngineFlags.CommandSnippet, " vllm bench throughput ", " ", 1)
	checkCommand(t, root, "minimax-m27-int4-b70/vllmThroughput", snippet)
}
