// Package bisect is the search behind `rigor bisect`: which commit to
// measure next, when a commit is good, bad or undecided, and when the
// search is over. It measures nothing itself. Its state ([State]) holds
// every measured value, so the next action ([Next]) is a pure function of
// it: the CLI runs what Next asks for, adds the values to the state,
// commits the state, and asks again; a killed bisect resumes from the
// last committed state, and the simulation (sim_test.go) drives the same
// function with a model of noisy runs.
//
// The statistics are diff's paired rounds ([stats.PairedLogT]): in each
// round the endpoints (the good and the bad commit) and the commit under
// test run one after another in a shuffled order, so the load of the
// machine, which drifts from round to round, cancels within the round.
//
//   - The endpoints first: good against bad, paired by round, until their
//     difference is significant, looking at 8, 16, 32, 64 rounds and at
//     the last one, each look at α divided by the number of looks
//     (Bonferroni), so that "the endpoints differ" is wrong at most α of
//     the time however often it looks. No difference by MaxRounds: "no
//     change", nothing bisected.
//   - Then each step: the commit against the geometric midpoint of the two
//     endpoints in the same round, ln(C) − (ln G + ln B)/2, the paired
//     t-test of diff. Significantly on the bad side: bad; on the good
//     side: good. Otherwise another round, up to MaxRounds; then the step
//     is undecided and the search stops with the range it could not split
//     rather than guess.
package bisect

import (
	"math"

	"github.com/rigorbench/rigor/internal/compare/stats"
)

// Rule is the decision rule's settings.
type Rule struct {
	// Alpha is the significance level, diff's 0.05 by default.
	Alpha float64
	// StepAlpha is the level of a step's tests at each round (0.001 by
	// default): looking at every round, a commit is wrongly called bad
	// only when its test against good crosses this level before its test
	// against bad crosses it; see the simulation.
	StepAlpha float64
	// MinRounds is the rounds before the first look (8 by default).
	MinRounds int
	// MaxRounds is the most rounds of the endpoints and of each step
	// (100 by default).
	MaxRounds int
}

// Defaults of [Rule].
const (
	DefaultAlpha     = 0.05
	DefaultStepAlpha = 0.001
	DefaultMinRounds = 8
	DefaultMaxRounds = 100
)

func (r Rule) withDefaults() Rule {
	if r.Alpha == 0 {
		r.Alpha = DefaultAlpha
	}
	if r.StepAlpha == 0 {
		r.StepAlpha = DefaultStepAlpha
	}
	if r.MinRounds == 0 {
		r.MinRounds = DefaultMinRounds
	}
	if r.MaxRounds == 0 {
		r.MaxRounds = DefaultMaxRounds
	}
	r.MinRounds = max(2, r.MinRounds)
	r.MaxRounds = max(r.MinRounds, r.MaxRounds)
	return r
}

// looks returns the round counts at which the endpoints are tested:
// MinRounds, doubling, and MaxRounds.
func (r Rule) looks() []int {
	var l []int
	for n := r.MinRounds; n < r.MaxRounds; n *= 2 {
		l = append(l, n)
	}
	return append(l, r.MaxRounds)
}

// Round is one round's values of the metric: the good endpoint, the bad
// endpoint and (in a step) the commit under test, with the ids of the
// runs that measured them.
type Round struct {
	Good   float64 `json:"good"`
	Bad    float64 `json:"bad"`
	Commit float64 `json:"commit,omitempty"`
	// Runs are the record ids of the round's runs, good, bad, commit.
	Runs []string `json:"runs,omitempty"`
}

// Change is a paired estimate of B against A in percent with its 95%
// interval, and the p-value of the paired t-test.
type Change struct {
	Rounds          int
	Percent         float64
	Low, High       float64
	P               float64
	Significant     bool
	MeanLog, SDLog  float64
	LogLow, LogHigh float64
}

// paired estimates ln(b/a) over the pairs with diff's paired t-test of
// log ratios ([stats.PairedLogRatio]: [stats.PairedLogT] without the
// exact sign-flip p-value, 2^n sums for n up to 20 rounds at every round
// of every step) and its 95% interval.
func paired(a, b []float64, alpha float64) Change {
	t := stats.PairedLogRatio(a, b)
	c := Change{Rounds: t.N, P: t.P, MeanLog: t.MeanLogRatio, SDLog: t.SDLogRatio, Percent: math.Expm1(t.MeanLogRatio) * 100}
	c.LogLow, c.LogHigh = t.LogInterval(0.95)
	c.Low, c.High = math.Expm1(c.LogLow)*100, math.Expm1(c.LogHigh)*100
	c.Significant = !math.IsNaN(c.P) && c.P < alpha
	return c
}

// EndpointChange is the change from the good to the bad endpoint over
// rounds, paired by round (every round of every step holds both).
func EndpointChange(rounds []Round) Change {
	var g, b []float64
	for _, r := range rounds {
		g, b = append(g, r.Good), append(b, r.Bad)
	}
	return paired(g, b, DefaultAlpha)
}

// Decision is a verdict and what it rests on.
type Decision struct {
	// Verdict is one of the constants below.
	Verdict Verdict
	// Change is the endpoints' test: bad against good.
	Change Change
	// VsGood and VsBad are a step's commit against each endpoint.
	VsGood, VsBad Change
	// Between is set when a step's commit differs from both endpoints.
	Between bool
	// Position is where a step's commit lies between the endpoints:
	// 0 with good, 1 with bad (NaN for the endpoints).
	Position float64
}

// Verdict of the endpoints or a step.
type Verdict string

// Verdicts.
const (
	// Changed: the endpoints differ.
	Changed Verdict = "changed"
	// NoChange: the endpoints did not differ in MaxRounds rounds.
	NoChange Verdict = "no change"
	// Good and Bad: a step's commit sits with the good or the bad
	// endpoint.
	Good Verdict = "good"
	Bad  Verdict = "bad"
	// More: not decided yet; another round may decide.
	More Verdict = "more"
	// Undecided: not decided in MaxRounds rounds.
	Undecided Verdict = "undecided"
	// Skip: the commit could not be measured (a patch does not apply,
	// the build fails, the runs fail).
	Skip Verdict = "skip"
)

// DecideEndpoints decides whether the endpoints differ after the rounds
// measured so far. It looks only at the rounds counts of [Rule]'s
// schedule, each at Alpha over the number of looks.
func DecideEndpoints(rounds []Round, rule Rule) Decision {
	rule = rule.withDefaults()
	looks := rule.looks()
	n := len(rounds)
	c := EndpointChange(rounds)
	d := Decision{Verdict: More, Change: c, Position: math.NaN()}
	look := n >= rule.MaxRounds // the last look (MaxRounds may be lowered on resuming)
	for _, l := range looks {
		look = look || l == n
	}
	if look && !math.IsNaN(c.P) && c.P < rule.Alpha/float64(len(looks)) {
		d.Verdict = Changed
		return d
	}
	if n >= rule.MaxRounds {
		d.Verdict = NoChange
	}
	return d
}

// DecideStep decides a step's commit C from its rounds, with diff's
// paired t-test of log ratios against each endpoint in the same round:
// C against good significant (in the endpoints' direction, up: bad above
// good) and C against bad not: bad; the other way round: good. Both
// significant after MinRounds: C is bad when it sits more than three
// quarters of the way from good to bad, good when less than a quarter
// (a small change of its own beside the one bisected, or a chance
// result on one side), and otherwise between the endpoints (a part of
// the change): undecided at once. Neither: another round, up to
// MaxRounds, then undecided.
//
// Against one endpoint, the ratio moves by the whole change when C sits
// with the other; against the endpoints' midpoint it would move by half
// the change with less noise (1.5 runs' variance, not 2), which needs
// three times the rounds.
func DecideStep(rounds []Round, up bool, rule Rule) Decision {
	rule = rule.withDefaults()
	var g, b, c []float64
	for _, r := range rounds {
		g, b, c = append(g, r.Good), append(b, r.Bad), append(c, r.Commit)
	}
	d := Decision{Verdict: More, VsGood: paired(g, c, rule.StepAlpha), VsBad: paired(b, c, rule.StepAlpha)}
	d.Position = math.NaN()
	if e := paired(g, b, DefaultAlpha); e.MeanLog != 0 && !math.IsNaN(e.MeanLog) {
		d.Position = d.VsGood.MeanLog / e.MeanLog
	}
	n := len(rounds)
	awayFromGood := d.VsGood.Significant && (d.VsGood.MeanLog > 0) == up
	awayFromBad := d.VsBad.Significant && (d.VsBad.MeanLog > 0) != up
	if n >= rule.MinRounds {
		switch {
		case awayFromGood && awayFromBad && d.Position > 0.75:
			d.Verdict = Bad // most of the change, and a little more
			return d
		case awayFromGood && awayFromBad && d.Position < 0.25:
			d.Verdict = Good
			return d
		case awayFromGood && awayFromBad:
			d.Verdict, d.Between = Undecided, true
			return d
		case awayFromGood:
			d.Verdict = Bad
			return d
		case awayFromBad:
			d.Verdict = Good
			return d
		}
	}
	if n >= rule.MaxRounds {
		d.Verdict = Undecided
	}
	return d
}
