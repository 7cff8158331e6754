package slurm

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestScript_Render(t *testing.T) {
	s := &Script{
		Name: "rigor:quickstart/tiny", Partition: "gpu", Account: "lab", Time: "01:00:00", Tasks: 4,
		Output:  "/m/.rigor/slurm/b1/%A_%a.out",
		Workdir: "/m",
		Request: Request{GPUs: 4, GPUType: "b70", Constraint: "(a|b)&c", MemMB: 2048, CPUs: 8},
		Extra:   []string{"--qos=bench", "--comment=it's"},
		Command: []string{"/opt/rigor bin/rigor", "jobs", "task", "/m/.rigor/slurm/b1", "quickstart/tiny[t=2]"},
	}
	if err := s.Check(); err != nil {
		t.Fatal(err)
	}
	got := s.Render()
	golden := filepath.Join("testdata", "script.golden")
	if os.Getenv("RIGOR_UPDATE") != "" {
		os.WriteFile(golden, []byte(got), 0o644)
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		os.WriteFile(golden+".got", []byte(got), 0o644)
		t.Errorf("Render() differs from %s (written %s.got):\n%s", golden, golden, got)
	}
}

func TestScript_Check(t *testing.T) {
	for _, tc := range []struct {
		s    Script
		want string
	}{
		{Script{Extra: []string{"qos=high"}, Command: []string{"x"}}, `sbatch option "qos=high": options start with -`},
		{Script{Extra: []string{"--comment=a\n#SBATCH --x"}, Command: []string{"x"}}, "a line break is not allowed"},
		{Script{}, "the job has no command"},
	} {
		err := tc.s.Check()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Check(%+v) = %v, want %q", tc.s, err, tc.want)
		}
	}
}
