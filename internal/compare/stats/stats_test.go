package stats

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// Expected values in this file come from three sources, named at each use:
//   - R 4.2 (Debian r-base-core): wilcox.test, t.test, qt, pt, p.adjust,
//     power.t.test, run by hand and pasted with their printed digits;
//   - hand enumeration of every split, written out in the comment;
//   - closed forms (2/C(n1+n2, n1), binomial tables).

func near(got, want, tol float64) bool {
	if math.IsNaN(want) {
		return math.IsNaN(got)
	}
	return math.Abs(got-want) <= tol*math.Max(1, math.Abs(want))
}

// The seed-000 samples: baseline (-nkvo 1) and K/Q/V offload r3 (-nkvo 0).
var (
	seedBase = []float64{13.8745, 14.4737, 14.529}
	seedKQV  = []float64{16.2585, 16.4391, 16.4532}
)

func TestMannWhitney(t *testing.T) {
	seq := func(lo, hi float64) []float64 {
		var x []float64
		for v := lo; v <= hi; v++ {
			x = append(x, v)
		}
		return x
	}
	tests := []struct {
		name   string
		a, b   []float64
		wantU  float64
		wantP  float64
		exact  bool
		source string
	}{
		{"seed 3v3 separated", seedBase, seedKQV, 0, 0.1, true,
			"R: wilcox.test(a, b, exact=TRUE)$p.value = 0.1; also 2/C(6,3) = 2/20"},
		{"4v4 separated", seq(1, 4), seq(5, 8), 0, 0.02857142857, true,
			"R: wilcox.test(1:4, 5:8) = 0.02857142857 (2/70)"},
		{"5v5 separated", seq(1, 5), seq(6, 10), 0, 0.007936507937, true,
			"R: wilcox.test(1:5, 6:10) = 0.007936507937 (2/252)"},
		{"5v5 reversed", seq(6, 10), seq(1, 5), 25, 0.007936507937, true,
			"symmetry of the two-sided test"},
		{"3v4 one swap", []float64{1, 2, 4}, []float64{3, 5, 6, 7}, 1, 0.1142857143, true,
			// Rank sum of a is 1+2+4 = 7; of the C(7,3) = 35 triples only
			// {1,2,3} (6) and {1,2,4} (7) are as low, and by symmetry two as
			// high: 4/35.
			"R: wilcox.test(c(1,2,4), c(3,5,6,7)) = 0.1142857143; enumeration 4/35"},
		{"3v3 with ties", []float64{1, 2, 2}, []float64{2, 3, 4}, 1, 0.3, true,
			// Pooled mid-ranks {1, 3, 3, 3, 5, 6}; a's sum is 1+3+3 = 7, mean
			// 3·3.5 = 10.5. Enumerating the 20 triples: with rank 1 (10
			// triples) the sums are 7,7,7,9,9,9,10,10,10,12; without it
			// 9,11,12,11,12,11,12,14,14,14. Sums ≤ 7 or ≥ 14: 3 + 3 = 6, so
			// p = 6/20. (R refuses an exact p with ties.)
			"hand enumeration: 6/20"},
		{"all tied", []float64{5, 5}, []float64{5, 5, 5}, 3, 1, true,
			"every split has the same rank sum"},
		{"30v30 normal approx", seq(1, 30), seq(31, 60), 0, 3.019859359e-11, false,
			"R: wilcox.test(1:30, 31:60, exact=FALSE) = 3.019859359e-11"},
		{"20v20 approx with ties",
			[]float64{1, 2, 2, 3, 5, 8, 9, 9, 10, 12, 13, 15, 15, 15, 20, 22, 23, 24, 25, 30},
			[]float64{4, 6, 7, 9, 11, 14, 16, 17, 18, 19, 21, 26, 27, 28, 29, 31, 32, 33, 34, 35},
			math.NaN(), 0.01789021286, false,
			"R: wilcox.test(a, b, exact=FALSE, correct=TRUE) = 0.01789021286"},
	}
	for _, tt := range tests {
		got := MannWhitney(tt.a, tt.b)
		if !near(got.P, tt.wantP, 1e-8) || got.Exact != tt.exact {
			t.Errorf("%s: MannWhitney(%v, %v).P = %.10g (exact %v), want %.10g (exact %v); source: %s",
				tt.name, tt.a, tt.b, got.P, got.Exact, tt.wantP, tt.exact, tt.source)
		}
		if !math.IsNaN(tt.wantU) && got.U != tt.wantU {
			t.Errorf("%s: U = %g, want %g", tt.name, got.U, tt.wantU)
		}
	}
}

// TestMannWhitney_exactMatchesBruteForce checks the dynamic programme
// against a plain enumeration of every split of the pooled mid-ranks, on
// random small samples with many ties.
func TestMannWhitney_exactMatchesBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 300; trial++ {
		n1, n2 := 1+rng.IntN(7), 1+rng.IntN(7)
		a, b := make([]float64, n1), make([]float64, n2)
		for i := range a {
			a[i] = float64(rng.IntN(5))
		}
		for i := range b {
			b[i] = float64(rng.IntN(5))
		}
		got := MannWhitney(a, b).P
		want := bruteForceU(a, b)
		if !near(got, want, 1e-12) {
			t.Fatalf("MannWhitney(%v, %v).P = %.12g, brute force %.12g", a, b, got, want)
		}
	}
}

func bruteForceU(a, b []float64) float64 {
	pool := append(append([]float64{}, a...), b...)
	N := len(pool)
	rank := make([]float64, N)
	for i, v := range pool {
		var less, eq float64
		for _, w := range pool {
			if w < v {
				less++
			} else if w == v {
				eq++
			}
		}
		rank[i] = less + (eq+1)/2
	}
	var obs float64
	for i := range a {
		obs += rank[i]
	}
	mean := float64(len(a)) * float64(N+1) / 2
	var hit, total float64
	for mask := 0; mask < 1<<N; mask++ {
		if popcount(mask) != len(a) {
			continue
		}
		var s float64
		for i := 0; i < N; i++ {
			if mask&(1<<i) != 0 {
				s += rank[i]
			}
		}
		total++
		if math.Abs(s-mean) >= math.Abs(obs-mean)-1e-9 {
			hit++
		}
	}
	return hit / total
}

func popcount(x int) int {
	n := 0
	for ; x != 0; x &= x - 1 {
		n++
	}
	return n
}

func TestMinPValue(t *testing.T) {
	// Closed form 2/C(n1+n2, n1), capped at 1.
	for _, c := range []struct {
		n1, n2 int
		want   float64
	}{
		{1, 1, 1}, {2, 2, 2.0 / 6}, {3, 3, 0.1}, {3, 4, 2.0 / 35}, {3, 5, 2.0 / 56},
		{4, 4, 2.0 / 70}, {5, 5, 2.0 / 252}, {0, 3, 1},
	} {
		if got := MinPValue(c.n1, c.n2); !near(got, c.want, 1e-12) {
			t.Errorf("MinPValue(%d, %d) = %g, want %g", c.n1, c.n2, got, c.want)
		}
	}
}

func TestWelch(t *testing.T) {
	check := func(a, b []float64, wantT, wantDF, wantP float64, source string) {
		t.Helper()
		got := Welch(a, b)
		if !near(got.T, wantT, 1e-6) || !near(got.DF, wantDF, 1e-6) || !near(got.P, wantP, 1e-6) {
			t.Errorf("Welch(%v, %v) = %+v, want T=%g DF=%g P=%g (%s)", a, b, got, wantT, wantDF, wantP, source)
		}
	}
	check(seedBase, seedKQV, 9.560526, 2.355038, 0.006165191, "R: t.test(b, a)")
	check([]float64{10.1, 9.8, 10.3, 10.0, 9.9}, []float64{10.6, 10.9, 10.4, 11.2},
		3.871794872, 4.430925784, 0.01479935095, "R: t.test(b, a)")
	if got := Welch([]float64{1}, []float64{2, 3}); !math.IsNaN(got.P) {
		t.Errorf("Welch with n=1: P = %g, want NaN", got.P)
	}
}

func TestTDistribution(t *testing.T) {
	// R: qt(0.975, df).
	for _, c := range []struct{ df, want float64 }{
		{1, 12.706204736}, {2, 4.302652730}, {3, 3.182446305}, {4, 2.776445105},
		{9, 2.262157163}, {29, 2.045229642}, {100, 1.983971519},
	} {
		if got := TQuantile(0.975, c.df); !near(got, c.want, 1e-8) {
			t.Errorf("TQuantile(0.975, %g) = %.10g, want %.10g (R qt)", c.df, got, c.want)
		}
	}
	// R: qt(0.8, df).
	if got := TQuantile(0.8, 10.5); !near(got, 0.877206770072, 1e-8) {
		t.Errorf("TQuantile(0.8, 10.5) = %.12g, want 0.877206770072 (R qt)", got)
	}
	// R: 1 - pt(t, df).
	for _, c := range []struct{ x, df, want float64 }{
		{2.5, 3.7, 0.0359110114559}, {1, 1, 0.25}, {0.5, 30.5, 0.310331761957},
		{-1, 1, 0.75},
	} {
		if got := TSF(c.x, c.df); !near(got, c.want, 1e-9) {
			t.Errorf("TSF(%g, %g) = %.12g, want %.12g (R 1-pt)", c.x, c.df, got, c.want)
		}
	}
}

func TestMedianCI(t *testing.T) {
	x := []float64{10.9, 9.1, 9.4, 11.3, 9.7, 10.0, 9.9, 10.2, 10.4, 10.6}
	// n = 10: P(Bin(10, ½) ≤ 1) = 11/1024, so [x(2), x(9)] covers
	// 1 - 22/1024 = 0.978515625 (R: pbinom(1, 10, .5)*2 = 0.02148438), and
	// [x(3), x(8)] only 1 - 2·56/1024 = 0.890625. Sorted: x(2) = 9.4,
	// x(9) = 10.9.
	got := MedianCI(x, 0.95)
	if got.Low != 9.4 || got.High != 10.9 || !near(got.Confidence, 0.978515625, 1e-12) {
		t.Errorf("MedianCI(%v, 0.95) = %+v, want {9.4 10.9 0.978515625}", x, got)
	}
	// n = 3: even [min, max] covers only 1 - 2/8 = 0.75.
	got = MedianCI(seedBase, 0.95)
	if got.Low != 13.8745 || got.High != 14.529 || got.Confidence != 0.75 || got.Available(0.95) {
		t.Errorf("MedianCI(%v, 0.95) = %+v, want [min, max] at 0.75, unavailable at 0.95", seedBase, got)
	}
	// n = 6 is the first to reach 95%: 1 - 2/64 = 0.96875.
	got = MedianCI([]float64{1, 2, 3, 4, 5, 6}, 0.95)
	if got.Low != 1 || got.High != 6 || got.Confidence != 0.96875 || !got.Available(0.95) {
		t.Errorf("MedianCI(1..6, 0.95) = %+v, want {1 6 0.96875}", got)
	}
	if got := MedianCI([]float64{1}, 0.95); got.Confidence != 0 {
		t.Errorf("MedianCI of one value = %+v, want unavailable", got)
	}
}

func TestMeanCI(t *testing.T) {
	check := func(x []float64, lo, hi float64) {
		t.Helper()
		got := MeanCI(x, 0.95)
		if !near(got.Low, lo, 1e-9) || !near(got.High, hi, 1e-9) || got.Confidence != 0.95 {
			t.Errorf("MeanCI(%v) = %+v, want [%.12g, %.12g] (R t.test(x)$conf.int)", x, got, lo, hi)
		}
	}
	check([]float64{9.1, 9.4, 9.7, 9.9, 10.0, 10.2, 10.4, 10.6, 10.9, 11.3}, 9.66687656978, 10.63312343022)
	check(seedBase, 13.3907407164, 15.1940592836)
	if got := MeanCI([]float64{3}, 0.95); got.Available(0.95) {
		t.Errorf("MeanCI of one value = %+v, want unavailable", got)
	}
}

func TestCenters(t *testing.T) {
	// R: mean(a), sd(a), median(a).
	if got := Mean(seedBase); !near(got, 14.2924, 1e-12) {
		t.Errorf("Mean = %.10g, want 14.2924", got)
	}
	if got := Stddev(seedBase); !near(got, 0.3629667065, 1e-9) {
		t.Errorf("Stddev = %.10g, want 0.3629667065", got)
	}
	if got := Median(seedBase); got != 14.4737 {
		t.Errorf("Median = %g, want 14.4737", got)
	}
	if got := Median([]float64{4, 1, 3, 2}); got != 2.5 {
		t.Errorf("Median(4,1,3,2) = %g, want 2.5", got)
	}
	// Closed form: (2·8)^(1/2) = 4.
	if got := GeoMean([]float64{2, 8}); !near(got, 4, 1e-12) {
		t.Errorf("GeoMean(2, 8) = %g, want 4", got)
	}
	if got := GeoMean([]float64{2, 0}); !math.IsNaN(got) {
		t.Errorf("GeoMean(2, 0) = %g, want NaN", got)
	}
}

func TestHolm(t *testing.T) {
	// R: p.adjust(c(0.01, 0.04, 0.03, 0.005), "holm") = 0.03 0.06 0.06 0.02.
	// By hand: sorted 0.005·4 = 0.02, 0.01·3 = 0.03, 0.03·2 = 0.06,
	// 0.04·1 = 0.04 raised to the running maximum 0.06.
	got := Holm([]float64{0.01, 0.04, 0.03, 0.005})
	want := []float64{0.03, 0.06, 0.06, 0.02}
	for i := range want {
		if !near(got[i], want[i], 1e-12) {
			t.Fatalf("Holm = %v, want %v", got, want)
		}
	}
	got = Holm([]float64{0.2, math.NaN(), 0.6})
	if !near(got[0], 0.4, 1e-12) || !math.IsNaN(got[1]) || !near(got[2], 0.6, 1e-12) {
		t.Errorf("Holm with NaN = %v, want [0.4 NaN 0.6]", got)
	}
	if got := Holm([]float64{0.7, 0.8}); got[0] != 1 || got[1] != 1 {
		t.Errorf("Holm caps at 1: got %v", got)
	}
}

func TestRepetitions(t *testing.T) {
	// R: power.t.test(delta=1, sd=1, sig.level=.05, power=.8)$n = 16.71477,
	// and for delta=0.5: 63.76576; the smallest whole n is the ceiling.
	if got := repetitionsT(1, 1, 0.05, 0.8); got != 17 {
		t.Errorf("repetitionsT(1, 1) = %d, want 17 (R power.t.test 16.71)", got)
	}
	if got := repetitionsT(0.5, 1, 0.05, 0.8); got != 64 {
		t.Errorf("repetitionsT(0.5, 1) = %d, want 64 (R power.t.test 63.77)", got)
	}
	// The rank test pays for its efficiency of 3/π ≈ 0.955 against the
	// t-test: 16.71/0.955 = 17.5, so 18 per side.
	if got := Repetitions(1, 1, 0.05, 0.8, 1); got != 18 {
		t.Errorf("Repetitions(1, 1) = %d, want 18 (R power.t.test 16.71 / 0.955)", got)
	}
	// Huge effect (the seed: 2.09 tok/s at noise 0.27): the exact-test
	// floor decides: 4 per side is the first n with 2/C(2n, n) < 0.05.
	if got := Repetitions(2.0912, 0.2679, 0.05, 0.8, 1); got != 4 {
		t.Errorf("Repetitions(seed) = %d, want 4", got)
	}
	// Three comparisons under Holm: the smallest p must beat 0.05/3, and
	// 2/C(8,4) = 0.029 does not, 2/C(10,5) = 0.0079 does.
	if got := Repetitions(2.0912, 0.2679, 0.05, 0.8, 3); got != 5 {
		t.Errorf("Repetitions(seed, 3 comparisons) = %d, want 5", got)
	}
	if got := Repetitions(0, 1, 0.05, 0.8, 1); got != 0 {
		t.Errorf("Repetitions with no effect = %d, want 0", got)
	}
	if got := Repetitions(1, 0, 0.05, 0.8, 1); got != 4 {
		t.Errorf("Repetitions with no noise = %d, want the floor 4", got)
	}
}

// TestMannWhitney_falsePositiveRate draws two samples from one distribution
// many times: the share of p < α must stay near α (the exact test is
// conservative, so at or below it), for the exact and the approximate path.
func TestMannWhitney_falsePositiveRate(t *testing.T) {
	for _, n := range []int{10, 30} {
		rng := rand.New(rand.NewPCG(42, uint64(n)))
		const trials = 5000
		reject := 0
		for i := 0; i < trials; i++ {
			a, b := normalSample(rng, n, 100, 5), normalSample(rng, n, 100, 5)
			if MannWhitney(a, b).P < 0.05 {
				reject++
			}
		}
		rate := float64(reject) / trials
		// Binomial sd at 0.05 over 5000 trials is 0.0031; 0.06 is three sd.
		if rate > 0.06 {
			t.Errorf("n=%d: false-positive rate %.4f over %d trials, want ≤ 0.06", n, rate, trials)
		}
		t.Logf("n=%d: false-positive rate %.4f", n, rate)
	}
}

// TestMannWhitney_power: a shift of two standard deviations at n = 10 is
// found nearly always (the t-test's power there is 0.99).
func TestMannWhitney_power(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	const trials = 1000
	found := 0
	for i := 0; i < trials; i++ {
		a, b := normalSample(rng, 10, 100, 5), normalSample(rng, 10, 110, 5)
		if MannWhitney(a, b).P < 0.05 {
			found++
		}
	}
	if rate := float64(found) / trials; rate < 0.95 {
		t.Errorf("power at 2σ, n=10: %.3f, want ≥ 0.95", rate)
	}
}

func normalSample(rng *rand.Rand, n int, mean, sd float64) []float64 {
	x := make([]float64, n)
	for i := range x {
		x[i] = mean + sd*rng.NormFloat64()
	}
	return x
}

func ExampleMannWhitney() {
	// Seed 000: three decode samples a side, every new one faster.
	base := []float64{13.8745, 14.4737, 14.529}
	kqv := []float64{16.2585, 16.4391, 16.4532}
	u := MannWhitney(base, kqv)
	fmt.Printf("U=%g p=%.3f exact=%v; smallest possible p at 3 vs 3: %.3f\n",
		u.U, u.P, u.Exact, MinPValue(3, 3))
	// Output: U=0 p=0.100 exact=true; smallest possible p at 3 vs 3: 0.100
}

// Reference values of the rounds path: mpmath 1.3 at 30 digits (the t
// distribution as the regularized incomplete beta, betainc, its quantiles
// by findroot), and enumerations written out below.
func TestPairedLogT(t *testing.T) {
	a := []float64{100, 102, 98, 101, 99}
	b := []float64{103, 104, 101, 105, 100}
	got := PairedLogT(a, b)
	// mpmath: d = ln(b/a); mean 0.02560401908781978, sd 0.01108719413092851,
	// t 5.163824724405048, p = 2·P(T4 > t) = 0.006680366234515250.
	if got.N != 5 || !near(got.MeanLogRatio, 0.02560401908781978, 1e-12) || !near(got.SDLogRatio, 0.01108719413092851, 1e-12) ||
		!near(got.T, 5.163824724405048, 1e-10) || got.DF != 4 || !near(got.P, 0.006680366234515250, 1e-8) {
		t.Errorf("PairedLogT(%v, %v) = %+v, want mean 0.025604, sd 0.011087, t 5.16382, p 0.0066804 (mpmath)", a, b, got)
	}
	// All five ratios above 1: 2 of the 32 sign patterns are as extreme.
	if !near(got.SignFlipP, 2.0/32, 1e-12) {
		t.Errorf("SignFlipP = %v, want 2/32", got.SignFlipP)
	}
	// Swapping the sides flips the sign and keeps p.
	if r := PairedLogT(b, a); !near(r.T, -got.T, 1e-12) || !near(r.P, got.P, 1e-12) {
		t.Errorf("swapped: got %+v", r)
	}
	for _, bad := range [][2][]float64{{{1}, {2}}, {{1, 0}, {2, 3}}, {{1, 2}, {2, 4}}} {
		if r := PairedLogT(bad[0], bad[1]); !math.IsNaN(r.P) {
			t.Errorf("PairedLogT(%v, %v).P = %v, want NaN (one pair, a zero, or no variance)", bad[0], bad[1], r.P)
		}
	}
}

func TestSignFlipP(t *testing.T) {
	// d = 1, 2, 3: the 8 sign patterns sum to ±6, ±4, ±2, 0, 0; |sum| ≥ 6
	// twice: 2/8.
	if p := SignFlipP([]float64{1, 2, 3}); p != 0.25 {
		t.Errorf("SignFlipP(1,2,3) = %v, want 0.25", p)
	}
	// d = 3, -1, 1: sum 3; patterns ±3±1±1 give 5,3,3,1,-1,-3,-3,-5: six
	// with |sum| ≥ 3.
	if p := SignFlipP([]float64{3, -1, 1}); p != 0.75 {
		t.Errorf("SignFlipP(3,-1,1) = %v, want 6/8", p)
	}
	if p := SignFlipP(make([]float64, 21)); !math.IsNaN(p) {
		t.Errorf("21 pairs: got %v, want NaN", p)
	}
}

func TestModifiedZ(t *testing.T) {
	// median 12, |x − 12| = 2 1 0 1 88, MAD 1: z = -2 -1 0 1 88.
	x := []float64{10, 11, 12, 13, 100}
	z := ModifiedZ(x)
	want := []float64{-2, -1, 0, 1, 88}
	for i := range want {
		if !near(z[i], want[i], 1e-12) {
			t.Errorf("ModifiedZ(%v) = %v, want %v", x, z, want)
			break
		}
	}
	if o := Outliers(x); len(o) != 1 || o[0] != 4 {
		t.Errorf("Outliers(%v) = %v, want [4]", x, o)
	}
	// z = 14 is inside hyperfine's bound, 15 outside.
	if o := Outliers([]float64{10, 11, 12, 13, 26}); len(o) != 0 {
		t.Errorf("z=14: got outliers %v", o)
	}
	if o := Outliers([]float64{10, 11, 12, 13, 27}); len(o) != 1 {
		t.Errorf("z=15: got outliers %v", o)
	}
	// a constant sample with one value off: the MAD is 0, the score huge
	if o := Outliers([]float64{5, 5, 5, 5.1}); len(o) != 1 || o[0] != 3 {
		t.Errorf("constant plus one: got %v", o)
	}
	if z := ModifiedZ([]float64{1, 100}); z != nil {
		t.Errorf("two values: got %v, want nil", z)
	}
}

func TestDetectableChange(t *testing.T) {
	// mpmath: qt(.975, 8) + qt(.8, 8) = 3.194893652971186; noise 1 around
	// 100, 5 vs 5: 3.19489 · √(2/5) / √(3/π) = 2.067762768156197 %.
	if got := DetectableChange(1, 100, 5, 5, 0.05, 0.8, 1); !near(got, 2.067762768156197, 1e-9) {
		t.Errorf("DetectableChange(1, 100, 5, 5) = %v, want 2.0677628 (mpmath)", got)
	}
	// 3 vs 3 cannot reach α=0.05 at all.
	if got := DetectableChange(1, 100, 3, 3, 0.05, 0.8, 1); !math.IsInf(got, 1) {
		t.Errorf("3 vs 3: got %v, want +Inf", got)
	}
	// It inverts Repetitions: the n Repetitions gives detects the change,
	// one fewer does not.
	for _, c := range []struct{ effect, noise float64 }{{2, 1}, {5, 3}, {1, 2}} {
		n := Repetitions(c.effect, c.noise, 0.05, 0.8, 1)
		if d := DetectableChange(c.noise, 100, n, n, 0.05, 0.8, 1); d > c.effect+1e-9 {
			t.Errorf("effect %v noise %v: Repetitions = %d but DetectableChange at %d = %v", c.effect, c.noise, n, n, d)
		}
		if n > 4 {
			if d := DetectableChange(c.noise, 100, n-1, n-1, 0.05, 0.8, 1); d <= c.effect {
				t.Errorf("effect %v noise %v: DetectableChange at %d = %v, already enough", c.effect, c.noise, n-1, d)
			}
		}
	}
	// mpmath: exp((qt(.975, 4) + qt(.8, 4)) · 0.02 / √5) − 1 = 3.380846605106849 %.
	if got := PairedDetectableChange(0.02, 5, 0.05, 0.8, 1); !near(got, 3.380846605106849, 1e-9) {
		t.Errorf("PairedDetectableChange(0.02, 5) = %v, want 3.3808466 (mpmath)", got)
	}
	n := PairedRepetitions(3.380846605106849, 0.02, 0.05, 0.8, 1)
	if n != 5 {
		t.Errorf("PairedRepetitions(3.38%%, 0.02) = %d, want 5, the inverse", n)
	}
	if n := PairedRepetitions(2, 0.02, 0.05, 0.8, 1); n <= 5 || PairedDetectableChange(0.02, n, 0.05, 0.8, 1) > 2 || PairedDetectableChange(0.02, n-1, 0.05, 0.8, 1) <= 2 {
		t.Errorf("PairedRepetitions(2%%, 0.02) = %d: not the least n that reaches 2%%", n)
	}
}

// TestZCritical: the two-sided normal critical values R's qnorm(1-a/2) gives.
func TestZCritical(t *testing.T) {
	for _, c := range []struct{ alpha, want float64 }{{0.05, 1.959963984540054}, {0.01, 2.5758293035489}, {0.3173105078629141, 1}} {
		if got := ZCritical(c.alpha); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("ZCritical(%g) = %.12g, want %.12g", c.alpha, got, c.want)
		}
	}
}

// TestPairedLogRatio: the paired t-test of log ratios without the exact
// sign-flip p-value (rigor bisect tests at every round of every step), and
// the interval of the mean log ratio; the same figures as PairedLogT.
func TestPairedLogRatio(t *testing.T) {
	a := []float64{100, 102, 98, 101, 99}
	b := []float64{103, 104, 101, 105, 100}
	got, full := PairedLogRatio(a, b), PairedLogT(a, b)
	if got.N != full.N || got.MeanLogRatio != full.MeanLogRatio || got.SDLogRatio != full.SDLogRatio || got.T != full.T || got.P != full.P || !math.IsNaN(got.SignFlipP) {
		t.Errorf("PairedLogRatio = %+v, want PairedLogT's %+v without SignFlipP", got, full)
	}
	// mean ± t(0.975, 4) · sd/√5, t(0.975, 4) = 2.7764451051977987 (R: qt).
	lo, hi := got.LogInterval(0.95)
	if !near(lo, 0.011837449294349755, 1e-12) || !near(hi, 0.03937058888128981, 1e-12) {
		t.Errorf("LogInterval(0.95) = %v, %v; want 0.0118374, 0.0393706", lo, hi)
	}
	if lo, hi := PairedLogRatio([]float64{1}, []float64{2}).LogInterval(0.95); !math.IsNaN(lo) || !math.IsNaN(hi) {
		t.Errorf("one pair: interval %v, %v; want NaN", lo, hi)
	}
	if lo, hi := PairedLogRatio([]float64{1, 2}, []float64{2, 4}).LogInterval(0.95); !near(lo, math.Ln2, 1e-15) || !near(hi, math.Ln2, 1e-15) {
		t.Errorf("no variance: interval %v, %v; want ln 2 both", lo, hi)
	}
}
