package cli

import (
	"io"
	"regexp"
	"strings"
	"testing"

	"github.com/alecthomas/kong"
)

// helpExamples returns every command of the tree with the example lines of
// its help ("Examples:" then indented "rigor …" lines), without their notes.
func helpExamples(t *testing.T) map[string][]string {
	t.Helper()
	all, err := Examples()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	var c cli
	p, err := kong.New(&c, kong.Name("rigor"), kong.Writers(io.Discard, io.Discard))
	if err != nil {
		t.Fatal(err)
	}
	var walk func(n *kong.Node)
	walk = func(n *kong.Node) {
		for _, ch := range n.Children {
			if ch.Type != kong.CommandNode || ch.Hidden {
				continue
			}
			out[ch.Path()] = nil
			walk(ch)
		}
	}
	walk(p.Model.Node)
	for _, ex := range all {
		out[ex.Command] = append(out[ex.Command], ex.Line)
	}
	return out
}

// shellWords splits an example as sh would, for the quoting the examples
// use: single and double quotes, no expansions. Leading VAR=value
// assignments and a trailing "> FILE" redirection are dropped.
func shellWords(t *testing.T, line string) []string {
	t.Helper()
	var words []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(line); i++ {
		switch ch := line[i]; ch {
		case ' ':
			if inWord {
				words, inWord = append(words, cur.String()), false
				cur.Reset()
			}
		case '\'', '"':
			j := strings.IndexByte(line[i+1:], ch)
			if j < 0 {
				t.Fatalf("%s: unterminated quote", line)
			}
			cur.WriteString(line[i+1 : i+1+j])
			i += j + 1
			inWord = true
		default:
			cur.WriteByte(ch)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	for len(words) > 0 && regexp.MustCompile(`^[A-Z_]+=`).MatchString(words[0]) {
		words = words[1:]
	}
	if n := len(words); n >= 2 && words[n-2] == ">" {
		words = words[:n-2]
	}
	return words
}

// absPath finds a path of one machine in an example: an absolute path
// other than the shell's own.
var absPath = regexp.MustCompile(`(^|[\s=])/[A-Za-z]`)

// TestHelpExamples parses every example of every command's help with the
// real command tree, so that a renamed flag or verb breaks the build of
// the docs, and checks that every verb has examples and that they name no
// path of one machine.
func TestHelpExamples(t *testing.T) {
	all := helpExamples(t)
	if len(all) < 20 {
		t.Fatalf("found %d commands, want every verb and sub-command", len(all))
	}
	for path, examples := range all {
		if len(examples) == 0 {
			t.Errorf("rigor %s --help has no examples", path)
			continue
		}
		for _, ex := range examples {
			if absPath.MatchString(ex) {
				t.Errorf("rigor %s --help: example %q names an absolute path: examples must work in any checkout", path, ex)
			}
			words := shellWords(t, ex)
			if len(words) == 0 || words[0] != "rigor" {
				t.Errorf("rigor %s --help: example %q does not start with rigor", path, ex)
				continue
			}
			var c cli
			p, err := kong.New(&c, kong.Name("rigor"), kong.Writers(io.Discard, io.Discard),
				kong.Exit(func(int) { t.Fatalf("rigor %s --help: example %q exits the parser", path, ex) }))
			if err != nil {
				t.Fatal(err)
			}
			kctx, err := p.Parse(words[1:])
			if err != nil {
				t.Errorf("rigor %s --help: example %q does not parse: %v", path, ex, err)
				continue
			}
			if got := kctx.Command(); !strings.HasPrefix(got, strings.Fields(path)[0]) {
				t.Errorf("rigor %s --help: example %q selects %q", path, ex, got)
			}
		}
	}
}

func TestShellWords(t *testing.T) {
	got := shellWords(t, `HF_TOKEN=hf_x rigor report 'qwen/*' -o site --title "Qwen on the 4090s" > x.html`)
	want := []string{"rigor", "report", "qwen/*", "-o", "site", "--title", "Qwen on the 4090s"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("got %q, want %q", got, want)
	}
}
