package all

import (
	"bufio"
	"os"
	"os/exec"
	"path"
	"sort"
	"strings"
	"testing"
)

// TestArchitectureDoc keeps ARCHITECTURE.md true: its package table names
// every package of the module and no other, and each package imports only
// the module packages its row allows. A new package, a removed one or a new
// import across the layers fails here until the page says so.
func TestArchitectureDoc(t *testing.T) {
	rows := readArchitectureTable(t, "../../../ARCHITECTURE.md")
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}", "github.com/rigorbench/rigor/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	const mod = "github.com/rigorbench/rigor/"
	seen := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg := strings.TrimPrefix(fields[0], mod)
		seen[pkg] = true
		allowed, ok := rows[pkg]
		if !ok {
			t.Errorf("ARCHITECTURE.md: package %s has no row in the package table: add one (what it owns, what it may import)", pkg)
			continue
		}
		for _, imp := range fields[1:] {
			if !strings.HasPrefix(imp, mod) {
				continue
			}
			rel := strings.TrimPrefix(imp, mod)
			if !mayImport(allowed, rel) {
				t.Errorf("%s imports %s, which its row in ARCHITECTURE.md does not allow: change the code or the page (may import: %s)", pkg, rel, strings.Join(allowed, ", "))
			}
		}
	}
	var stale []string
	for pkg := range rows {
		if !seen[pkg] {
			stale = append(stale, pkg)
		}
	}
	sort.Strings(stale)
	for _, pkg := range stale {
		t.Errorf("ARCHITECTURE.md names package %s, which does not exist: remove or rename its row", pkg)
	}
	if len(seen) < 20 {
		t.Fatalf("go list found %d packages; too few", len(seen))
	}
}

// mayImport reports whether rel matches one of the allowed entries: a
// package path, or a path ending in /... for it and everything below it.
func mayImport(allowed []string, rel string) bool {
	for _, a := range allowed {
		if base, ok := strings.CutSuffix(a, "/..."); ok {
			if rel == base || strings.HasPrefix(rel, base+"/") {
				return true
			}
			continue
		}
		if a == rel {
			return true
		}
	}
	return false
}

// readArchitectureTable reads the rows of the table under "## Packages":
// | `pkg` | what it owns | `a`, `b/...` (or —) |
func readArchitectureTable(t *testing.T, file string) map[string][]string {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatalf("%v: the package map a newcomer reads first must exist", err)
	}
	defer f.Close()
	rows := map[string][]string{}
	in := false
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "## ") {
			in = line == "## Packages"
			continue
		}
		if !in || !strings.HasPrefix(line, "| `") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) != 3 {
			t.Fatalf("%s:%d: a package row has three cells (package, owns, may import), not %d", file, n, len(cells))
		}
		pkg := strings.Trim(strings.TrimSpace(cells[0]), "`")
		if _, dup := rows[pkg]; dup {
			t.Errorf("%s:%d: package %s has two rows", file, n, pkg)
		}
		var allowed []string
		for _, a := range strings.Split(cells[2], ",") {
			a = strings.Trim(strings.TrimSpace(a), "`")
			if a == "" || a == "—" {
				continue
			}
			if path.Clean(strings.TrimSuffix(a, "/...")) != strings.TrimSuffix(a, "/...") {
				t.Errorf("%s:%d: %q is not a clean package path", file, n, a)
			}
			allowed = append(allowed, a)
		}
		rows[pkg] = allowed
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(rows) == 0 {
		t.Fatalf("%s: no package table under \"## Packages\"", file)
	}
	return rows
}
