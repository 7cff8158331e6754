package results

import (
	"strings"
	"testing"
)

// A full KLD and a top-k one, or two top-k ones of different k, are not
// set side by side: a top-k KLD is a lower bound that depends on k.
func TestQualityComparable_form(t *testing.T) {
	base := QualityMeasured{Corpus: "builtin:opticks", CorpusSHA256: "ab", Ctx: 128, Chunks: 4, Tokens: 252, Baseline: "q/f16", BaselineLockDigest: "d"}
	full := base
	top20 := base
	top20.Form, top20.TopK = FormTopK, 20
	top5 := top20
	top5.TopK = 5
	for _, c := range []struct {
		a, b *QualityMeasured
		want string
	}{
		{&full, &full, ""},
		{&top20, &top20, ""},
		{&full, &top20, "the KL divergence's form differs (full → top-20)"},
		{&top20, &full, "the KL divergence's form differs (top-20 → full)"},
		{&top20, &top5, "the KL divergence's form differs (top-20 → top-5)"},
	} {
		got := c.a.Comparable(c.b)
		if c.want == "" && got != "" || !strings.HasPrefix(got, c.want) {
			t.Errorf("%s vs %s: %q, want %q", c.a.FormName(), c.b.FormName(), got, c.want)
		}
	}
}
