package gguf

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// fixtureFacts are the facts of the tiny-llama fixtures, from the shared
// fixtures README and llama-bench's report of the F16 file
// (model_n_params 1574144, model_size 3150848).
var fixtureFacts = []struct {
	file     string
	fileType int64
	ftName   string
	mix      map[string]QuantShare
}{
	{"tiny-llama.head.gguf", 1, "MOSTLY_F16", map[string]QuantShare{
		"F32": {5, 5 * 256 * 4},
		"F16": {16, (1574144 - 5*256) * 2},
	}},
	{"tiny-llama-f32.head.gguf", 0, "ALL_F32", map[string]QuantShare{
		"F32": {21, 1574144 * 4},
	}},
	{"tiny-llama-q8_0.head.gguf", 7, "MOSTLY_Q8_0", map[string]QuantShare{
		"F32":  {5, 5 * 256 * 4},
		"Q8_0": {16, (1574144 - 5*256) / 32 * 34},
	}},
}

func readTestdata(t testing.TB, name string, opts ReadOptions) *File {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	f, err := ReadWith(bytes.NewReader(data), opts)
	if err != nil {
		t.Fatalf("reading %s: %v", name, err)
	}
	return f
}

func TestRead_fixtures(t *testing.T) {
	for _, tc := range fixtureFacts {
		t.Run(tc.file, func(t *testing.T) {
			f := readTestdata(t, tc.file, ReadOptions{})
			if f.Version != 3 || f.BigEndian || f.Alignment != 32 {
				t.Errorf("version %d, big-endian %v, alignment %d; want 3, false, 32", f.Version, f.BigEndian, f.Alignment)
			}
			if f.DataOffset != 12448 {
				t.Errorf("data offset: got %d, want 12448", f.DataOffset)
			}
			if len(f.KVs) != 22 || len(f.Tensors) != 21 {
				t.Errorf("got %d pairs and %d tensors, want 22 and 21", len(f.KVs), len(f.Tensors))
			}
			got := f.Facts()
			want := Facts{
				Architecture:    "llama",
				Name:            "tiny-llama-random",
				ParameterCount:  1574144,
				FileType:        tc.fileType,
				FileTypeName:    tc.ftName,
				QuantMix:        tc.mix,
				ContextLength:   2048,
				BlockCount:      2,
				EmbeddingLength: 256,
				HeadCount:       4,
				HeadCountKV:     4,
				VocabSize:       512,
				TokenCount:      512,
			}
			// The digest of the tokens, from the values themselves.
			whole := readTestdata(t, tc.file, ReadOptions{MaxArrayValues: 1024})
			tkv, _ := whole.KV("tokenizer.ggml.tokens")
			var toks []string
			for _, v := range tkv.Value.(Array).Values {
				toks = append(toks, v.(string))
			}
			want.TokensSHA256 = stringsDigest(toks...)
			for _, s := range tc.mix {
				want.TensorDataBytes += s.Bytes
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("facts of %s:\ngot  %+v\nwant %+v", tc.file, got, want)
			}
			// The tensors are packed: the last one ends where the data does.
			last := f.Tensors[len(f.Tensors)-1]
			n, _ := last.Bytes()
			if end := last.Offset + n; end != got.TensorDataBytes {
				t.Errorf("last tensor ends at %d, want the sum of sizes %d", end, got.TensorDataBytes)
			}
			// The vocabulary is summarized by default, and kept on demand.
			kv, _ := f.KV("tokenizer.ggml.tokens")
			if a := kv.Value.(Array); !a.Summarized() || a.Len != 512 || a.Elem != TypeString {
				t.Errorf("tokens: got %+v, want a summarized array of 512 strings", a)
			}
			full := readTestdata(t, tc.file, ReadOptions{MaxArrayValues: 1024})
			kv, _ = full.KV("tokenizer.ggml.tokens")
			vals := kv.Value.(Array).Values
			if len(vals) != 512 || vals[0] != "<unk>" || vals[3] != "<0x00>" || vals[258] != "<0xFF>" {
				t.Errorf("tokens kept: got %d values starting %v", len(vals), vals[:min(4, len(vals))])
			}
		})
	}
}

func TestReadFile_fullFixtures(t *testing.T) {
	dir := os.Getenv("RIGOR_FIXTURES_MODELS")
	if dir == "" {
		t.Skip("RIGOR_FIXTURES_MODELS not set")
	}
	for _, tc := range fixtureFacts {
		name := strings.TrimSuffix(tc.file, ".head.gguf") + ".gguf"
		f, err := ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		fa := f.Facts()
		st, _ := os.Stat(filepath.Join(dir, name))
		if got, want := f.DataOffset+fa.TensorDataBytes, uint64(st.Size()); got != want {
			t.Errorf("%s: data offset + tensor bytes = %d, want the file size %d", name, got, want)
		}
		if fa.ParameterCount != 1574144 {
			t.Errorf("%s: parameters: got %d, want 1574144", name, fa.ParameterCount)
		}
	}
}

func TestFacts_Map(t *testing.T) {
	f := readTestdata(t, "tiny-llama-q8_0.head.gguf", ReadOptions{})
	m := f.Facts().Map()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	var back map[string]any
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	wantKeys := []string{"architecture", "blockCount", "contextLength", "embeddingLength", "fileType",
		"fileTypeName", "headCount", "headCountKV", "name", "parameterCount", "quantMix",
		"tensorDataBytes", "unknownTypes", "vocabSize", "tokenCount", "tokensSha256"}
	var keys []string
	for k := range back {
		keys = append(keys, k)
	}
	if !sameSet(keys, wantKeys) {
		t.Errorf("keys: got %v, want %v", keys, wantKeys)
	}
	if back["fileTypeName"] != "MOSTLY_Q8_0" || back["parameterCount"] != float64(1574144) {
		t.Errorf("got %s", b)
	}
	q8 := back["quantMix"].(map[string]any)["Q8_0"].(map[string]any)
	if q8["tensors"] != float64(16) {
		t.Errorf("quantMix.Q8_0: got %v, want 16 tensors", q8)
	}
	// An empty file still has every key.
	if got := len((&File{}).Facts().Map()); got != len(wantKeys) {
		t.Errorf("facts of an empty header: got %d keys, want %d", got, len(wantKeys))
	}
	if got := f.Facts().QuantTypes(); !reflect.DeepEqual(got, []string{"Q8_0", "F32"}) {
		t.Errorf("QuantTypes: got %v, want [Q8_0 F32]", got)
	}
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	m := map[string]bool{}
	for _, s := range a {
		m[s] = true
	}
	for _, s := range b {
		if !m[s] {
			return false
		}
	}
	return true
}

func TestGGMLType_table(t *testing.T) {
	// Bits per weight of well-known types (ggml's documentation).
	bpw := map[GGMLType]float64{
		TypeF32: 32, TypeF16: 16, TypeBF16: 16, TypeQ4_0: 4.5, TypeQ4_1: 5, TypeQ5_0: 5.5,
		TypeQ5_1: 6, TypeQ8_0: 8.5, TypeQ2_K: 2.625, TypeQ3_K: 3.4375, TypeQ4_K: 4.5,
		TypeQ5_K: 5.5, TypeQ6_K: 6.5625, TypeIQ2_XXS: 2.0625, TypeIQ2_XS: 2.3125,
		TypeIQ2_S: 2.5625, TypeIQ3_XXS: 3.0625, TypeIQ3_S: 3.4375, TypeIQ1_S: 1.5625,
		TypeIQ1_M: 1.75, TypeIQ4_NL: 4.5, TypeIQ4_XS: 4.25, TypeTQ1_0: 1.6875, TypeTQ2_0: 2.0625,
		TypeMXFP4: 4.25, TypeI8: 8, TypeI16: 16, TypeI32: 32, TypeI64: 64, TypeF64: 64,
	}
	for typ, want := range bpw {
		info, ok := typ.Info()
		if !ok {
			t.Errorf("%v: unknown", typ)
			continue
		}
		if got := float64(info.TypeSize*8) / float64(info.BlockSize); got != want {
			t.Errorf("%s: got %v bits per weight, want %v", info.Name, got, want)
		}
	}
	if _, ok := GGMLType(4).Info(); ok {
		t.Errorf("type 4 (removed Q4_2) should be unknown")
	}
	if got := GGMLType(200).String(); got != "TYPE_200" {
		t.Errorf("GGMLType(200).String() = %q, want TYPE_200", got)
	}
	if n, ok := TypeQ8_0.RowBytes(33); ok {
		t.Errorf("RowBytes(Q8_0, 33) = %d, true; want a failure (not whole blocks)", n)
	}
	if got := FileTypeName(15); got != "MOSTLY_Q4_K_M" {
		t.Errorf("FileTypeName(15) = %q, want MOSTLY_Q4_K_M", got)
	}
	if got := FileTypeName(999); got != "UNKNOWN_999" {
		t.Errorf("FileTypeName(999) = %q, want UNKNOWN_999", got)
	}
}

// builder encodes GGUF headers by hand, for inputs the writer never makes.
type builder struct {
	bytes.Buffer
	order binary.ByteOrder
}

func newBuilder(order binary.ByteOrder, version uint32, tensors, kvs uint64) *builder {
	b := &builder{order: order}
	b.WriteString(Magic)
	b.u32(version)
	b.u64(tensors)
	b.u64(kvs)
	return b
}

func (b *builder) u32(v uint32) *builder { binary.Write(b, b.order, v); return b }
func (b *builder) u64(v uint64) *builder { binary.Write(b, b.order, v); return b }
func (b *builder) str(s string) *builder { b.u64(uint64(len(s))); b.WriteString(s); return b }

func (b *builder) tensor(name string, typ GGMLType, offset uint64, dims ...uint64) *builder {
	b.str(name)
	b.u32(uint32(len(dims)))
	for _, d := range dims {
		b.u64(d)
	}
	b.u32(uint32(typ))
	return b.u64(offset)
}

// allTypes builds a header with one pair of every value type, including
// nested arrays.
func allTypes(order binary.ByteOrder) []byte {
	b := newBuilder(order, 3, 1, 14)
	b.str("u8").u32(uint32(TypeUint8)).WriteByte(200)
	b.str("i8").u32(uint32(TypeInt8)).WriteByte(0xff)
	b.str("u16").u32(uint32(TypeUint16))
	binary.Write(b, order, uint16(65000))
	b.str("i16").u32(uint32(TypeInt16))
	binary.Write(b, order, int16(-300))
	b.str("u32").u32(uint32(TypeUint32)).u32(4000000000)
	b.str("i32").u32(uint32(TypeInt32)).u32(uint32(0xffffffff))
	b.str("f32").u32(uint32(TypeFloat32)).u32(math.Float32bits(1.5))
	b.str("bool").u32(uint32(TypeBool)).WriteByte(1)
	b.str("str").u32(uint32(TypeString)).str("héllo")
	b.str("u64").u32(uint32(TypeUint64)).u64(1 << 40)
	b.str("i64").u32(uint32(TypeInt64)).u64(uint64(0xffffffffffffffff))
	b.str("f64").u32(uint32(TypeFloat64)).u64(math.Float64bits(-2.25))
	b.str("strs").u32(uint32(TypeArray)).u32(uint32(TypeString)).u64(2).str("a").str("bc")
	b.str("nested").u32(uint32(TypeArray)).u32(uint32(TypeArray)).u64(2)
	b.u32(uint32(TypeUint32)).u64(1).u32(7)
	b.u32(uint32(TypeInt16)).u64(0)
	b.tensor("w", TypeQ4_0, 0, 64, 2)
	return b.Bytes()
}

func TestRead_valueTypes(t *testing.T) {
	want := map[string]any{
		"u8": uint8(200), "i8": int8(-1), "u16": uint16(65000), "i16": int16(-300),
		"u32": uint32(4000000000), "i32": int32(-1), "f32": float32(1.5), "bool": true,
		"str": "héllo", "u64": uint64(1 << 40), "i64": int64(-1), "f64": float64(-2.25),
		"strs": Array{Elem: TypeString, Len: 2, Values: []any{"a", "bc"}, SHA256: stringsDigest("a", "bc")},
		"nested": Array{Elem: TypeArray, Len: 2, Values: []any{
			Array{Elem: TypeUint32, Len: 1, Values: []any{uint32(7)}},
			Array{Elem: TypeInt16, Len: 0, Values: []any{}},
		}},
	}
	for _, order := range []binary.ByteOrder{binary.LittleEndian, binary.BigEndian} {
		f, err := Read(bytes.NewReader(allTypes(order)))
		if err != nil {
			t.Fatalf("%v: %v", order, err)
		}
		if f.BigEndian != (order == binary.BigEndian) {
			t.Errorf("%v: BigEndian = %v", order, f.BigEndian)
		}
		for _, kv := range f.KVs {
			if !reflect.DeepEqual(kv.Value, want[kv.Key]) {
				t.Errorf("%v: %s: got %#v, want %#v", order, kv.Key, kv.Value, want[kv.Key])
			}
		}
		if len(f.KVs) != len(want) {
			t.Errorf("%v: got %d pairs, want %d", order, len(f.KVs), len(want))
		}
		tt := f.Tensors[0]
		if tt.Name != "w" || !reflect.DeepEqual(tt.Dims, []uint64{64, 2}) || tt.Type != TypeQ4_0 {
			t.Errorf("%v: tensor: got %+v", order, tt)
		}
		if n, _ := tt.Bytes(); n != 4*18 {
			t.Errorf("%v: tensor bytes: got %d, want 72", order, n)
		}
		if u, ok := f.Uint("i8"); ok {
			t.Errorf("Uint(i8 = -1) = %d, true; want false", u)
		}
		if u, ok := f.Uint("u16"); !ok || u != 65000 {
			t.Errorf("Uint(u16) = %d, %v; want 65000, true", u, ok)
		}
	}
}

func TestRead_errors(t *testing.T) {
	le := binary.LittleEndian
	for _, tc := range []struct {
		name string
		in   []byte
		size bool // pass the input size, as ReadFile does
		want string
	}{
		{"empty", nil, false, "not a gguf file"},
		{"magic", []byte("GGML\x03\x00\x00\x00"), false, `not a gguf file: magic "GGML"`},
		{"v1", newBuilder(le, 1, 0, 0).Bytes(), false, "version 1 is not supported"},
		{"v9", newBuilder(le, 9, 0, 0).Bytes(), false, "unsupported gguf version 9"},
		{"truncated counts", []byte("GGUF\x03\x00\x00\x00\x01"), false, "truncated file"},
		{"absurd tensor count", newBuilder(le, 3, 1<<62, 0).Bytes(), false, "tensor count 4611686018427387904 exceeds the limit"},
		{"absurd kv count", newBuilder(le, 3, 0, math.MaxUint64).Bytes(), false, "metadata count 18446744073709551615 exceeds the limit"},
		{"counts vs size", newBuilder(le, 3, 1000, 1000).Bytes(), true, "cannot fit in the 0 bytes left"},
		{"huge key", newBuilder(le, 3, 0, 1).u64(1 << 40).Bytes(), false, "key length 1099511627776 exceeds the limit 65536"},
		{"huge string", newBuilder(le, 3, 0, 1).str("k").u32(uint32(TypeString)).u64(1 << 60).Bytes(), false,
			`metadata pair 0: "k": offset 37: string length 1152921504606846976 exceeds the limit 16777216`},
		{"string past end", newBuilder(le, 3, 0, 1).str("k").u32(uint32(TypeString)).u64(1000).str("x").Bytes(), true,
			"string length 1000 exceeds the 9 bytes left in file"},
		{"truncated string", newBuilder(le, 3, 0, 1).str("k").u32(uint32(TypeString)).u64(1 << 20).Bytes(), false, "truncated file"},
		{"unknown type", newBuilder(le, 3, 0, 1).str("k").u32(13).Bytes(), false, "unknown value type 13"},
		{"absurd array", newBuilder(le, 3, 0, 1).str("k").u32(uint32(TypeArray)).u32(uint32(TypeUint64)).u64(1 << 50).Bytes(), true,
			"array of 1125899906842624 uint64 cannot fit in the 0 bytes left"},
		{"absurd array unsized", newBuilder(le, 3, 0, 1).str("k").u32(uint32(TypeArray)).u32(uint32(TypeUint64)).u64(1 << 61).Bytes(), false,
			"array length 2305843009213693952 is too large"},
		{"truncated array", newBuilder(le, 3, 0, 1).str("k").u32(uint32(TypeArray)).u32(uint32(TypeUint32)).u64(1 << 40).Bytes(), false,
			"truncated file"},
		{"array of unknown", newBuilder(le, 3, 0, 1).str("k").u32(uint32(TypeArray)).u32(99).u64(1).Bytes(), false,
			"unknown array element type 99"},
		{"deep arrays", deepArrays(20), false, "arrays nested deeper than 8"},
		{"bad alignment", newBuilder(le, 3, 0, 1).str("general.alignment").u32(uint32(TypeUint32)).u32(48).Bytes(), false,
			"general.alignment: want a uint32 power of two, got uint32 48"},
		{"five dims", newBuilder(le, 3, 1, 0).tensor("t", TypeF32, 0, 1, 1, 1, 1, 1).Bytes(), false, "5 dimensions, at most 4"},
		{"dims overflow", newBuilder(le, 3, 1, 0).tensor("t", TypeF32, 0, 1<<32, 1<<32).Bytes(), false, "overflow int64"},
		{"partial block", newBuilder(le, 3, 1, 0).tensor("t", TypeQ8_0, 0, 33).Bytes(), false,
			"first dimension 33 is not a multiple of the Q8_0 block size 32"},
		{"misaligned offset", newBuilder(le, 3, 1, 0).tensor("t", TypeF32, 4, 8).Bytes(), false,
			`tensor 0 "t": offset 4 is not a multiple of the alignment 32`},
		{"duplicate tensor", newBuilder(le, 3, 2, 0).tensor("t", TypeF32, 0, 8).tensor("t", TypeF32, 32, 8).Bytes(), false,
			`tensor 1: duplicate name "t"`},
		{"tensor past end", newBuilder(le, 3, 1, 0).tensor("t", TypeF32, 0, 8).Bytes(), true,
			`tensor 0 "t": data [0, +32) at file offset 64 extends past the end of the file (57 bytes)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := ReadOptions{}
			if tc.size {
				opts.Size = int64(len(tc.in))
			}
			f, err := ReadWith(bytes.NewReader(tc.in), opts)
			if err == nil {
				t.Fatalf("ReadWith(%q) = %+v, nil; want error %q", tc.in, f, tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("ReadWith(%q): got error %q, want it to contain %q", tc.in, err, tc.want)
			}
		})
	}

	dup := newBuilder(le, 3, 0, 2)
	dup.str("k").u32(uint32(TypeUint8)).WriteByte(1)
	dup.str("k").u32(uint32(TypeUint8)).WriteByte(2)
	if _, err := Read(bytes.NewReader(dup.Bytes())); err == nil || !strings.Contains(err.Error(), `metadata pair 1: duplicate key "k"`) {
		t.Errorf("duplicate key: got %v", err)
	}
	if _, err := Read(strings.NewReader("GGML")); !errors.Is(err, ErrNotGGUF) {
		t.Errorf("Read(GGML): got %v, want ErrNotGGUF", err)
	}
}

func deepArrays(depth int) []byte {
	b := newBuilder(binary.LittleEndian, 3, 0, 1)
	b.str("k").u32(uint32(TypeArray))
	for i := 0; i < depth; i++ {
		b.u32(uint32(TypeArray)).u64(1)
	}
	b.u32(uint32(TypeUint8)).u64(0)
	return b.Bytes()
}

// Every proper prefix of a header is an error, never a panic.
func TestRead_truncated(t *testing.T) {
	data, err := os.ReadFile("testdata/tiny-llama.head.gguf")
	if err != nil {
		t.Fatal(err)
	}
	// The tensor table ends 12 bytes before the data (alignment padding).
	end := len(data)
	for end > 0 && data[end-1] == 0 {
		end--
	}
	// Every prefix through the first pairs, then a sample of the rest
	// (all of them would take minutes under the race detector).
	for n := 0; n < end-8; n += 1 + n/1024*96 {
		if _, err := Read(bytes.NewReader(data[:n])); err == nil {
			t.Fatalf("Read(first %d of %d bytes) succeeded", n, len(data))
		}
	}
}

// A summarized array is skipped without being kept, whatever its element
// type.
func TestRead_summarized(t *testing.T) {
	b := newBuilder(binary.LittleEndian, 3, 0, 3)
	b.str("strs").u32(uint32(TypeArray)).u32(uint32(TypeString)).u64(3).str("a").str("b").str("c")
	b.str("nums").u32(uint32(TypeArray)).u32(uint32(TypeUint16)).u64(3)
	binary.Write(b, binary.LittleEndian, []uint16{1, 2, 3})
	b.str("arrs").u32(uint32(TypeArray)).u32(uint32(TypeArray)).u64(3)
	for i := 0; i < 3; i++ {
		b.u32(uint32(TypeString)).u64(1).str("x")
	}
	f, err := ReadWith(bytes.NewReader(b.Bytes()), ReadOptions{MaxArrayValues: 2})
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range f.KVs {
		a := kv.Value.(Array)
		if !a.Summarized() || a.Len != 3 {
			t.Errorf("%s: got %+v, want a summarized array of 3", kv.Key, a)
		}
	}
}

// A tensor type this package does not know (a newer ggml, a fork) is
// counted, not fatal.
func TestFacts_unknownType(t *testing.T) {
	b := newBuilder(binary.LittleEndian, 2, 2, 1)
	b.str("general.architecture").u32(uint32(TypeString)).str("ik")
	b.tensor("a", GGMLType(200), 0, 256, 4)
	b.tensor("b", TypeF16, 4096, 256)
	f, err := ReadWith(bytes.NewReader(b.Bytes()), ReadOptions{Size: int64(b.Len()) + 8192})
	if err != nil {
		t.Fatal(err)
	}
	fa := f.Facts()
	want := map[string]QuantShare{"TYPE_200": {1, 0}, "F16": {1, 512}}
	if fa.UnknownTypes != 1 || fa.ParameterCount != 1280 || fa.TensorDataBytes != 512 || !reflect.DeepEqual(fa.QuantMix, want) {
		t.Errorf("facts: got %+v, want 1 unknown, 1280 parameters, 512 bytes, mix %v", fa, want)
	}
	if f.Version != 2 || fa.FileType != -1 || fa.FileTypeName != "" {
		t.Errorf("version %d, file type %d %q; want 2, -1, \"\"", f.Version, fa.FileType, fa.FileTypeName)
	}
}

// A partial download is caught by ReadFile: the last tensor ends past the
// end of the file.
func TestReadFile_truncatedModel(t *testing.T) {
	data := fixtureBytes(t, "q8_0")
	path := filepath.Join(t.TempDir(), "partial.gguf")
	if err := os.WriteFile(path, data[:len(data)-1], 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := ReadFile(path)
	if err == nil || !strings.Contains(err.Error(), `tensor 20 "blk.1.ffn_down.weight"`) || !strings.Contains(err.Error(), "extends past the end of the file") {
		t.Errorf("ReadFile(file missing its last byte): got %v, want the last tensor past the end", err)
	}
	if _, err := ReadFile(filepath.Join(t.TempDir(), "missing.gguf")); err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("ReadFile(missing): got %v, want a not-exist error", err)
	}
}

// TestFacts_tokens: the token list's count and digest are read whether
// the values are kept or skipped, equal for the same vocabulary and
// differ for another (the vocabulary check of quality.measure).
func TestFacts_tokens(t *testing.T) {
	write := func(vocab int, typ string) []byte {
		var b bytes.Buffer
		if err := WriteSynthetic(&b, SyntheticSpec{Arch: "llama", Layers: 1, Embd: 32, Heads: 1, KVHeads: 1, FF: 32, Vocab: vocab, Ctx: 64, Type: typ}); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	facts := func(b []byte, keep int) Facts {
		f, err := ReadWith(bytes.NewReader(b), ReadOptions{Size: int64(len(b)), MaxArrayValues: keep})
		if err != nil {
			t.Fatal(err)
		}
		return f.Facts()
	}
	f16 := write(300, "f16")
	skipped, kept := facts(f16, 1), facts(f16, 1024)
	if skipped.TokenCount != 300 || len(skipped.TokensSHA256) != 64 {
		t.Fatalf("tokens: got %d, %q; want 300 and a sha256", skipped.TokenCount, skipped.TokensSHA256)
	}
	if kept.TokensSHA256 != skipped.TokensSHA256 {
		t.Errorf("the digest depends on whether the values are kept: %s against %s", kept.TokensSHA256, skipped.TokensSHA256)
	}
	// The digest is of the strings: length-prefixed, in order.
	var toks []string
	for i := 0; i < 300; i++ {
		toks = append(toks, tokenText(i))
	}
	if want := stringsDigest(toks...); kept.TokensSHA256 != want {
		t.Errorf("digest %s, want %s", kept.TokensSHA256, want)
	}
	if q := facts(write(300, "q8_0"), 0); q.TokensSHA256 != kept.TokensSHA256 {
		t.Errorf("the same vocabulary in another weight type has another digest")
	}
	if o := facts(write(301, "f16"), 0); o.TokenCount != 301 || o.TokensSHA256 == kept.TokensSHA256 {
		t.Errorf("another vocabulary: got %d tokens, digest %s", o.TokenCount, o.TokensSHA256)
	}
	// Only the token list is summed: a file without one has none.
	if fa := (&File{}).Facts(); fa.TokenCount != 0 || fa.TokensSHA256 != "" {
		t.Errorf("no token list: got %d, %q", fa.TokenCount, fa.TokensSHA256)
	}
}

// stringsDigest is the sha256 of strings as [Array.SHA256] defines it:
// each string's length (uint64, little-endian, whatever the file's byte
// order) and bytes, in order.
func stringsDigest(ss ...string) string {
	h := sha256.New()
	for _, s := range ss {
		binary.Write(h, binary.LittleEndian, uint64(len(s)))
		h.Write([]byte(s))
	}
	return hex.EncodeToString(h.Sum(nil))
}
