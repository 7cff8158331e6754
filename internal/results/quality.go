package results

import (
	"encoding/json"
	"fmt"
)

// Quality is what a record says of the model quality of its run: what the
// experiment declared (its spec's quality, without the measure request)
// and what was measured against the baseline.
type Quality struct {
	// Declared is the experiment's quality declaration (kvCache,
	// tradeoff, …) as the spec holds it.
	Declared json.RawMessage `json:"declared,omitempty"`
	// Measured is the measurement; absent when it failed (the record's
	// error says why).
	Measured *QualityMeasured `json:"measured,omitempty"`
}

// QualityMeasured is perplexity and KL divergence of the run's
// next-token distributions on a corpus, against a baseline's. Values
// are as the tool printed them: ± terms are one standard error;
// percentages (SameTop, RMSDeltaP) are in percent. An error term the
// tool printed as nan or inf (no spread: a baseline against itself) is 0.
type QualityMeasured struct {
	// Tool says what computed the statistics ("llama-perplexity").
	Tool string `json:"tool"`
	// Form is how the KL divergence was computed: absent (the full form)
	// from log-probabilities over the whole vocabulary, FormTopK from the
	// TopK most likely tokens of each position that a server returns
	// (vLLM's prompt_logprobs, OpenAI's echo with logprobs), the rest of
	// the vocabulary lumped into one bucket: a lower bound of the full
	// KLD (Bound says so in words). The other statistics are exact in
	// both forms.
	Form  string `json:"form,omitempty"`
	TopK  int    `json:"topK,omitempty"`
	Bound string `json:"bound,omitempty"`
	// Corpus is the corpus as the experiment names it; CorpusSHA256 its
	// bytes' hash.
	Corpus       string `json:"corpus"`
	CorpusSHA256 string `json:"corpusSha256"`
	// Ctx and Chunks are the context size and the number of chunks
	// evaluated; Tokens is how many tokens were scored (the second half
	// of each chunk).
	Ctx    int `json:"ctx"`
	Chunks int `json:"chunks"`
	Tokens int `json:"tokens"`
	// Baseline is the baseline experiment's id, BaselineLockDigest the
	// digest of its lock entry, and BaselinePoint its point's spec digest:
	// the reference logits are keyed by them.
	Baseline           string `json:"baseline"`
	BaselineLockDigest string `json:"baselineLockDigest"`
	BaselinePoint      string `json:"baselinePoint,omitempty"`

	PPL          float64 `json:"ppl"`
	PPLErr       float64 `json:"pplErr"`
	PPLBase      float64 `json:"pplBase"`
	PPLBaseErr   float64 `json:"pplBaseErr"`
	PPLRatio     float64 `json:"pplRatio"`
	PPLRatioErr  float64 `json:"pplRatioErr"`
	KLD          float64 `json:"kld"`
	KLDErr       float64 `json:"kldErr"`
	KLDMedian    float64 `json:"kldMedian"`
	KLD99        float64 `json:"kld99"`
	KLD999       float64 `json:"kld999"`
	KLDMax       float64 `json:"kldMax"`
	SameTop      float64 `json:"sameTop"`
	SameTopErr   float64 `json:"sameTopErr"`
	RMSDeltaP    float64 `json:"rmsDeltaP"`
	RMSDeltaPErr float64 `json:"rmsDeltaPErr"`
}

// Comparable says why two measurements cannot be set side by side
// (another corpus, context size, number of tokens or baseline), or ""
// when they can.
func (q *QualityMeasured) Comparable(o *QualityMeasured) string {
	switch {
	case q.FormName() != o.FormName():
		return fmt.Sprintf("the KL divergence's form differs (%s → %s): a top-k KLD is a lower bound of the full one", q.FormName(), o.FormName())
	case q.CorpusSHA256 != o.CorpusSHA256:
		return fmt.Sprintf("the corpus differs (%s %.8s → %s %.8s)", q.Corpus, q.CorpusSHA256, o.Corpus, o.CorpusSHA256)
	case q.Ctx != o.Ctx:
		return fmt.Sprintf("the context size differs (%d → %d)", q.Ctx, o.Ctx)
	case q.Chunks != o.Chunks || q.Tokens != o.Tokens:
		return fmt.Sprintf("the tokens scored differ (%d → %d)", q.Tokens, o.Tokens)
	case q.Baseline != o.Baseline:
		return fmt.Sprintf("the baseline differs (%s → %s)", q.Baseline, o.Baseline)
	case q.BaselineLockDigest != o.BaselineLockDigest || q.BaselinePoint != o.BaselinePoint:
		return fmt.Sprintf("the baseline %s was locked or configured otherwise", q.Baseline)
	}
	return ""
}

// FormTopK is QualityMeasured.Form of a top-k measurement.
const FormTopK = "top-k"

// TopKBound is what a top-k measurement's record says of its KL
// divergence.
const TopKBound = "the KL divergence is computed from the top-k log-probabilities of each position, the rest of the vocabulary lumped into one bucket: a lower bound of the full KL divergence, which it approaches as k grows; perplexity, Δp and same top token are exact"

// FormName names the KL divergence's form: "full", or "top-20".
func (q *QualityMeasured) FormName() string {
	if q.Form == FormTopK {
		return fmt.Sprintf("top-%d", q.TopK)
	}
	return "full"
}
