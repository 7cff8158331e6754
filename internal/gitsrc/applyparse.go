package gitsrc

// Parsers of untrusted text: git apply's stderr (in the C locale) and patch
// files. Both are fuzzed (FuzzParseApplyErrors, FuzzParseHunks).

import (
	"bufio"
	"bytes"
	"strconv"
	"strings"
)

// applyFailure is one error line of git apply.
type applyFailure struct {
	File string // the source file named, if any
	Line int    // the line where git expected the hunk, if given
	Msg  string // the line without "error: "
}

// fileErrorSuffixes end git apply's "error: <file>: <what>" messages.
var fileErrorSuffixes = []string{
	": patch does not apply",
	": No such file or directory",
	": already exists in working directory",
	": does not exist in index",
	": does not match index",
	": wrong type",
	": file exists",
}

// parseApplyErrors returns the "error:" and "fatal:" lines of git apply's
// stderr, with the file and line they name, such as
//
//	error: patch failed: src/llama.cpp:123
//	error: src/llama.cpp: patch does not apply
//	error: src/x.c: No such file or directory
func parseApplyErrors(stderr string) []applyFailure {
	var out []applyFailure
	for line := range strings.SplitSeq(stderr, "\n") {
		line = strings.TrimRight(line, "\r")
		msg, ok := strings.CutPrefix(line, "error: ")
		if !ok {
			if msg, ok = strings.CutPrefix(line, "fatal: "); !ok {
				continue
			}
		}
		if msg == "while searching for:" {
			continue // followed by context lines; --verbose only
		}
		f := applyFailure{Msg: msg}
		if rest, ok := strings.CutPrefix(msg, "patch failed: "); ok {
			if i := strings.LastIndexByte(rest, ':'); i > 0 {
				if n, err := strconv.Atoi(rest[i+1:]); err == nil && n >= 0 {
					f.File, f.Line = rest[:i], n
				}
			}
		} else if rest, ok := strings.CutPrefix(msg, "affected file '"); ok {
			if i := strings.Index(rest, "' is beyond a symbolic link"); i > 0 {
				f.File = rest[:i]
			}
		} else {
			for _, suf := range fileErrorSuffixes {
				if file, ok := strings.CutSuffix(msg, suf); ok && file != "" {
					f.File = file
					break
				}
			}
		}
		out = append(out, f)
	}
	return out
}

// parseOffsets returns the hunks that git apply --verbose reports as applied
// at an offset, each as "<file>: hunk #N succeeded at L (offset K lines)".
func parseOffsets(stderr string) []string {
	var out []string
	file := ""
	for line := range strings.SplitSeq(stderr, "\n") {
		line = strings.TrimRight(line, "\r")
		if rest, ok := strings.CutPrefix(line, "Checking patch "); ok {
			file = strings.TrimSuffix(rest, "...")
			continue
		}
		if rest, ok := strings.CutPrefix(line, "Hunk #"); ok && strings.Contains(rest, "(offset") {
			out = append(out, file+": hunk #"+strings.TrimSuffix(rest, "."))
		}
	}
	return out
}

// hunk is one "@@" section of a patch.
type hunk struct {
	OldFile, NewFile string // paths with the a/ and b/ prefixes removed
	Number           int    // 1-based among the hunks of its file section
	OldStart         int    // the old-file line in the header
	Header           string // the "@@ … @@" line, trailing text included
}

// parseHunks lists the hunks of a unified diff, tracking the file each one
// belongs to. It counts the lines of each hunk's body so that a removed line
// that looks like a header ("--- a/x") is not taken for one.
func parseHunks(patch []byte) []hunk {
	var out []hunk
	var oldFile, newFile string
	number := 0
	oldLeft, newLeft := 0, 0 // body lines still expected in the current hunk
	sc := bufio.NewScanner(bytes.NewReader(patch))
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		if oldLeft > 0 || newLeft > 0 {
			switch {
			case strings.HasPrefix(line, `\`): // "\ No newline at end of file"
				continue
			case strings.HasPrefix(line, "-"):
				oldLeft--
				continue
			case strings.HasPrefix(line, "+"):
				newLeft--
				continue
			case strings.HasPrefix(line, " ") || line == "":
				oldLeft--
				newLeft--
				continue
			}
			// A hunk shorter than its header says (git would call the
			// patch corrupt): read the line as a header.
			oldLeft, newLeft = 0, 0
		}
		switch {
		case strings.HasPrefix(line, "diff --git "):
			oldFile, newFile = splitGitDiffNames(line[len("diff --git "):])
			number = 0
		case strings.HasPrefix(line, "--- "):
			if name := diffName(line[4:], "a/"); name != "" {
				oldFile = name
			}
			number = 0
		case strings.HasPrefix(line, "+++ "):
			if name := diffName(line[4:], "b/"); name != "" {
				newFile = name
			}
		case strings.HasPrefix(line, "@@ "):
			o, oc, nc, ok := parseHunkHeader(line)
			if !ok {
				continue
			}
			number++
			out = append(out, hunk{OldFile: oldFile, NewFile: newFile, Number: number, OldStart: o, Header: line})
			oldLeft, newLeft = oc, nc
		}
	}
	return out
}

// parseHunkHeader parses "@@ -o[,oc] +n[,nc] @@…".
func parseHunkHeader(line string) (oldStart, oldCount, newCount int, ok bool) {
	fields := strings.Fields(line)
	if len(fields) < 4 || fields[0] != "@@" || fields[3] != "@@" ||
		!strings.HasPrefix(fields[1], "-") || !strings.HasPrefix(fields[2], "+") {
		return 0, 0, 0, false
	}
	rng := func(s string) (start, count int, ok bool) {
		a, b, has := strings.Cut(s, ",")
		start, err := strconv.Atoi(a)
		if err != nil || start < 0 {
			return 0, 0, false
		}
		count = 1
		if has {
			if count, err = strconv.Atoi(b); err != nil || count < 0 {
				return 0, 0, false
			}
		}
		return start, count, true
	}
	o, oc, ok1 := rng(fields[1][1:])
	_, nc, ok2 := rng(fields[2][1:])
	if !ok1 || !ok2 {
		return 0, 0, 0, false
	}
	return o, oc, nc, true
}

// diffName returns the path of a "---"/"+++" header value: quotes, the
// timestamp after a tab and the a/ or b/ prefix removed; "" for /dev/null.
func diffName(s, prefix string) string {
	if i := strings.IndexByte(s, '\t'); i >= 0 {
		s = s[:i]
	}
	s = strings.TrimSpace(s)
	if uq, err := strconv.Unquote(s); err == nil && strings.HasPrefix(s, `"`) {
		s = uq
	}
	if s == "/dev/null" {
		return ""
	}
	return strings.TrimPrefix(s, prefix)
}

// splitGitDiffNames splits the "a/x b/y" of a "diff --git" line. Names with
// spaces are ambiguous there; the "---"/"+++" lines that follow settle them.
func splitGitDiffNames(s string) (string, string) {
	if i := strings.Index(s, " b/"); i >= 0 {
		return diffName(s[:i], "a/"), diffName(s[i+1:], "b/")
	}
	return "", ""
}

// findHunk returns the hunk of file that git reported failing at line: the
// one whose header names that line, else the nearest one before it; with no
// line, the file's first hunk.
func findHunk(hunks []hunk, file string, line int) (hunk, bool) {
	var best hunk
	found := false
	for _, h := range hunks {
		if h.OldFile != file && h.NewFile != file {
			continue
		}
		if line <= 0 || h.OldStart == line {
			return h, true
		}
		if h.OldStart < line && (!found || h.OldStart > best.OldStart) {
			best, found = h, true
		}
	}
	return best, found
}
