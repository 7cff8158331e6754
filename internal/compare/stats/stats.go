package stats

import (
	"math"
	"slices"
	"sync"
)

// Mean returns the arithmetic mean of x, or NaN when x is empty.
func Mean(x []float64) float64 {
	if len(x) == 0 {
		return math.NaN()
	}
	var s float64
	for _, v := range x {
		s += v
	}
	return s / float64(len(x))
}

// Median returns the median of x (the mean of the two middle values when
// len(x) is even), or NaN when x is empty. x is not modified.
func Median(x []float64) float64 {
	if len(x) == 0 {
		return math.NaN()
	}
	s := sortedCopy(x)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// Stddev returns the sample standard deviation of x (divisor n-1), or NaN
// when x has fewer than two values.
func Stddev(x []float64) float64 {
	if len(x) < 2 {
		return math.NaN()
	}
	m := Mean(x)
	var ss float64
	for _, v := range x {
		ss += (v - m) * (v - m)
	}
	return math.Sqrt(ss / float64(len(x)-1))
}

// GeoMean returns the geometric mean of x, or NaN when x is empty or holds a
// value that is not positive.
func GeoMean(x []float64) float64 {
	if len(x) == 0 {
		return math.NaN()
	}
	var s float64
	for _, v := range x {
		if !(v > 0) {
			return math.NaN()
		}
		s += math.Log(v)
	}
	return math.Exp(s / float64(len(x)))
}

// Interval is a confidence interval. Confidence is the coverage actually
// achieved, which for the median of a small sample can be below the level
// asked for; 0 means no interval is available (Low and High are then NaN).
type Interval struct {
	Low, High  float64
	Confidence float64
}

// Available reports whether the interval reaches the confidence level
// asked for.
func (iv Interval) Available(level float64) bool {
	return iv.Confidence > 0 && iv.Confidence >= level-1e-12
}

func noInterval() Interval { return Interval{math.NaN(), math.NaN(), 0} }

// MedianCI returns a distribution-free confidence interval for the median
// of x from its order statistics, the interval benchstat reports: the
// narrowest [x(k), x(n+1-k)] whose coverage 1 - 2·P(Binomial(n, ½) < k) is at
// least confidence. When even [min, max] covers less than that (n ≤ 5 for
// 95%), it returns [min, max] with the coverage it does have, so that the
// caller can say so; with n < 2 no interval exists.
func MedianCI(x []float64, confidence float64) Interval {
	n := len(x)
	if n < 2 {
		return noInterval()
	}
	s := sortedCopy(x)
	// cdf accumulates P(Bin(n, ½) ≤ k-1) as k grows.
	best := 0
	var bestCov float64
	cdf := 0.0
	for k := 1; k <= (n+1)/2; k++ {
		cdf += binomHalfPMF(n, k-1)
		cov := 1 - 2*cdf
		if cov < confidence-1e-12 {
			break
		}
		best, bestCov = k, cov
	}
	if best == 0 {
		return Interval{s[0], s[n-1], 1 - 2*binomHalfPMF(n, 0)}
	}
	return Interval{s[best-1], s[n-best], bestCov}
}

// binomHalfPMF returns P(Binomial(n, ½) = k).
func binomHalfPMF(n, k int) float64 {
	return math.Exp(lchoose(n, k) - float64(n)*math.Ln2)
}

// MeanCI returns the Student-t confidence interval for the mean of x:
// mean ± t(1-(1-c)/2, n-1)·s/√n. With n < 2 no interval exists.
func MeanCI(x []float64, confidence float64) Interval {
	n := len(x)
	if n < 2 {
		return noInterval()
	}
	m, s := Mean(x), Stddev(x)
	h := TQuantile(1-(1-confidence)/2, float64(n-1)) * s / math.Sqrt(float64(n))
	return Interval{m - h, m + h, confidence}
}

// UTest is the result of a two-sided Mann–Whitney U test.
type UTest struct {
	// U is the statistic of the first sample: the number of pairs (a, b)
	// with a > b, ties counting one half. It runs from 0 (every a below
	// every b) to n1·n2 (every a above every b).
	U float64
	// P is the two-sided p-value.
	P float64
	// Exact tells whether P comes from the exact permutation distribution
	// (small samples) rather than the normal approximation.
	Exact bool
}

// Separated reports whether the two samples do not overlap at all, the most
// extreme arrangement a rank test can see.
func (u UTest) Separated(n1, n2 int) bool {
	return u.U == 0 || u.U == float64(n1*n2)
}

// rankObs is one value of the pooled sample, with the side it came from.
type rankObs struct {
	v     float64
	first bool
}

// exactULimit bounds the exact computation: it is used when the smaller
// sample has at most this many values (and the two together at most
// exactUTotal), where the normal approximation is poor and the exact
// distribution is cheap.
const (
	exactULimit = 10
	exactUTotal = 200
)

// MannWhitney runs the two-sided Mann–Whitney U (Wilcoxon rank-sum) test of
// a against b. Ties get mid-ranks.
//
// For small samples the p-value is exact: the share of all C(n1+n2, n1)
// ways to split the pooled mid-ranks into two groups whose rank sum lies at
// least as far from its mean as the observed one. This is the conditional
// permutation test, so it stays exact with ties (R's wilcox.test falls back
// to the normal approximation there). Above the limit it uses the normal
// approximation with the tie correction of the variance and a continuity
// correction of ½, which is what R's wilcox.test(exact=FALSE) computes.
// With an empty sample P is NaN.
func MannWhitney(a, b []float64) UTest {
	n1, n2 := len(a), len(b)
	if n1 == 0 || n2 == 0 {
		return UTest{U: math.NaN(), P: math.NaN()}
	}
	all := make([]rankObs, 0, n1+n2)
	for _, v := range a {
		all = append(all, rankObs{v, true})
	}
	for _, v := range b {
		all = append(all, rankObs{v, false})
	}
	slices.SortFunc(all, func(x, y rankObs) int {
		switch {
		case x.v < y.v:
			return -1
		case x.v > y.v:
			return 1
		}
		return 0
	})
	N := n1 + n2
	// rank2 holds doubled mid-ranks, integers even with ties.
	rank2 := make([]int, N)
	first := make([]bool, N)
	var tieTerm float64 // Σ t³ - t over tie groups
	var sum2 int        // doubled rank sum of a
	for i := 0; i < N; {
		j := i
		for j < N && all[j].v == all[i].v {
			j++
		}
		r := (i + 1) + j // (first + last) 1-based positions = 2 × mid-rank
		for k := i; k < j; k++ {
			rank2[k] = r
			first[k] = all[k].first
			if all[k].first {
				sum2 += r
			}
		}
		t := float64(j - i)
		tieTerm += t*t*t - t
		i = j
	}
	u := float64(sum2)/2 - float64(n1*(n1+1))/2
	res := UTest{U: u}
	if min(n1, n2) <= exactULimit && N <= exactUTotal {
		res.P, res.Exact = exactUP(rank2, first, n1), true
		return res
	}
	mu := float64(n1*n2) / 2
	nf := float64(N)
	v := float64(n1*n2) / 12 * ((nf + 1) - tieTerm/(nf*(nf-1)))
	if v <= 0 { // every value tied
		res.P = 1
		return res
	}
	z := math.Max(math.Abs(u-mu)-0.5, 0) / math.Sqrt(v)
	res.P = math.Min(1, 2*normalSF(z))
	return res
}

// exactUP returns the exact two-sided p-value of the rank sum of the n1
// positions marked in first, given the doubled mid-ranks of all positions.
// It counts, by dynamic programming over (values chosen, sum), the subsets
// of size m of the pooled ranks whose sum is at least as far from the mean
// as the observed one. The smaller group is the one counted; the two-sided
// p-value is the same either way.
func exactUP(rank2 []int, first []bool, n1 int) float64 {
	N := len(rank2)
	m, mark := n1, true
	if N-n1 < n1 {
		m, mark = N-n1, false
	}
	obs := 0
	for i, f := range first {
		if f == mark {
			obs += rank2[i]
		}
	}
	maxRank := 0
	for _, r := range rank2 {
		maxRank = max(maxRank, r)
	}
	maxSum := maxRank * m // no m-subset sums to more
	// ways[k*(maxSum+1)+s]: number of k-subsets of the ranks seen so far
	// with doubled sum s.
	W := maxSum + 1
	ways := make([]float64, (m+1)*W)
	ways[0] = 1
	hi := 0 // largest reachable sum so far
	for i, r := range rank2 {
		kmax := min(i+1, m)
		for k := kmax; k >= 1; k-- {
			dst := ways[k*W : (k+1)*W]
			src := ways[(k-1)*W : k*W]
			// k-1 values sum to at most (k-1)·maxRank.
			for s := min(hi, (k-1)*maxRank); s >= 0; s-- {
				if c := src[s]; c != 0 {
					dst[s+r] += c
				}
			}
		}
		hi += r
		if hi > maxSum {
			hi = maxSum
		}
	}
	mean2 := m * (N + 1) // doubled mean of the rank sum
	dev := obs - mean2
	if dev < 0 {
		dev = -dev
	}
	var hit, total float64
	row := ways[m*W : (m+1)*W]
	for s, c := range row {
		if c == 0 {
			continue
		}
		total += c
		d := s - mean2
		if d < 0 {
			d = -d
		}
		if d >= dev {
			hit += c
		}
	}
	return math.Min(1, hit/total)
}

// MinPValue returns the smallest two-sided p-value an exact rank test can
// give for samples of n1 and n2 values without ties: 2 / C(n1+n2, n1), the
// probability of the two most extreme of all equally likely splits. For 3 vs
// 3 it is 0.1, so no outcome can be significant at α = 0.05; 4 vs 4 gives
// 2/70 ≈ 0.029.
func MinPValue(n1, n2 int) float64 {
	if n1 <= 0 || n2 <= 0 {
		return 1
	}
	return math.Min(1, 2*math.Exp(-lchoose(n1+n2, n1)))
}

// TTest is the result of Welch's two-sample t-test.
type TTest struct {
	T, DF, P float64
}

// Welch runs Welch's unequal-variances t-test of b against a (T > 0 when b's
// mean is larger), with the Welch–Satterthwaite degrees of freedom and a
// two-sided p-value. It needs two values on each side and some variance;
// otherwise every field is NaN.
func Welch(a, b []float64) TTest {
	nan := TTest{math.NaN(), math.NaN(), math.NaN()}
	if len(a) < 2 || len(b) < 2 {
		return nan
	}
	na, nb := float64(len(a)), float64(len(b))
	va, vb := Stddev(a), Stddev(b)
	va, vb = va*va/na, vb*vb/nb
	se2 := va + vb
	if se2 == 0 {
		return nan
	}
	t := (Mean(b) - Mean(a)) / math.Sqrt(se2)
	df := se2 * se2 / (va*va/(na-1) + vb*vb/(nb-1))
	return TTest{T: t, DF: df, P: math.Min(1, 2*TSF(math.Abs(t), df))}
}

// Holm returns the Holm–Bonferroni adjusted p-values of p, in p's order.
// NaN entries are not part of the family and stay NaN. The step-down rule:
// sort the m valid p-values ascending, multiply the i-th (from 1) by
// m-i+1, make the sequence non-decreasing and cap it at 1. It controls the
// family-wise error rate at α without assuming independence.
func Holm(p []float64) []float64 {
	adj := make([]float64, len(p))
	idx := make([]int, 0, len(p))
	for i, v := range p {
		adj[i] = math.NaN()
		if !math.IsNaN(v) {
			idx = append(idx, i)
		}
	}
	slices.SortStableFunc(idx, func(x, y int) int {
		switch {
		case p[x] < p[y]:
			return -1
		case p[x] > p[y]:
			return 1
		}
		return 0
	})
	m := len(idx)
	running := 0.0
	for j, i := range idx {
		v := math.Min(1, float64(m-j)*p[i])
		running = math.Max(running, v)
		adj[i] = running
	}
	return adj
}

// Repetitions estimates how many values per side a two-sided rank test
// needs to detect a change of size effect between the centers of two
// samples whose noise (standard deviation) is noise, at level alpha with the
// given power, when the result must survive a Holm correction over
// comparisons tests.
//
// The answer is the larger of two numbers:
//
//  1. The t-test sample size, the smallest n with
//     n ≥ 2 (t(1-α'/2, 2n-2) + t(power, 2n-2))² (noise/effect)²
//     (α' = alpha/comparisons, the Bonferroni bound on the first step of
//     Holm), the same calculation as R's power.t.test, divided by 3/π, the
//     asymptotic efficiency of the Mann–Whitney test against the t-test
//     under normal noise.
//  2. The smallest n whose most extreme outcome can reach significance at
//     all: MinPValue(n, n) < α'. For α = 0.05 that is 4.
//
// It returns 0 when effect is zero or not a number, and caps the answer at
// 100000.
func Repetitions(effect, noise, alpha, power float64, comparisons int) int {
	effect = math.Abs(effect)
	if !(effect > 0) || math.IsNaN(noise) || math.IsInf(effect, 0) {
		return 0
	}
	if comparisons < 1 {
		comparisons = 1
	}
	a := alpha / float64(comparisons)
	floor := 1
	for MinPValue(floor, floor) >= a {
		floor++
	}
	if noise <= 0 {
		return floor
	}
	ratio := noise / effect
	const are = 3 / math.Pi
	// t quantiles exceed normal ones, so the normal-theory n is a lower
	// bound to start the search from.
	n := max(2, int(2*sq(normalQuantile(1-a/2)+normalQuantile(power))*ratio*ratio/are))
	for ; n < 100000; n++ {
		df := float64(2*n - 2)
		q := TQuantile(1-a/2, df) + TQuantile(power, df)
		if float64(n)*are >= 2*q*q*ratio*ratio {
			break
		}
	}
	return max(n, floor)
}

// repetitionsT is the plain t-test sample size of Repetitions, without the
// rank-test efficiency or the exact-test floor; it exists to be checked
// against R's power.t.test.
func repetitionsT(effect, noise, alpha, power float64) int {
	ratio := noise / math.Abs(effect)
	for n := max(2, int(2*sq(normalQuantile(1-alpha/2)+normalQuantile(power))*ratio*ratio)); n < 100000; n++ {
		df := float64(2*n - 2)
		q := TQuantile(1-alpha/2, df) + TQuantile(power, df)
		if float64(n) >= 2*q*q*ratio*ratio {
			return n
		}
	}
	return 100000
}

// Distribution functions.

func sq(x float64) float64 { return x * x }

// normalQuantile returns the p-quantile of the standard normal.
func normalQuantile(p float64) float64 { return math.Sqrt2 * math.Erfinv(2*p-1) }

// ZCritical is the two-sided normal critical value at alpha: 1.96 at 0.05.
func ZCritical(alpha float64) float64 { return math.Sqrt2 * math.Erfinv(1-alpha) }

// normalSF returns P(Z > z) for a standard normal Z.
func normalSF(z float64) float64 { return 0.5 * math.Erfc(z/math.Sqrt2) }

// TSF returns P(T > t) for Student's t with df degrees of freedom (df may
// be fractional).
func TSF(t, df float64) float64 {
	if math.IsNaN(t) || math.IsNaN(df) || df <= 0 {
		return math.NaN()
	}
	if math.IsInf(df, 1) {
		return normalSF(t)
	}
	x := df / (df + t*t)
	tail := 0.5 * regIncBeta(df/2, 0.5, x) // P(|T| > |t|) / 2
	if t >= 0 {
		return tail
	}
	return 1 - tail
}

// tQuantiles memoizes TQuantile for whole degrees of freedom: intervals and
// repetition estimates ask for the same few quantiles for every row.
var tQuantiles sync.Map // [2]float64{p, df} → float64

// TQuantile returns the p-quantile of Student's t with df degrees of
// freedom, by bisection on TSF (monotone, so this always converges).
func TQuantile(p, df float64) float64 {
	if df == math.Trunc(df) && df < 1e6 {
		key := [2]float64{p, df}
		if q, ok := tQuantiles.Load(key); ok {
			return q.(float64)
		}
		q := tQuantile(p, df)
		tQuantiles.Store(key, q)
		return q
	}
	return tQuantile(p, df)
}

func tQuantile(p, df float64) float64 {
	switch {
	case math.IsNaN(p) || math.IsNaN(df) || df <= 0 || p <= 0 || p >= 1:
		return math.NaN()
	case p == 0.5:
		return 0
	case p < 0.5:
		return -tQuantile(1-p, df)
	}
	lo, hi := 0.0, 1.0
	for TSF(hi, df) > 1-p {
		hi *= 2
		if hi > 1e12 {
			return math.Inf(1)
		}
	}
	for i := 0; i < 200 && hi-lo > 1e-13*math.Max(1, hi); i++ {
		mid := (lo + hi) / 2
		if TSF(mid, df) > 1-p {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2
}

// regIncBeta returns the regularized incomplete beta function I_x(a, b),
// by the continued fraction of Numerical Recipes §6.4 (modified Lentz).
func regIncBeta(a, b, x float64) float64 {
	switch {
	case x <= 0:
		return 0
	case x >= 1:
		return 1
	}
	la, _ := math.Lgamma(a + b)
	lb, _ := math.Lgamma(a)
	lc, _ := math.Lgamma(b)
	front := math.Exp(la - lb - lc + a*math.Log(x) + b*math.Log1p(-x))
	if x < (a+1)/(a+b+2) {
		return front * betaCF(a, b, x) / a
	}
	return 1 - front*betaCF(b, a, 1-x)/b
}

func betaCF(a, b, x float64) float64 {
	const tiny = 1e-300
	qab, qap, qam := a+b, a+1, a-1
	c, d := 1.0, 1-qab*x/qap
	if math.Abs(d) < tiny {
		d = tiny
	}
	d = 1 / d
	h := d
	for m := 1; m <= 10000; m++ {
		mf := float64(m)
		m2 := 2 * mf
		aa := mf * (b - mf) * x / ((qam + m2) * (a + m2))
		d = 1 + aa*d
		if math.Abs(d) < tiny {
			d = tiny
		}
		c = 1 + aa/c
		if math.Abs(c) < tiny {
			c = tiny
		}
		d = 1 / d
		h *= d * c
		aa = -(a + mf) * (qab + mf) * x / ((a + m2) * (qap + m2))
		d = 1 + aa*d
		if math.Abs(d) < tiny {
			d = tiny
		}
		c = 1 + aa/c
		if math.Abs(c) < tiny {
			c = tiny
		}
		d = 1 / d
		del := d * c
		h *= del
		if math.Abs(del-1) < 1e-15 {
			break
		}
	}
	return h
}

// lchoose returns log C(n, k).
func lchoose(n, k int) float64 {
	if k < 0 || k > n {
		return math.Inf(-1)
	}
	a, _ := math.Lgamma(float64(n + 1))
	b, _ := math.Lgamma(float64(k + 1))
	c, _ := math.Lgamma(float64(n - k + 1))
	return a - b - c
}

func sortedCopy(x []float64) []float64 {
	s := slices.Clone(x)
	slices.Sort(s)
	return s
}

// PairedTest is the result of a paired test of B against A over pairs
// that ran in the same round.
type PairedTest struct {
	// N counts the pairs.
	N int
	// MeanLogRatio is the mean of ln(b/a) over the pairs: exp of it is
	// the geometric-mean ratio B/A.
	MeanLogRatio float64
	// SDLogRatio is the sample standard deviation of ln(b/a).
	SDLogRatio float64
	// T and DF are the t statistic and its degrees of freedom (N-1).
	T, DF float64
	// P is the two-sided p-value of the paired t-test.
	P float64
	// SignFlipP is the exact two-sided p-value of the sign-flip
	// permutation test of the same log ratios (NaN above 20 pairs).
	SignFlipP float64
}

// PairedLogT runs the paired t-test of the log ratios ln(b[i]/a[i]): H0 is
// a geometric-mean ratio of 1. Logs because load scales a throughput by a
// factor, not by an amount, and so that B/A and A/B are symmetric. It
// needs two pairs, positive values and some variance; otherwise P is NaN.
// The exact sign-flip p-value of the same ratios is computed beside it.
func PairedLogT(a, b []float64) PairedTest {
	res, d := pairedLog(a, b)
	if d != nil {
		res.SignFlipP = SignFlipP(d)
	}
	return res
}

// PairedLogRatio is [PairedLogT] without the exact sign-flip p-value
// (SignFlipP is NaN): 2^n sums for up to 20 pairs are too many for a
// caller that tests at every round, as rigor bisect does.
func PairedLogRatio(a, b []float64) PairedTest {
	res, _ := pairedLog(a, b)
	return res
}

// LogInterval returns the two-sided Student-t interval of the mean log
// ratio at level (0.95): NaN below two pairs.
func (t PairedTest) LogInterval(level float64) (low, high float64) {
	if t.N < 2 || math.IsNaN(t.SDLogRatio) {
		return math.NaN(), math.NaN()
	}
	h := TQuantile(1-(1-level)/2, float64(t.N-1)) * t.SDLogRatio / math.Sqrt(float64(t.N))
	return t.MeanLogRatio - h, t.MeanLogRatio + h
}

// pairedLog is the paired t-test of the log ratios and the log ratios
// (nil when there are none or a value is not positive).
func pairedLog(a, b []float64) (PairedTest, []float64) {
	nan := math.NaN()
	res := PairedTest{N: min(len(a), len(b)), MeanLogRatio: nan, SDLogRatio: nan, T: nan, DF: nan, P: nan, SignFlipP: nan}
	d := make([]float64, 0, res.N)
	for i := 0; i < res.N; i++ {
		if !(a[i] > 0 && b[i] > 0) {
			return res, nil
		}
		d = append(d, math.Log(b[i]/a[i]))
	}
	if res.N == 0 {
		return res, nil
	}
	res.MeanLogRatio = Mean(d)
	if res.N < 2 {
		return res, d
	}
	res.SDLogRatio = Stddev(d)
	res.DF = float64(res.N - 1)
	if res.SDLogRatio == 0 {
		return res, d
	}
	res.T = res.MeanLogRatio / (res.SDLogRatio / math.Sqrt(float64(res.N)))
	res.P = math.Min(1, 2*TSF(math.Abs(res.T), res.DF))
	return res, d
}

// SignFlipP returns the exact two-sided p-value of the sign-flip
// (randomization) test of the paired differences d: the share of the 2^n
// ways to flip their signs whose sum is at least as far from 0 as the
// observed one. It assumes only that each difference is as likely to have
// either sign under H0. Its smallest value is 2/2^n (0.25 for 3 pairs,
// 0.0625 for 5, 0.03125 for 6). NaN for no pairs or more than 20.
func SignFlipP(d []float64) float64 {
	n := len(d)
	if n == 0 || n > 20 {
		return math.NaN()
	}
	var obs float64
	for _, v := range d {
		obs += v
	}
	obs = math.Abs(obs)
	hit := 0
	for mask := 0; mask < 1<<n; mask++ {
		var s float64
		for i, v := range d {
			if mask&(1<<i) != 0 {
				s -= v
			} else {
				s += v
			}
		}
		if math.Abs(s) >= obs*(1-1e-12) {
			hit++
		}
	}
	return float64(hit) / float64(int(1)<<n)
}

// OutlierThreshold is hyperfine's bound on a modified z-score: |x − median|
// over the median absolute deviation (unscaled) above 14.826, that is 10
// standard deviations for normal noise (the MAD of normal noise is
// 0.6745 σ, and 10/0.6745 = 14.826).
const OutlierThreshold = 14.826

// ModifiedZ returns each value's modified z-score as hyperfine computes it:
// (x − median) / MAD, with the MAD the median of |x − median| and never
// below machine epsilon, so that a value off an otherwise constant sample
// scores huge. Nil for fewer than 3 values, where no value can stand out.
func ModifiedZ(x []float64) []float64 {
	if len(x) < 3 {
		return nil
	}
	med := Median(x)
	dev := make([]float64, len(x))
	for i, v := range x {
		dev[i] = math.Abs(v - med)
	}
	mad := math.Max(Median(dev), 2.220446049250313e-16)
	z := make([]float64, len(x))
	for i, v := range x {
		z[i] = (v - med) / mad
	}
	return z
}

// Outliers returns the indexes of the values of x whose modified z-score
// exceeds [OutlierThreshold] in magnitude.
func Outliers(x []float64) []int {
	var out []int
	for i, z := range ModifiedZ(x) {
		if math.Abs(z) > OutlierThreshold {
			out = append(out, i)
		}
	}
	return out
}

// DetectableChange returns the smallest change between two centers, in
// percent of center, that a two-sided rank test over n1 and n2 values of
// noise (standard deviation) noise detects at level alpha/comparisons with
// the given power: the inverse of [Repetitions],
//
//	(t(1-α'/2, df) + t(power, df)) · noise · √(1/n1 + 1/n2) / √(3/π),
//
// with df = n1+n2-2. It is +Inf when even the most extreme outcome of the
// exact test cannot reach α' ([MinPValue]), and NaN when the noise is
// unknown (fewer than two values on both sides) or center is 0.
func DetectableChange(noise, center float64, n1, n2 int, alpha, power float64, comparisons int) float64 {
	if comparisons < 1 {
		comparisons = 1
	}
	a := alpha / float64(comparisons)
	if n1 < 1 || n2 < 1 || MinPValue(n1, n2) >= a {
		return math.Inf(1)
	}
	if math.IsNaN(noise) || center == 0 || n1+n2 < 3 {
		return math.NaN()
	}
	df := float64(n1 + n2 - 2)
	q := TQuantile(1-a/2, df) + TQuantile(power, df)
	const are = 3 / math.Pi
	return q * noise * math.Sqrt(1/float64(n1)+1/float64(n2)) / math.Sqrt(are) / math.Abs(center) * 100
}

// PairedDetectableChange returns the smallest change, in percent, that the
// paired t-test of n log ratios with standard deviation sdLog detects at
// level alpha/comparisons with the given power:
// exp((t(1-α'/2, n-1) + t(power, n-1)) · sdLog / √n) − 1. NaN with fewer
// than two pairs or an unknown spread.
func PairedDetectableChange(sdLog float64, n int, alpha, power float64, comparisons int) float64 {
	if n < 2 || math.IsNaN(sdLog) {
		return math.NaN()
	}
	if comparisons < 1 {
		comparisons = 1
	}
	a := alpha / float64(comparisons)
	df := float64(n - 1)
	q := TQuantile(1-a/2, df) + TQuantile(power, df)
	return math.Expm1(q*sdLog/math.Sqrt(float64(n))) * 100
}

// PairedRepetitions returns how many pairs (rounds) the paired t-test of
// log ratios with standard deviation sdLog needs to detect a change of
// percent at level alpha/comparisons with the given power: the smallest
// n ≥ 2 with (t(1-α'/2, n-1) + t(power, n-1)) · sdLog / √n ≤ ln(1 + percent/100).
// 0 for a change that is not a number or not above -100%; capped at 100000.
func PairedRepetitions(percent, sdLog, alpha, power float64, comparisons int) int {
	target := math.Abs(math.Log1p(percent / 100))
	if !(target > 0) || math.IsNaN(sdLog) || math.IsInf(target, 0) {
		return 0
	}
	if comparisons < 1 {
		comparisons = 1
	}
	a := alpha / float64(comparisons)
	if sdLog <= 0 {
		return 2
	}
	// t quantiles exceed normal ones, so the normal-theory n is a lower
	// bound to start the search from.
	z := (normalQuantile(1-a/2) + normalQuantile(power)) * sdLog / target
	if z*z >= 100000 {
		return 100000
	}
	for n := max(2, int(z*z)); n < 100000; n++ {
		df := float64(n - 1)
		if (TQuantile(1-a/2, df)+TQuantile(power, df))*sdLog/math.Sqrt(float64(n)) <= target {
			return n
		}
	}
	return 100000
}

// TDetectableChange returns the smallest change between two means, in
// percent of center, that Welch's t-test over n1 and n2 values of noise
// (standard deviation) detects at level alpha/comparisons with the given
// power: (t(1-α'/2, df) + t(power, df)) · noise · √(1/n1 + 1/n2), with
// df = n1+n2-2 (equal variances; Welch's df is at most this). NaN when the
// noise is unknown, center is 0 or df < 1.
func TDetectableChange(noise, center float64, n1, n2 int, alpha, power float64, comparisons int) float64 {
	if math.IsNaN(noise) || center == 0 || n1 < 1 || n2 < 1 || n1+n2 < 3 {
		return math.NaN()
	}
	if comparisons < 1 {
		comparisons = 1
	}
	a := alpha / float64(comparisons)
	df := float64(n1 + n2 - 2)
	q := TQuantile(1-a/2, df) + TQuantile(power, df)
	return q * noise * math.Sqrt(1/float64(n1)+1/float64(n2)) / math.Abs(center) * 100
}

// TRepetitions returns how many values per side a two-sample t-test needs
// to detect a change of size effect at noise noise, level
// alpha/comparisons and the given power: R's power.t.test, with the
// Bonferroni bound on the first step of Holm. 0 when effect is zero or not
// a number; at least 2; capped at 100000.
func TRepetitions(effect, noise, alpha, power float64, comparisons int) int {
	effect = math.Abs(effect)
	if !(effect > 0) || math.IsNaN(noise) || math.IsInf(effect, 0) {
		return 0
	}
	if comparisons < 1 {
		comparisons = 1
	}
	if noise <= 0 {
		return 2
	}
	return max(2, repetitionsT(effect, noise, alpha/float64(comparisons), power))
}
