// Package schema embeds rigor's CUE experiment schema, the package
// github.com/rigorbench/rigor/schema that experiment files import.
//
// The same files serve the stock cue tool and editors: in this module they
// are the package itself, and `rigor init` copies them into a new module's
// cue.mod/pkg. The loader overlays these embedded copies, so the binary's
// schema always wins over a stale copy on disk.
//
// The engine families are one table, #Families (families.cue): the
// sources, bench tool, flag tables, server and fork of each. rigor reads
// it at startup (internal/spec); nothing in Go lists the families again.
package schema

import (
	"embed"
	"io/fs"
	"maps"
	"slices"
	"strings"
	"sync"
)

// FS holds the schema's .cue files.
//
//go:embed *.cue
var FS embed.FS

// ImportPath is the CUE import path of the schema package.
const ImportPath = "github.com/rigorbench/rigor/schema"

var added struct {
	sync.Mutex
	files map[string][]byte
}

// Add adds a file to the schema package, for a build of rigor that extends
// it: the testscripts' toy family (internal/engine/toy) adds its row of #Families
// this way, in the test binary only. Call it before anything reads the
// schema; rigor itself never calls it.
func Add(name string, src []byte) {
	added.Lock()
	defer added.Unlock()
	if added.files == nil {
		added.files = map[string][]byte{}
	}
	added.files[name] = slices.Clone(src)
}

// File is one file of the schema package.
type File struct {
	Name string
	Src  []byte
}

// Files are the schema package's files, sorted by name: the embedded ones
// and those a build added ([Add]).
func Files() ([]File, error) {
	entries, err := fs.ReadDir(FS, ".")
	if err != nil {
		return nil, err
	}
	var out []File
	for _, e := range entries {
		b, err := fs.ReadFile(FS, e.Name())
		if err != nil {
			return nil, err
		}
		out = append(out, File{e.Name(), b})
	}
	added.Lock()
	defer added.Unlock()
	for _, name := range slices.Sorted(maps.Keys(added.files)) {
		out = append(out, File{name, added.files[name]})
	}
	slices.SortFunc(out, func(a, b File) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}
