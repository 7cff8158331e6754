// Package schema embeds rigor's CUE experiment schema, the package
// github.com/rigorbench/rigor/schema that experiment files import.
//
// The same files serve the stock cue tool and editors: in this module they
// are the package itself, and `rigor init` copies them into a new module's
// cue.mod/pkg. The loader overlays these embedded copies, so the binary's
// schema always wins over a stale copy on disk.
package schema

import "embed"

// FS holds the schema's .cue files.
//
//go:embed *.cue
var FS embed.FS

// ImportPath is the CUE import path of the schema package.
const ImportPath = "github.com/rigorbench/rigor/schema"
