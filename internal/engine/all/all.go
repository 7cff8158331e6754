// Package all is the one explicit registry of engine families: the only
// place outside engine/ that names them. internal/run and internal/cli
// import engine and this package, never a family (TestImportRule).
package all

import (
	"fmt"
	"reflect"
	"sort"

	"github.com/rigorbench/rigor/internal/engine"
	"github.com/rigorbench/rigor/internal/engine/endpoint"
	"github.com/rigorbench/rigor/internal/engine/llamacpp"
	"github.com/rigorbench/rigor/internal/engine/nodellama"
	"github.com/rigorbench/rigor/internal/engine/serve"
	"github.com/rigorbench/rigor/internal/engine/vllm"
	"github.com/rigorbench/rigor/internal/spec"
)

// engines are the families. Serve mode (engine/serve) wraps each: a
// family that is an engine.Server serves, and its experiments without
// `serve:` go to the family's own engine.
var engines = map[string]engine.Engine{
	spec.FamilyLlamaCpp:   serve.Wrap(llamacpp.Engine{Fork: spec.FamilyLlamaCpp}),
	spec.FamilyIkLlamaCpp: serve.Wrap(llamacpp.Engine{Fork: spec.FamilyIkLlamaCpp}),
	spec.FamilyVLLM:       serve.Wrap(vllm.Engine{}),
	spec.FamilyNodeLlama:  serve.Wrap(nodellama.Engine{}),
	spec.FamilyEndpoint:   serve.Wrap(endpoint.Engine{}),
}

// Register adds a family to the registry, wrapped for serve mode like the
// others, for a build of rigor that has one more: the testscripts' rigor-toy
// registers engine/toy this way (with its row of the schema's #Families,
// schema.Add). Call it before anything else runs; rigor itself never
// does. A family registered twice is a programming error, and panics.
func Register(e engine.Engine) {
	if _, ok := engines[e.Family()]; ok {
		panic(fmt.Sprintf("engine family %q registered twice", e.Family()))
	}
	engines[e.Family()] = serve.Wrap(e)
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

// pkgPathsOf are the import paths of the packages that define an engine
// and the engines it wraps.
func pkgPathsOf(e engine.Engine) []string {
	out := []string{reflect.TypeOf(e).PkgPath()}
	if w, ok := e.(interface{ Unwrap() engine.Engine }); ok {
		out = append(out, pkgPathsOf(w.Unwrap())...)
	}
	return out
}
