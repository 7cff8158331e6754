package all

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/rigorbench/rigor/internal/engine"
	"github.com/rigorbench/rigor/internal/spec"
)

// TestImportRule keeps the engine boundary from rotting: outside engine/,
// no package names an engine family; internal/run and internal/cli reach
// the engines only through engine and engine/all. Formats that are not
// families (engine/llamabench, llama-bench's output, which import reads)
// may be imported by the libraries that read them, never by run or cli.
func TestImportRule(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}", "github.com/rigorbench/rigor/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	const mod = "github.com/rigorbench/rigor/"
	families := map[string]bool{}
	for _, f := range Families() {
		e, _ := Get(f)
		for _, p := range pkgPathsOf(e) {
			families[strings.TrimPrefix(p, mod)] = true
		}
	}
	if len(families) == 0 {
		t.Fatal("no engine packages found")
	}
	checked := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg := strings.TrimPrefix(fields[0], mod)
		if strings.HasPrefix(pkg, "internal/engine/") || pkg == "internal/engine" || strings.HasPrefix(pkg, "testscripts") {
			continue
		}
		boundary := strings.HasPrefix(pkg, "internal/run") || strings.HasPrefix(pkg, "internal/cli")
		for _, imp := range fields[1:] {
			if !strings.HasPrefix(imp, mod+"internal/engine/") {
				continue
			}
			rel := strings.TrimPrefix(imp, mod)
			switch {
			case rel == "internal/engine/all":
			case boundary:
				t.Errorf("%s imports %s: internal/run and internal/cli import only engine and engine/all", pkg, rel)
			case families[rel]:
				t.Errorf("%s imports the engine family %s: reach it through engine/all", pkg, rel)
			}
		}
		checked++
	}
	if checked < 10 {
		t.Fatalf("checked %d packages; go list found too few", checked)
	}
}

// TestServeNamesNoFamily: serve mode reaches each family only through the
// engine.Server capability, so a family that serves is added in its own
// package and here, never in engine/serve.
func TestServeNamesNoFamily(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{range .Imports}}{{.}} {{end}}", "github.com/rigorbench/rigor/internal/engine/serve").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	imports := strings.Fields(string(out))
	for _, f := range Families() {
		e, _ := Get(f)
		for _, p := range pkgPathsOf(e) {
			if strings.HasSuffix(p, "/engine/serve") {
				continue
			}
			for _, imp := range imports {
				if imp == p {
					t.Errorf("engine/serve imports the family %s: serving is its engine.Server capability", p)
				}
			}
		}
		if _, ok := e.(interface{ Unwrap() engine.Engine }); !ok {
			t.Errorf("%s is not wrapped by serve mode", f)
		}
	}
}

// TestFamiliesAreTheSchemas: the registry and the schema's family table
// (#Families, schema/families.cue) name the same families, and each
// registered engine serves the family it is registered under. A family
// added to one and not the other fails here, not in a user's run.
func TestFamiliesAreTheSchemas(t *testing.T) {
	schema := slices.Sorted(slices.Values(spec.Families()))
	if reg := Families(); !slices.Equal(reg, schema) {
		t.Errorf("engine/all registers %q; the schema's #Families lists %q", reg, schema)
	}
	for _, f := range Families() {
		e, _ := Get(f)
		if e.Family() != f {
			t.Errorf("the engine registered as %q says it is %q", f, e.Family())
		}
	}
}
