package llamacpp

import (
	"os"
	"strings"
	"testing"

	"github.com/rigorbench/rigor/internal/engine"
)

func TestJudgeQuality(t *testing.T) {
	b, _ := os.ReadFile("../llamabench/testdata/kld-upstream.txt")
	job := engine.QualityJob{Ctx: 512, Chunks: 3}
	q, err := Engine{}.JudgeQuality(job, engine.Finished{Stdout: b})
	if err != nil {
		t.Fatal(err)
	}
	if q.Tokens != 3*255 || q.Tool != "llama-perplexity" {
		t.Errorf("tokens %d tool %q", q.Tokens, q.Tool)
	}
	if _, err := (Engine{}).JudgeQuality(job, engine.Finished{Stdout: b, ExitCode: 1, Stderr: []byte("kl_divergence: inconsistent vocabulary (259 vs 32000)\n")}); err == nil || !strings.Contains(err.Error(), "inconsistent vocabulary") {
		t.Errorf("failed run: %v", err)
	}
	job.WriteBase = true
	if _, err := (Engine{}).JudgeQuality(job, engine.Finished{}); err == nil || !strings.Contains(err.Error(), "Final estimate") {
		t.Errorf("base run without estimate: %v", err)
	}
}
