package bisect

import (
	"math"

	"github.com/rigorbench/rigor/internal/compare/stats"
)

// Commit is one commit of the first-parent history between the endpoints.
type Commit struct {
	Hash    string `json:"hash"`
	Subject string `json:"subject"`
	// Date is the author date (RFC 3339).
	Date string `json:"date"`
	// Merge is set for a merge commit: the walk follows its first parent
	// only, and a bad merge stands for every commit it brought in.
	Merge bool `json:"merge,omitempty"`
}

// Step is the measurement of one commit between the endpoints.
type Step struct {
	// Commit is the commit's hash.
	Commit string `json:"commit"`
	// Rounds are the step's rounds, each with the endpoints beside it.
	Rounds []Round `json:"rounds,omitempty"`
	// Verdict is Good, Bad, Undecided or Skip once decided; empty while
	// the step runs.
	Verdict Verdict `json:"verdict,omitempty"`
	// Reason says why a commit was skipped.
	Reason string `json:"reason,omitempty"`
}

// State is everything a bisect has measured and decided; [Next] reads
// it to say what to do next.
type State struct {
	// Commits is the first-parent history from the good endpoint
	// (Commits[0]) to the bad one (the last).
	Commits []Commit `json:"commits"`
	// Endpoints are the rounds of the endpoints alone, before any step.
	Endpoints []Round `json:"endpoints,omitempty"`
	// Steps are the commits measured, in the order they were.
	Steps []Step `json:"steps,omitempty"`
}

// Kind is what [Next] asks for.
type Kind int

// Kinds of [Action].
const (
	// MeasureEndpoints: run one more round of the two endpoints and add it
	// to State.Endpoints.
	MeasureEndpoints Kind = iota
	// MeasureStep: run one more round of the endpoints and the commit
	// Action.Index, adding it to the step of that commit (a new step if
	// the last step is not that commit's).
	MeasureStep
	// Done: the search is over; Action.Outcome says how.
	Done
)

// Action is what to do next.
type Action struct {
	Kind    Kind
	Index   int
	Outcome Outcome
}

// Ending is how a bisect ended.
type Ending string

// Endings.
const (
	// Found: the first bad commit (Outcome.First).
	Found Ending = "found"
	// NoChangeEnding: the endpoints do not differ; nothing was bisected.
	NoChangeEnding Ending = "no change"
	// CouldNotSplit: the range LastGood..FirstBad holds the change, but a
	// commit in it was undecided, or every commit in it was skipped.
	CouldNotSplit Ending = "could not split"
)

// Outcome is the end of a bisect.
type Outcome struct {
	Ending Ending
	// First is the index of the first bad commit (Found).
	First int
	// LastGood and FirstBad bound the range the change lies in: the
	// last commit known good and the first known bad.
	LastGood, FirstBad int
	// Undecided is the index of the commit that stayed undecided, or -1.
	Undecided int
	// Skipped are the indexes of the skipped commits, in history order.
	Skipped []int
	// Change is the endpoints' change, paired by round over every round
	// measured (the endpoints run in every round of every step).
	Change Change
}

// Rounds returns every round measured: the endpoints' and every step's.
func (st *State) Rounds() []Round {
	all := append([]Round(nil), st.Endpoints...)
	for _, s := range st.Steps {
		all = append(all, s.Rounds...)
	}
	return all
}

// Index returns the index of a commit in Commits, or -1.
func (st *State) Index(hash string) int {
	for i, c := range st.Commits {
		if c.Hash == hash {
			return i
		}
	}
	return -1
}

// Next records in st the verdicts that the rounds measured so far decide
// (the last step's, when its rounds now suffice) and returns what to do
// next. It is deterministic: the same state gives the same action.
func Next(st *State, rule Rule) Action {
	rule = rule.withDefaults()
	n := len(st.Commits)
	ep := DecideEndpoints(st.Endpoints, rule)
	switch ep.Verdict {
	case More:
		return Action{Kind: MeasureEndpoints}
	case NoChange:
		return Action{Kind: Done, Outcome: Outcome{Ending: NoChangeEnding, LastGood: 0, FirstBad: n - 1, Undecided: -1, Change: EndpointChange(st.Rounds())}}
	}
	up := ep.Change.MeanLog > 0
	if k := len(st.Steps) - 1; k >= 0 && st.Steps[k].Verdict == "" {
		s := &st.Steps[k]
		d := DecideStep(s.Rounds, up, rule)
		if d.Verdict == More {
			return Action{Kind: MeasureStep, Index: st.Index(s.Commit)}
		}
		s.Verdict = d.Verdict
	}
	lastGood, firstBad := 0, n-1
	measured := map[int]Verdict{}
	for _, s := range st.Steps {
		i := st.Index(s.Commit)
		if i < 0 {
			continue
		}
		measured[i] = s.Verdict
		switch s.Verdict {
		case Good:
			lastGood = max(lastGood, i)
		case Bad:
			firstBad = min(firstBad, i)
		}
	}
	out := Outcome{LastGood: lastGood, FirstBad: firstBad, Undecided: -1, Change: EndpointChange(st.Rounds())}
	for i := 0; i < n; i++ {
		if measured[i] == Skip {
			out.Skipped = append(out.Skipped, i)
		}
	}
	best := -1
	mid := float64(lastGood+firstBad) / 2
	for i := lastGood + 1; i < firstBad; i++ {
		switch measured[i] {
		case Undecided:
			out.Ending, out.Undecided = CouldNotSplit, i
			return Action{Kind: Done, Outcome: out}
		case Skip:
			continue
		case "":
			if best < 0 || math.Abs(float64(i)-mid) < math.Abs(float64(best)-mid) {
				best = i
			}
		}
	}
	if best >= 0 {
		return Action{Kind: MeasureStep, Index: best}
	}
	if firstBad == lastGood+1 {
		out.Ending, out.First = Found, firstBad
	} else {
		out.Ending = CouldNotSplit
	}
	return Action{Kind: Done, Outcome: out}
}

// ChangeAt estimates the change at the first bad commit: from the last
// good commit P to it, F. Each was measured against the good endpoint G
// in rounds of its own, so ln(F/P) is ln(F/G) less ln(P/G), the two
// means from different steps, their variances added (Welch's degrees of
// freedom). When P is the good endpoint, F's own paired rounds against
// it; when F is the bad endpoint, P's against it; when neither was a
// step (nothing between the endpoints), the endpoints' change.
func ChangeAt(st *State, lastGood, first int) Change {
	step := func(i int) *Step {
		if i < 0 || i >= len(st.Commits) {
			return nil
		}
		for k := range st.Steps {
			if s := &st.Steps[k]; s.Commit == st.Commits[i].Hash && len(s.Rounds) > 0 {
				return s
			}
		}
		return nil
	}
	vsGood := func(s *Step) Change {
		var g, c []float64
		for _, r := range s.Rounds {
			g, c = append(g, r.Good), append(c, r.Commit)
		}
		return paired(g, c, DefaultAlpha)
	}
	sp, sf := step(lastGood), step(first)
	switch {
	case lastGood == 0 && sf != nil:
		return vsGood(sf)
	case first == len(st.Commits)-1 && sp != nil:
		var b, c []float64
		for _, r := range sp.Rounds {
			b, c = append(b, r.Bad), append(c, r.Commit)
		}
		return paired(c, b, DefaultAlpha) // ln(B/P)
	case sp == nil || sf == nil:
		return EndpointChange(st.Rounds())
	}
	p, f := vsGood(sp), vsGood(sf)
	nan := math.NaN()
	c := Change{Rounds: p.Rounds + f.Rounds, MeanLog: f.MeanLog - p.MeanLog, P: nan, SDLog: nan, Low: nan, High: nan, LogLow: nan, LogHigh: nan}
	c.Percent = math.Expm1(c.MeanLog) * 100
	vp, vf := sq(p.SDLog)/float64(p.Rounds), sq(f.SDLog)/float64(f.Rounds)
	se := math.Sqrt(vp + vf)
	if p.Rounds < 2 || f.Rounds < 2 || !(se > 0) {
		return c
	}
	df := sq(vp+vf) / (sq(vp)/float64(p.Rounds-1) + sq(vf)/float64(f.Rounds-1))
	h := stats.TQuantile(0.975, df) * se
	c.LogLow, c.LogHigh = c.MeanLog-h, c.MeanLog+h
	c.Low, c.High = math.Expm1(c.LogLow)*100, math.Expm1(c.LogHigh)*100
	c.P = math.Min(1, 2*stats.TSF(math.Abs(c.MeanLog/se), df))
	c.Significant = c.P < DefaultAlpha
	return c
}

func sq(x float64) float64 { return x * x }
