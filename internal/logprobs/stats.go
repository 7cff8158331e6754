package logprobs

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
)

// Scorer accumulates the statistics of llama-perplexity --kl-divergence
// (tools/perplexity/perplexity.cpp, kl_divergence()) over scored
// positions, by the same formulas as node-llama-cpp's quality runner, with
// the KL divergence in its top-k form.
type Scorer struct {
	nll, nll2, b, b2, nb float64
	k, k2                float64
	p, p2, p4            float64
	same, count          int
	klds, pdiffs         []float64
	chunks               int
	w                    io.Writer
}

// NewScorer prints to w as llama-perplexity prints to stdout.
func NewScorer(w io.Writer) *Scorer {
	fmt.Fprintln(w, "0.00 minutes")
	return &Scorer{w: w}
}

// Add scores one position of the candidate q against the baseline's p.
func (s *Scorer) Add(p, q Position) {
	nll, nllB := -q.Next.LP, -p.Next.LP
	s.nll += nll
	s.nll2 += nll * nll
	s.b += nllB
	s.b2 += nllB * nllB
	s.nb += nll * nllB
	k := KLD(p, q)
	s.k += k
	s.k2 += k * k
	s.count++
	if len(p.Top) > 0 && len(q.Top) > 0 && p.Top[0].Key == q.Top[0].Key {
		s.same++
	}
	dp := math.Exp(-nll) - math.Exp(-nllB)
	s.p += dp
	s.p2 += dp * dp
	s.p4 += dp * dp * dp * dp
	s.klds = append(s.klds, k)
	s.pdiffs = append(s.pdiffs, dp)
}

func meanUnc(sum, sum2 float64, n int) (float64, float64) {
	f := sum / float64(n)
	d := sum2/float64(n) - f*f
	if d > 0 && n > 10 {
		return f, math.Sqrt(d / float64(n-1))
	}
	return f, 0
}

func (s *Scorer) cov() float64 {
	if s.count < 10 {
		return 0
	}
	n := float64(s.count)
	return (s.nb/n - (s.nll/n)*(s.b/n)) / (n - 1)
}

func f(x float64, w, p int) string { return fmt.Sprintf("%*.*f", w, p, x) }

// EndChunk prints the chunk's line of the running table.
func (s *Scorer) EndChunk() {
	s.chunks++
	if s.count == 0 {
		return
	}
	lm, lu := meanUnc(s.nll, s.nll2, s.count)
	bm, bu := meanUnc(s.b, s.b2, s.count)
	km, ku := meanUnc(s.k, s.k2, s.count)
	pm, pu := meanUnc(s.p2, s.p4, s.count)
	top := float64(s.same) / float64(s.count)
	rmsErr := math.NaN()
	if pm > 0 {
		rmsErr = 100 * 0.5 / math.Sqrt(pm) * pu
	}
	fmt.Fprint(s.w, "\nchunk             PPL               ln(PPL(Q)/PPL(base))          KL Divergence              Δp RMS            Same top p\n")
	fmt.Fprintf(s.w, "%4d    %s ± %s    %s ± %s    %s ± %s    %s ± %s %%    %s ± %s %%\n", s.chunks,
		f(math.Exp(lm), 9, 4), f(math.Exp(lm)*lu, 9, 4), f(lm-bm, 10, 5), f(math.Sqrt(math.Max(0, lu*lu+bu*bu-2*s.cov())), 10, 5),
		f(km, 10, 5), f(ku, 10, 5), f(100*math.Sqrt(pm), 6, 3), f(rmsErr, 6, 3),
		f(100*top, 6, 3), f(100*math.Sqrt(top*(1-top)/float64(s.count-1)), 6, 3))
}

// Count is the number of positions scored.
func (s *Scorer) Count() int { return s.count }

// Finish prints the statistics blocks; like llama-perplexity, none below
// 100 scored tokens.
func (s *Scorer) Finish(k int) {
	fmt.Fprintln(s.w)
	if s.count < 100 {
		return
	}
	klds := append([]float64(nil), s.klds...)
	pdiffs := append([]float64(nil), s.pdiffs...)
	sort.Float64s(klds)
	sort.Float64s(pdiffs)
	lm, lu := meanUnc(s.nll, s.nll2, s.count)
	bm, bu := meanUnc(s.b, s.b2, s.count)
	ppl, pplB := math.Exp(lm), math.Exp(bm)
	pplU, pplBU := ppl*lu, pplB*bu
	c := s.cov()
	lr, lrU := lm-bm, math.Sqrt(math.Max(0, lu*lu+bu*bu-2*c))
	cor := math.NaN()
	if lu*bu > 0 {
		cor = 100 * c / (lu * bu)
	}
	var b strings.Builder
	fmt.Fprintln(&b, "====== Perplexity statistics ======")
	fmt.Fprintf(&b, "Mean PPL(Q)                   : %s ± %s\n", f(ppl, 10, 6), f(pplU, 10, 6))
	fmt.Fprintf(&b, "Mean PPL(base)                : %s ± %s\n", f(pplB, 10, 6), f(pplBU, 10, 6))
	fmt.Fprintf(&b, "Cor(ln(PPL(Q)), ln(PPL(base))): %s%%\n", f(cor, 6, 2))
	fmt.Fprintf(&b, "Mean ln(PPL(Q)/PPL(base))     : %s ± %s\n", f(lr, 10, 6), f(lrU, 10, 6))
	fmt.Fprintf(&b, "Mean PPL(Q)/PPL(base)         : %s ± %s\n", f(math.Exp(lr), 10, 6), f(math.Exp(lr)*lrU, 10, 6))
	fmt.Fprintf(&b, "Mean PPL(Q)-PPL(base)         : %s ± %s\n", f(ppl-pplB, 10, 6), f(math.Sqrt(math.Max(0, pplU*pplU+pplBU*pplBU-2*ppl*pplB*c)), 10, 6))
	fmt.Fprintln(&b)
	fmt.Fprintf(&b, "====== KL divergence statistics (top-%d form: a lower bound of the full KLD) ======\n", k)
	km, ku := meanUnc(s.k, s.k2, s.count)
	fmt.Fprintf(&b, "Mean    KLD: %s ± %s\n", f(km, 10, 9), f(ku, 10, 9))
	fmt.Fprintf(&b, "Maximum KLD: %s\n", f(klds[len(klds)-1], 10, 9))
	for _, q := range []struct {
		name string
		fr   float64
	}{{"99.9%", 0.999}, {"99.0%", 0.99}, {"95.0%", 0.95}, {"90.0%", 0.9}} {
		fmt.Fprintf(&b, "%s   KLD: %s\n", q.name, f(pct(klds, q.fr), 10, 9))
	}
	fmt.Fprintf(&b, "Median  KLD: %s\n", f(median(klds), 10, 9))
	for _, q := range []struct {
		name string
		fr   float64
	}{{"10.0%", 0.1}, {" 5.0%", 0.05}, {" 1.0%", 0.01}, {" 0.1%", 0.001}} {
		fmt.Fprintf(&b, "%s   KLD: %s\n", q.name, f(pct(klds, q.fr), 10, 9))
	}
	fmt.Fprintf(&b, "Minimum KLD: %s\n", f(klds[0], 10, 9))
	fmt.Fprintln(&b)
	fmt.Fprintln(&b, "====== Token probability statistics ======")
	dm, du := meanUnc(s.p, s.p2, s.count)
	fmt.Fprintf(&b, "Mean    Δp: %s ± %s %%\n", f(100*dm, 6, 3), f(100*du, 5, 3))
	fmt.Fprintf(&b, "Maximum Δp: %s%%\n", f(100*pdiffs[len(pdiffs)-1], 6, 3))
	fmt.Fprintf(&b, "Median  Δp: %s%%\n", f(100*median(pdiffs), 6, 3))
	fmt.Fprintf(&b, "Minimum Δp: %s%%\n", f(100*pdiffs[0], 6, 3))
	mm, mu := meanUnc(s.p2, s.p4, s.count)
	rmsErr := math.NaN()
	if mm > 0 {
		rmsErr = 100 * 0.5 / math.Sqrt(mm) * mu
	}
	fmt.Fprintf(&b, "RMS Δp    : %s ± %s %%\n", f(100*math.Sqrt(mm), 6, 3), f(rmsErr, 5, 3))
	top := float64(s.same) / float64(s.count)
	fmt.Fprintf(&b, "Same top p: %s ± %s %%\n", f(100*top, 6, 3), f(100*math.Sqrt(top*(1-top)/float64(s.count-1)), 5, 3))
	io.WriteString(s.w, b.String())
}

func pct(a []float64, fr float64) float64 {
	if fr <= 0 {
		return a[0]
	}
	if fr >= 1 {
		return a[len(a)-1]
	}
	p := fr * float64(len(a)-1)
	ip := math.Floor(p)
	p -= ip
	i := int(ip)
	return (1-p)*a[i] + p*a[min(i+1, len(a)-1)]
}

func median(a []float64) float64 {
	n := len(a)
	if n%2 == 0 {
		return 0.5 * (a[n/2] + a[n/2-1])
	}
	return a[(n-1)/2]
}
