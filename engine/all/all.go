// Package all is the one explicit registry of engine families: the only
// place outside engine/ that names them. internal/run and internal/cli
// import engine and this package, never a family (TestImportRule).
package all

import (
	"fmt"
	"reflect"
	"sort"

	"github.com/rigorbench/rigor/engine"
	"github.com/rigorbench/rigor/engine/llamacpp"
	"github.com/rigorbench/rigor/engine/nodellama"
	"github.com/rigorbench/rigor/engine/vllm"
	"github.com/rigorbench/rigor/internal/spec"
)

var engines = map[string]engine.Engine{
	spec.FamilyLlamaCpp:   llamacpp.Engine{Fork: spec.FamilyLlamaCpp},
	spec.FamilyIkLlamaCpp: llamacpp.Engine{Fork: spec.FamilyIkLlamaCpp},
	spec.FamilyVLLM:       vllm.Engine{},
	spec.FamilyNodeLlama:  nodellama.Engine{},
}

// Get returns the engine of a family.
func Get(family string) (engine.Engine, error) {
	e, ok := engines[family]
	if !ok {
		return nil, &UnknownFamilyError{Family: family}
	}
	return e, nil
}

// Families lists the registered families, sorted.
func Families() []string {
	out := make([]string, 0, len(engines))
	for f := range engines {
		out = append(out, f)
	}
	sort.Strings(out)
	return out
}

// UnknownFamilyError is a family no engine serves.
type UnknownFamilyError struct{ Family string }

func (e *UnknownFamilyError) Error() string {
	return fmt.Sprintf("unknown engine family %q", e.Family)
}

// Plan plans a point with its family's engine.
func Plan(p *spec.Point, in engine.Inputs) (*engine.Plan, error) {
	e, err := Get(p.Spec.Engine.Family)
	if err != nil {
		return nil, err
	}
	return e.Plan(p, in)
}

// pkgPathOf is the import path of the package that defines an engine.
func pkgPathOf(e engine.Engine) string {
	return reflect.TypeOf(e).PkgPath()
}
