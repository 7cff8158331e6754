package llamabench

import (
	"os"
	"strings"
	"testing"

	"github.com/rigorbench/rigor/internal/results"
)

// testdata/kld-upstream.txt is stdout of `llama-perplexity --kl-divergence`
// in the format upstream's tools/perplexity/perplexity.cpp prints (its
// format strings, with numbers of a small run); kld-self.txt is a model
// against itself, whose uncertainties C prints as nan and -nan.
func TestParseKLDivergence(t *testing.T) {
	b, err := os.ReadFile("testdata/kld-upstream.txt")
	if err != nil {
		t.Fatal(err)
	}
	q, err := ParseKLDivergence(b)
	if err != nil {
		t.Fatal(err)
	}
	want := results.QualityMeasured{Chunks: 3,
		PPL: 8.402043, PPLErr: 0.765512, PPLBase: 8.352621, PPLBaseErr: 0.761228, PPLRatio: 1.005917, PPLRatioErr: 0.006350,
		KLD: 0.008114, KLDErr: 0.000363, KLDMax: 0.343981, KLD999: 0.203467, KLD99: 0.064217, KLDMedian: 0.004217,
		RMSDeltaP: 2.889, RMSDeltaPErr: 0.151, SameTop: 95.033, SameTopErr: 0.786}
	if *q != want {
		t.Errorf("got  %+v\nwant %+v", *q, want)
	}

	b, err = os.ReadFile("testdata/kld-self.txt")
	if err != nil {
		t.Fatal(err)
	}
	q, err = ParseKLDivergence(b)
	if err != nil {
		t.Fatal(err)
	}
	if q.KLD != 0 || q.SameTop != 100 || q.RMSDeltaP != 0 || q.RMSDeltaPErr != 0 || q.PPLRatio != 1 || q.Chunks != 2 {
		t.Errorf("self: %+v", *q)
	}
}

// Fewer than 100 scored tokens: upstream prints the table and no
// statistics; that is an error that says why, never zeros.
func TestParseKLDivergence_missing(t *testing.T) {
	b, err := os.ReadFile("testdata/kld-upstream.txt")
	if err != nil {
		t.Fatal(err)
	}
	table, _, _ := strings.Cut(string(b), "====== Perplexity statistics")
	_, err = ParseKLDivergence([]byte(table))
	if err == nil || !strings.Contains(err.Error(), "printed no Mean PPL(Q), Mean PPL(base)") || !strings.Contains(err.Error(), "100 scored tokens") {
		t.Errorf("err = %v", err)
	}
	bad := strings.Replace(string(b), "Mean    KLD:   0.008114", "Mean    KLD:   nan", 1)
	if _, err := ParseKLDivergence([]byte(bad)); err == nil || !strings.Contains(err.Error(), `Mean    KLD: "nan" is not a number`) {
		t.Errorf("nan KLD: err = %v", err)
	}
}

func TestFinalEstimate(t *testing.T) {
	p, u, ok := FinalEstimate([]byte("perplexity: calculating perplexity over 4 chunks, n_ctx=128, batch_size=128, n_seq=1\nFinal estimate: PPL = 155.5561 +/- 12.64041\n"))
	if !ok || p != 155.5561 || u != 12.64041 {
		t.Errorf("got %v %v %v", p, u, ok)
	}
	if _, _, ok := FinalEstimate([]byte("Unexpected negative standard deviation of log(prob)\n")); ok {
		t.Error("no estimate read as one")
	}
}

// TestJudgePerplexity: the one judgement of a llama-perplexity-format run
// that llama.cpp's and node-llama-cpp's JudgeQuality share (issue 23's D8):
// a failed process by its status and stderr's last line, a base run by its
// "Final estimate", a comparison run by its statistics and the tokens
// scored (the second half of each chunk's context but one).
func TestJudgePerplexity(t *testing.T) {
	b, err := os.ReadFile("testdata/kld-upstream.txt")
	if err != nil {
		t.Fatal(err)
	}
	run := PerplexityRun{Program: "prog", Tool: "the tool", Ctx: 512, Stdout: b}
	q, err := JudgePerplexity(run)
	if err != nil {
		t.Fatal(err)
	}
	if q.Tokens != 3*255 || q.Tool != "the tool" || q.KLD != 0.008114 {
		t.Errorf("tokens %d tool %q KLD %g, want 765, the tool, 0.008114", q.Tokens, q.Tool, q.KLD)
	}

	failed := run
	failed.ExitCode, failed.Stderr = 1, []byte("loading\nkl_divergence: inconsistent vocabulary (259 vs 32000)\n\n")
	if _, err := JudgePerplexity(failed); err == nil || err.Error() != "prog exited with status 1: kl_divergence: inconsistent vocabulary (259 vs 32000)" {
		t.Errorf("failed run: %v", err)
	}
	killed := run
	killed.Signaled, killed.ExitCode = true, -1
	if _, err := JudgePerplexity(killed); err == nil || err.Error() != "prog exited with status -1" {
		t.Errorf("killed run: %v", err)
	}
	garbled := run
	garbled.Stdout = []byte("nothing\n")
	if _, err := JudgePerplexity(garbled); err == nil || !strings.HasPrefix(err.Error(), "prog printed no") {
		t.Errorf("run without statistics: %v", err)
	}

	base := PerplexityRun{Program: "prog", Ctx: 512, WriteBase: true, Stderr: []byte("Final estimate: PPL = 8.3526 +/- 0.76123\n")}
	if q, err := JudgePerplexity(base); q != nil || err != nil {
		t.Errorf("base run: %v, %v; want nothing measured, no error", q, err)
	}
	base.Stderr = []byte("out of memory\n")
	if _, err := JudgePerplexity(base); err == nil || err.Error() != `prog printed no "Final estimate: PPL = …": out of memory` {
		t.Errorf("base run without estimate: %v", err)
	}
}
