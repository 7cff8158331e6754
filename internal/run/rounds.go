package run

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/rigorbench/rigor/internal/engine"
	"github.com/rigorbench/rigor/internal/engine/all"
	"github.com/rigorbench/rigor/internal/results"
	"github.com/rigorbench/rigor/internal/spec"
)

// Item is one prepared experiment and the points of it to run.
type Item struct {
	Prep   *Prepared
	Points []*spec.Point
}

// Rounds says how [Runner.RunRounds] repeats its executions.
type Rounds struct {
	// Invocation is recorded with every record; "" makes one from the
	// start time.
	Invocation string
	// Count is the number of rounds; 0 and 1 mean one round in the
	// listed order.
	Count int
	// Seed shuffles the order of each round: round k runs the executions
	// in the order rand.New(rand.NewPCG(Seed, k)).Shuffle puts the listed
	// ones in (experiments in the order given, each one's executions in
	// point order).
	Seed uint64
	// Start, when above 0, is the number of the first round: the rounds
	// run are rounds Start to Start+Count-1 of an invocation run a round
	// at a time (rigor bisect adds rounds until it can decide). They are
	// shuffled and recorded as rounds even when Count is 1.
	Start int
}

// unit is one execution of one experiment: a point, or the points of a
// sweep that run as one process.
type unit struct {
	e     engine.Engine
	prep  *Prepared
	group group
}

// Order is the order round k (from 1) of a rounds invocation runs its n
// executions in: a permutation of 0..n-1 shuffled from seed. One round
// (count ≤ 1) keeps the listed order.
func Order(seed uint64, k, count, n int) []int {
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	if count > 1 {
		rand.New(rand.NewPCG(seed, uint64(k))).Shuffle(n, func(i, j int) { idx[i], idx[j] = idx[j], idx[i] })
	}
	return idx
}

// RunRounds runs the points of prepared experiments in rounds (a
// randomized block design): each round runs every execution once, in an
// order shuffled per round from the seed, so that what the machine does
// over time falls on every experiment alike and runs of one round can be
// compared as pairs. Every record carries the invocation id and, with
// more than one round, its round, the round count, the seed and its place
// in the round. sink receives each record as soon as it exists;
// interrupted runs are recorded too. It returns the context's error when
// the user interrupted it.
func (r *Runner) RunRounds(ctx context.Context, items []Item, o Rounds, sink Sink) error {
	var units []unit
	points := 0
	for _, it := range items {
		e, err := all.Get(it.Prep.Experiment.Spec.Engine.Family)
		if err != nil {
			return err
		}
		for _, g := range Groups(e, it.Points) {
			units = append(units, unit{e: e, prep: it.Prep, group: g})
			points += len(g.points)
		}
	}
	count := max(o.Count, 1)
	if o.Invocation == "" {
		o.Invocation = results.NewRunID(r.now())
	}
	// Scratch directories of runs whose rigor was killed are removed.
	if removed, _, _ := CleanScratch(r.Cache); len(removed) > 0 {
		r.say("removed %d scratch %s left by a rigor that did not finish", len(removed), plural(len(removed), "directory", "directories"))
	}
	started := r.now()
	total := count * len(units)
	done := 0
	first, last, of := 1, count, count
	if o.Start > 0 {
		first, last = o.Start, o.Start+count-1
		of = max(last, 2) // shuffled and recorded as rounds
	}
	for k := first; k <= last; k++ {
		for pos, ui := range Order(o.Seed, k, of, len(units)) {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			u := units[ui]
			label := u.group.points[0].ID
			if u.group.combined != nil {
				label = fmt.Sprintf("%s (%d points in one %s process)", u.prep.Experiment.ID, len(u.group.points), benchName(u.e, u.group.combined))
			}
			if of > 1 {
				label += fmt.Sprintf(" (round %d/%d)", k, of)
			}
			eta := ""
			if done > 0 {
				per := r.now().Sub(started) / time.Duration(done)
				eta = fmt.Sprintf(", ETA %s", (per * time.Duration(total-done)).Round(time.Second))
			}
			r.say("[%d/%d] %s%s", done+1, total, label, eta)
			runs, err := r.runGroup(ctx, u.e, u.prep, u.group)
			if err != nil {
				return err
			}
			for _, pr := range runs {
				pr.Record.Invocation = o.Invocation
				if of > 1 {
					pr.Record.Round, pr.Record.Rounds, pr.Record.RoundsSeed, pr.Record.Order = k, of, o.Seed, pos+1
				}
				if err := sink(pr); err != nil {
					return err
				}
			}
			done++
			if ctx.Err() != nil {
				return ctx.Err()
			}
		}
	}
	return nil
}
