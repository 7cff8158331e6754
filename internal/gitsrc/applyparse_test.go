package gitsrc

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseApplyErrors(t *testing.T) {
	tests := []struct {
		stderr string
		want   []applyFailure
	}{
		{"", nil},
		{"Checking patch src/a.c...\n", nil},
		{
			"error: patch failed: src/llama.cpp:123\nerror: src/llama.cpp: patch does not apply\n",
			[]applyFailure{
				{File: "src/llama.cpp", Line: 123, Msg: "patch failed: src/llama.cpp:123"},
				{File: "src/llama.cpp", Msg: "src/llama.cpp: patch does not apply"},
			},
		},
		{
			"error: patch failed: dir:with:colons.c:7\r\n",
			[]applyFailure{{File: "dir:with:colons.c", Line: 7, Msg: "patch failed: dir:with:colons.c:7"}},
		},
		{"error: src/x.c: No such file or directory\n", []applyFailure{{File: "src/x.c", Msg: "src/x.c: No such file or directory"}}},
		{"error: new.c: already exists in working directory", []applyFailure{{File: "new.c", Msg: "new.c: already exists in working directory"}}},
		{"error: affected file 'l/x.c' is beyond a symbolic link\n", []applyFailure{{File: "l/x.c", Msg: "affected file 'l/x.c' is beyond a symbolic link"}}},
		{"error: corrupt patch at line 12\n", []applyFailure{{Msg: "corrupt patch at line 12"}}},
		{"fatal: unrecognized input\n", []applyFailure{{Msg: "unrecognized input"}}},
		{"error: patch failed: x.c:notanumber\n", []applyFailure{{Msg: "patch failed: x.c:notanumber"}}},
		{
			"error: while searching for:\nline 7\nerror: patch failed: a.c:7\n",
			[]applyFailure{{File: "a.c", Line: 7, Msg: "patch failed: a.c:7"}},
		},
	}
	for _, tt := range tests {
		got := parseApplyErrors(tt.stderr)
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("parseApplyErrors(%q):\ngot  %+v\nwant %+v", tt.stderr, got, tt.want)
		}
	}
}

func TestParseOffsets(t *testing.T) {
	stderr := "Checking patch src/a.c...\nHunk #1 succeeded at 17 (offset -3 lines).\nHunk #2 succeeded at 40 (offset 1 line).\n" +
		"Checking patch src/b.c...\nApplied patch src/a.c cleanly.\nApplied patch src/b.c cleanly.\n"
	want := []string{
		"src/a.c: hunk #1 succeeded at 17 (offset -3 lines)",
		"src/a.c: hunk #2 succeeded at 40 (offset 1 line)",
	}
	if got := parseOffsets(stderr); !reflect.DeepEqual(got, want) {
		t.Errorf("parseOffsets(%q):\ngot  %q\nwant %q", stderr, got, want)
	}
	if got := parseOffsets("Checking patch a...\nApplied patch a cleanly.\n"); got != nil {
		t.Errorf("parseOffsets of a clean apply = %q, want none", got)
	}
}

// tricky is a patch whose bodies hold lines that look like headers.
const tricky = `From 1234 Mon Sep 17 00:00:00 2001
Subject: [PATCH] tricky

---
 a.c | 3 ++-
diff --git a/a.c b/a.c
index 1111111..2222222 100644
--- a/a.c
+++ b/a.c
@@ -5 +5 @@ int x;
--- a/fake.c
+++ b/fake.c
@@ -20,4 +20,4 @@ int y;
 keep
-@@ -1,1 +1,1 @@
+changed
 keep

\ No newline at end of file
diff --git a/dir/b.c b/dir/b.c
new file mode 100644
--- /dev/null
+++ b/dir/b.c
@@ -0,0 +1,2 @@
+one
+two
--- "a/with space.c"	2026-01-01 00:00:00
+++ "b/with space.c"	2026-01-01 00:00:00
@@ -3,2 +3,3 @@
 x
+y
 z
`

func TestParseHunks(t *testing.T) {
	want := []hunk{
		{OldFile: "a.c", NewFile: "a.c", Number: 1, OldStart: 5, Header: "@@ -5 +5 @@ int x;"},
		{OldFile: "a.c", NewFile: "a.c", Number: 2, OldStart: 20, Header: "@@ -20,4 +20,4 @@ int y;"},
		{OldFile: "dir/b.c", NewFile: "dir/b.c", Number: 1, OldStart: 0, Header: "@@ -0,0 +1,2 @@"},
		{OldFile: "with space.c", NewFile: "with space.c", Number: 1, OldStart: 3, Header: "@@ -3,2 +3,3 @@"},
	}
	got := parseHunks([]byte(tricky))
	if !reflect.DeepEqual(got, want) {
		t.Errorf("parseHunks(tricky):\ngot  %+v\nwant %+v", got, want)
	}
	crlf := strings.ReplaceAll(tricky, "\n", "\r\n")
	if got := parseHunks([]byte(crlf)); !reflect.DeepEqual(got, want) {
		t.Errorf("parseHunks(tricky with CRLF):\ngot  %+v\nwant %+v", got, want)
	}
}

func TestFindHunk(t *testing.T) {
	hunks := parseHunks([]byte(tricky))
	tests := []struct {
		file       string
		line       int
		wantNumber int
		wantStart  int
		wantOK     bool
	}{
		{"a.c", 20, 2, 20, true},
		{"a.c", 5, 1, 5, true},
		{"a.c", 0, 1, 5, true},
		{"a.c", 25, 2, 20, true}, // nearest hunk before the line
		{"a.c", 2, 0, 0, false},
		{"dir/b.c", 0, 1, 0, true},
		{"with space.c", 3, 1, 3, true},
		{"fake.c", 20, 0, 0, false},
		{"none.c", 0, 0, 0, false},
	}
	for _, tt := range tests {
		h, ok := findHunk(hunks, tt.file, tt.line)
		if ok != tt.wantOK || h.Number != tt.wantNumber || h.OldStart != tt.wantStart {
			t.Errorf("findHunk(%q, %d) = #%d at %d, %v; want #%d at %d, %v",
				tt.file, tt.line, h.Number, h.OldStart, ok, tt.wantNumber, tt.wantStart, tt.wantOK)
		}
	}
}

func TestParseHunkHeader(t *testing.T) {
	tests := []struct {
		line        string
		old, oc, nc int
		ok          bool
	}{
		{"@@ -1,3 +1,4 @@", 1, 3, 4, true},
		{"@@ -7 +7 @@ func f()", 7, 1, 1, true},
		{"@@ -0,0 +1 @@", 0, 0, 1, true},
		{"@@ -a,3 +1,4 @@", 0, 0, 0, false},
		{"@@ -1,-3 +1,4 @@", 0, 0, 0, false},
		{"@@@ -1,1 -1,1 +1,1 @@@", 0, 0, 0, false}, // combined diff
		{"@@ -1,3", 0, 0, 0, false},
	}
	for _, tt := range tests {
		o, oc, nc, ok := parseHunkHeader(tt.line)
		if o != tt.old || oc != tt.oc || nc != tt.nc || ok != tt.ok {
			t.Errorf("parseHunkHeader(%q) = %d, %d, %d, %v; want %d, %d, %d, %v", tt.line, o, oc, nc, ok, tt.old, tt.oc, tt.nc, tt.ok)
		}
	}
}

func FuzzParseApplyErrors(f *testing.F) {
	f.Add("error: patch failed: src/llama.cpp:123\nerror: src/llama.cpp: patch does not apply\n")
	f.Add("error: src/x.c: No such file or directory\n")
	f.Add("error: affected file 'x' is beyond a symbolic link\n")
	f.Add("Checking patch a...\nHunk #1 succeeded at 17 (offset -3 lines).\n")
	f.Add("error: patch failed: :\n")
	f.Fuzz(func(t *testing.T, stderr string) {
		for _, fl := range parseApplyErrors(stderr) {
			if fl.Line < 0 {
				t.Errorf("parseApplyErrors(%q): negative line %d", stderr, fl.Line)
			}
			if fl.File != "" && !strings.Contains(fl.Msg, fl.File) {
				t.Errorf("parseApplyErrors(%q): file %q not in its message %q", stderr, fl.File, fl.Msg)
			}
			if !strings.Contains(stderr, fl.Msg) {
				t.Errorf("parseApplyErrors(%q): message %q not in the input", stderr, fl.Msg)
			}
		}
		for _, o := range parseOffsets(stderr) {
			if !strings.Contains(o, ": hunk #") {
				t.Errorf("parseOffsets(%q): %q lacks \": hunk #\"", stderr, o)
			}
		}
	})
}

func FuzzParseHunks(f *testing.F) {
	f.Add([]byte(tricky))
	f.Add([]byte("--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n"))
	f.Add([]byte("@@ -99999999999999999999,1 +1 @@\n"))
	f.Fuzz(func(t *testing.T, patch []byte) {
		hunks := parseHunks(patch)
		last := map[[2]string]int{}
		for _, h := range hunks {
			if h.Number < 1 || h.OldStart < 0 {
				t.Fatalf("parseHunks(%q): bad hunk %+v", patch, h)
			}
			if !strings.HasPrefix(h.Header, "@@ ") {
				t.Fatalf("parseHunks(%q): header %q", patch, h.Header)
			}
			key := [2]string{h.OldFile, h.NewFile}
			if n, ok := last[key]; ok && h.Number != n+1 && h.Number != 1 {
				t.Fatalf("parseHunks(%q): hunk numbers jump from %d to %d", patch, n, h.Number)
			}
			last[key] = h.Number
			if got, ok := findHunk(hunks, h.NewFile, h.OldStart); h.NewFile != "" && !ok {
				t.Fatalf("parseHunks(%q): findHunk(%q, %d) found nothing, got %+v", patch, h.NewFile, h.OldStart, got)
			}
		}
	})
}
