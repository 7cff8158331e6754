// Package all is the one explicit registry of engine families.
package all

import (
	"fmt"

	"github.com/rigorbench/rigor/engine"
	"github.com/rigorbench/rigor/engine/llamacpp"
	"github.com/rigorbench/rigor/engine/nodellama"
	"github.com/rigorbench/rigor/engine/vllm"
	"github.com/rigorbench/rigor/internal/spec"
)

var planners = map[string]engine.Planner{
	spec.FamilyLlamaCpp:   llamacpp.Engine{Fork: spec.FamilyLlamaCpp},
	spec.FamilyIkLlamaCpp: llamacpp.Engine{Fork: spec.FamilyIkLlamaCpp},
	spec.FamilyVLLM:       vllm.Engine{},
	spec.FamilyNodeLlama:  nodellama.Engine{},
}

// Planner returns the planner of an engine family.
func Planner(family string) (engine.Planner, error) {
	p, ok := planners[family]
	if !ok {
		return nil, fmt.Errorf("unknown engine family %q", family)
	}
	return p, nil
}

// Plan plans a point with its family's engine.
func Plan(p *spec.Point, in engine.Inputs) (*engine.Plan, error) {
	pl, err := Planner(p.Spec.Engine.Family)
	if err != nil {
		return nil, err
	}
	return pl.Plan(p, in)
}
