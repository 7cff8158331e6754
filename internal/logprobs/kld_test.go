package logprobs

import (
	"bytes"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/rigorbench/rigor/internal/engine/llamabench"
)

// synthetic returns n positions of a model over a vocabulary of vocab
// tokens (Zipf-shaped logits, a different order at each position) and the
// same positions as a quantized copy of it sees them: its logits rounded
// to a step, as a low-bit type stores them, and a little noise.
func synthetic(n, vocab int, step float64) (base, cand [][]float64, next []int) {
	r := rand.New(rand.NewPCG(28, 4711))
	for range n {
		perm := r.Perm(vocab)
		lb := make([]float64, vocab)
		lc := make([]float64, vocab)
		for i, t := range perm {
			lb[t] = -1.1*math.Log(float64(i+1)) + 0.3*r.NormFloat64()
			lc[t] = math.Round(lb[t]/step)*step + 0.02*r.NormFloat64()
		}
		pb := LogSoftmax(lb)
		base = append(base, pb)
		cand = append(cand, LogSoftmax(lc))
		// the next token drawn from the baseline's distribution
		u, acc := r.Float64(), 0.0
		t := vocab - 1
		for i, lp := range pb {
			if acc += math.Exp(lp); acc >= u {
				t = i
				break
			}
		}
		next = append(next, t)
	}
	return base, cand, next
}

// The top-k KLD is a lower bound of the full KLD at every position, grows
// with k, and is the full KLD when k is the vocabulary.
func TestKLD_topKBoundsFull(t *testing.T) {
	const vocab = 300
	base, cand, next := synthetic(200, vocab, 0.25)
	ks := []int{1, 2, 5, 10, 20, 50, 100, vocab}
	sums := make([]float64, len(ks))
	var full float64
	for i := range base {
		fk := FullKLD(base[i], cand[i])
		if fk <= 0 {
			t.Fatalf("position %d: full KLD %g: the candidate must differ", i, fk)
		}
		full += fk
		prev := 0.0
		for j, k := range ks {
			got := KLD(TopK(base[i], next[i], k), TopK(cand[i], next[i], k))
			if got > fk+1e-12 {
				t.Fatalf("position %d, k=%d: top-k KLD %.12g above the full %.12g", i, k, got, fk)
			}
			if got < prev-1e-12 {
				t.Fatalf("position %d, k=%d: top-k KLD %.12g below k=%d's %.12g", i, k, got, ks[j-1], prev)
			}
			prev = got
			sums[j] += got
		}
		if math.Abs(prev-fk) > 1e-9*math.Max(1, fk) {
			t.Fatalf("position %d: top-%d KLD %.12g is not the full %.12g", i, vocab, prev, fk)
		}
	}
	t.Logf("mean full KLD %.6g", full/float64(len(base)))
	for j, k := range ks {
		t.Logf("k=%3d: mean top-k KLD %.6g (%.1f%% of the full)", k, sums[j]/float64(len(base)), 100*sums[j]/full)
	}
	// A real distribution's mass is in its head: k=20 of 300 already
	// holds most of the divergence, and k=1 does not.
	if r := sums[4] / full; r < 0.5 {
		t.Errorf("k=20 holds %.1f%% of the full KLD; a Zipf-shaped distribution puts more in its head", 100*r)
	}
	if sums[0] >= sums[4] {
		t.Errorf("k=1's KLD %g is not below k=20's %g", sums[0], sums[4])
	}
}

// A model against itself diverges by exactly 0, whatever k.
func TestKLD_selfIsZero(t *testing.T) {
	base, _, next := synthetic(20, 64, 0.25)
	for i := range base {
		for _, k := range []int{1, 5, 64} {
			p := TopK(base[i], next[i], k)
			if got := KLD(p, p); got != 0 {
				t.Fatalf("position %d, k=%d: KLD of itself %g", i, k, got)
			}
		}
	}
}

// Tokens that only one side has in its top k are lumped, never dropped:
// disjoint top-k lists still give the divergence of the lumped buckets.
func TestKLD_disjointTops(t *testing.T) {
	p := Position{Next: Entry{"9", math.Log(0.1)}, Top: []Entry{{"1", math.Log(0.6)}, {"2", math.Log(0.2)}}}
	q := Position{Next: Entry{"9", math.Log(0.1)}, Top: []Entry{{"3", math.Log(0.5)}, {"4", math.Log(0.3)}}}
	// buckets: token 9 (0.1 on both sides) and the rest (0.9 on both)
	if got := KLD(p, q); math.Abs(got) > 1e-15 {
		t.Fatalf("KLD %g, want 0: the known buckets agree", got)
	}
	q.Next.LP = math.Log(0.3)
	want := 0.1*math.Log(0.1/0.3) + 0.9*math.Log(0.9/0.7)
	if got := KLD(p, q); math.Abs(got-want) > 1e-12 {
		t.Fatalf("KLD %.12g, want %.12g", got, want)
	}
}

// The scorer's output is llama-perplexity's format, which rigor's parser
// reads; the top-k statistics other than KLD are the full ones.
func TestScorer_parsed(t *testing.T) {
	base, cand, next := synthetic(252, 300, 0.25)
	var out bytes.Buffer
	s := NewScorer(&out)
	var fullKLD float64
	same := 0
	for i := range base {
		s.Add(TopK(base[i], next[i], 20), TopK(cand[i], next[i], 20))
		if (i+1)%63 == 0 {
			s.EndChunk()
		}
		fullKLD += FullKLD(base[i], cand[i])
		if argmax(base[i]) == argmax(cand[i]) {
			same++
		}
	}
	s.Finish(20)
	q, err := llamabench.ParseKLDivergence(out.Bytes())
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if q.Chunks != 4 {
		t.Errorf("chunks %d, want 4", q.Chunks)
	}
	if q.KLD <= 0 || q.KLD > fullKLD/float64(len(base))+1e-6 {
		t.Errorf("mean KLD %g: want above 0 and at most the full %g", q.KLD, fullKLD/float64(len(base)))
	}
	if want := 100 * float64(same) / float64(len(base)); math.Abs(q.SameTop-want) > 0.001 {
		t.Errorf("same top %g%%, want %g%%", q.SameTop, want)
	}
	if !strings.Contains(out.String(), "top-20 form: a lower bound of the full KLD") {
		t.Errorf("the statistics do not say their form:\n%s", out.String())
	}
}

func argmax(a []float64) int {
	b := 0
	for i := range a {
		if a[i] > a[b] {
			b = i
		}
	}
	return b
}
