package hf_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/rigorbench/rigor/internal/hf"
)

func TestMatchFiles(t *testing.T) {
	var files []hf.FileInfo
	for _, p := range []string{
		"README.md",
		"config.json",
		"UD-IQ4_XS/MiniMax-M2.7-UD-IQ4_XS-00001-of-00004.gguf",
		"UD-IQ4_XS/MiniMax-M2.7-UD-IQ4_XS-00002-of-00004.gguf",
		"UD-IQ4_XS/MiniMax-M2.7-UD-IQ4_XS-00003-of-00004.gguf",
		"UD-IQ4_XS/MiniMax-M2.7-UD-IQ4_XS-00004-of-00004.gguf",
		"Q8_0/MiniMax-M2.7-Q8_0.gguf",
		"a/b/c/deep.gguf",
		"top.gguf",
	} {
		files = append(files, hf.FileInfo{Path: p})
	}
	tests := []struct {
		globs []string
		want  []string
		err   string
	}{
		{nil, []string{"README.md", "config.json", "UD-IQ4_XS/MiniMax-M2.7-UD-IQ4_XS-00001-of-00004.gguf", "UD-IQ4_XS/MiniMax-M2.7-UD-IQ4_XS-00002-of-00004.gguf", "UD-IQ4_XS/MiniMax-M2.7-UD-IQ4_XS-00003-of-00004.gguf", "UD-IQ4_XS/MiniMax-M2.7-UD-IQ4_XS-00004-of-00004.gguf", "Q8_0/MiniMax-M2.7-Q8_0.gguf", "a/b/c/deep.gguf", "top.gguf"}, ""},
		{[]string{"UD-IQ4_XS/MiniMax-M2.7-UD-IQ4_XS-*-of-00004.gguf"}, []string{"UD-IQ4_XS/MiniMax-M2.7-UD-IQ4_XS-00001-of-00004.gguf", "UD-IQ4_XS/MiniMax-M2.7-UD-IQ4_XS-00002-of-00004.gguf", "UD-IQ4_XS/MiniMax-M2.7-UD-IQ4_XS-00003-of-00004.gguf", "UD-IQ4_XS/MiniMax-M2.7-UD-IQ4_XS-00004-of-00004.gguf"}, ""},
		{[]string{"*.gguf"}, []string{"top.gguf"}, ""},
		{[]string{"**/*.gguf"}, []string{"UD-IQ4_XS/MiniMax-M2.7-UD-IQ4_XS-00001-of-00004.gguf", "UD-IQ4_XS/MiniMax-M2.7-UD-IQ4_XS-00002-of-00004.gguf", "UD-IQ4_XS/MiniMax-M2.7-UD-IQ4_XS-00003-of-00004.gguf", "UD-IQ4_XS/MiniMax-M2.7-UD-IQ4_XS-00004-of-00004.gguf", "Q8_0/MiniMax-M2.7-Q8_0.gguf", "a/b/c/deep.gguf", "top.gguf"}, ""},
		{[]string{"a/**/deep.gguf"}, []string{"a/b/c/deep.gguf"}, ""},
		{[]string{"a/**"}, []string{"a/b/c/deep.gguf"}, ""},
		{[]string{"a/*/deep.gguf"}, nil, `file glob "a/*/deep.gguf" matches none of the 9 files`},
		{[]string{"*-0000[12]-of-*.gguf", "UD-IQ4_XS/*-0000[12]-of-*.gguf", "config.json"}, nil, `file glob "*-0000[12]-of-*.gguf" matches none`},
		{[]string{"UD-IQ4_XS/*-0000[12]-of-*.gguf", "config.json", "config.json"}, []string{"config.json", "UD-IQ4_XS/MiniMax-M2.7-UD-IQ4_XS-00001-of-00004.gguf", "UD-IQ4_XS/MiniMax-M2.7-UD-IQ4_XS-00002-of-00004.gguf"}, ""},
		{[]string{"Q8_0/*.gguf", "nope/*", "nada"}, nil, `file globs "nope/*", "nada" match none`},
		{[]string{"[.gguf"}, nil, `file glob "[.gguf": syntax error in pattern`},
		{[]string{""}, nil, "empty file glob"},
	}
	for _, tt := range tests {
		got, err := hf.MatchFiles(files, tt.globs)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("MatchFiles(%q) error = %v, want %q", tt.globs, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("MatchFiles(%q): %v", tt.globs, err)
			continue
		}
		var paths []string
		for _, f := range got {
			paths = append(paths, f.Path)
		}
		if !reflect.DeepEqual(paths, tt.want) {
			t.Errorf("MatchFiles(%q) = %q, want %q", tt.globs, paths, tt.want)
		}
	}
}
