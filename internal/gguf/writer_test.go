package gguf

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// fixtureSpec is the shape of the tiny-llama fixtures.
func fixtureSpec(typ string) SyntheticSpec {
	return SyntheticSpec{Arch: "llama", Layers: 2, Embd: 256, Heads: 4, KVHeads: 4, FF: 512,
		Vocab: 512, Ctx: 2048, Type: typ, Seed: 0}
}

func writeSpec(t testing.TB, spec SyntheticSpec) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteSynthetic(&buf, spec); err != nil {
		t.Fatalf("WriteSynthetic(%+v): %v", spec, err)
	}
	return buf.Bytes()
}

var keepAll = ReadOptions{MaxArrayValues: 1 << 22}

var fixtureShaped sync.Map // type → []byte

// fixtureBytes returns the synthetic model of the fixtures' shape, seed 0,
// written once per test binary.
func fixtureBytes(t testing.TB, typ string) []byte {
	if b, ok := fixtureShaped.Load(typ); ok {
		return b.([]byte)
	}
	b := writeSpec(t, fixtureSpec(typ))
	fixtureShaped.Store(typ, b)
	return b
}

func TestWriteSynthetic_matchesFixtures(t *testing.T) {
	for typ, fixture := range map[string]string{
		"f16":  "tiny-llama.head.gguf",
		"f32":  "tiny-llama-f32.head.gguf",
		"q8_0": "tiny-llama-q8_0.head.gguf",
	} {
		t.Run(typ, func(t *testing.T) {
			want := readTestdata(t, fixture, keepAll)
			data := fixtureBytes(t, typ)
			got, err := ReadWith(bytes.NewReader(data), ReadOptions{MaxArrayValues: keepAll.MaxArrayValues, Size: int64(len(data))})
			if err != nil {
				t.Fatal(err)
			}
			if got.Version != want.Version || got.Alignment != want.Alignment {
				t.Errorf("version/alignment: got %d/%d, want %d/%d", got.Version, got.Alignment, want.Version, want.Alignment)
			}
			if len(got.KVs) != len(want.KVs) {
				t.Fatalf("got %d pairs, want %d", len(got.KVs), len(want.KVs))
			}
			for i, w := range want.KVs {
				g := got.KVs[i]
				if g.Key != w.Key || g.Type != w.Type {
					t.Errorf("pair %d: got %s %s, want %s %s", i, g.Key, g.Type, w.Key, w.Type)
					continue
				}
				if w.Key == "general.name" {
					continue // names differ by design
				}
				if !reflect.DeepEqual(g.Value, w.Value) {
					t.Errorf("pair %d %s: got %.200v, want %.200v", i, w.Key, g.Value, w.Value)
				}
			}
			if !reflect.DeepEqual(got.Tensors, want.Tensors) {
				t.Errorf("tensor table differs:\ngot  %+v\nwant %+v", got.Tensors, want.Tensors)
			}
			gf, wf := got.Facts(), want.Facts()
			gf.Name, wf.Name = "", ""
			if !reflect.DeepEqual(gf, wf) {
				t.Errorf("facts:\ngot  %+v\nwant %+v", gf, wf)
			}
			// The file ends right after the last tensor, as the fixture does.
			if size := got.DataOffset + gf.TensorDataBytes; size != uint64(len(data)) {
				t.Errorf("data offset + tensor bytes = %d, want the file size %d", size, len(data))
			}
			if n, err := fixtureSpec(typ).Size(); err != nil || n != int64(len(data)) {
				t.Errorf("Size() = %d, %v; want %d", n, err, len(data))
			}
		})
	}
}

// goldenSHA256 pins the bytes of the fixture-shaped synthetic models.
// Lockfiles pin these hashes: if this test fails, the generator changed and
// every locked synthetic model would be reported as drifted. Do not update
// the hashes; restore the old output instead (or version the generator).
var goldenSHA256 = map[string]string{
	"f32":  "4d35f07be097b5a803885844d06b8c4907ad799028fa6d11890f90d85e7361f4",
	"f16":  "de5afa6c085e09821865a089ec4ff2d1a0929fb69ff62a3ed7f5ec0a732cc484",
	"q8_0": "822b1f3519f55efab8384f052cef55c1c053cfbc8f8125ef2ca6ddaf177bcc52",
}

func TestWriteSynthetic_deterministic(t *testing.T) {
	for _, typ := range []string{"f32", "f16", "q8_0"} {
		// The golden hash also proves that writes agree across runs,
		// machines and Go versions.
		spec := fixtureSpec(typ)
		a := sha256.Sum256(fixtureBytes(t, typ))
		if got, want := hex.EncodeToString(a[:]), goldenSHA256[typ]; got != want {
			t.Errorf("%s: sha256 %s, want %s", typ, got, want)
		}
		spec.Seed = 1
		if c := sha256.Sum256(writeSpec(t, spec)); c == a {
			t.Errorf("%s: seeds 0 and 1 give the same bytes", typ)
		}
	}
}

func TestSyntheticSpec_Validate(t *testing.T) {
	ok := fixtureSpec("q8_0")
	if err := ok.Validate(); err != nil {
		t.Fatalf("Validate(%+v) = %v, want nil", ok, err)
	}
	for _, tc := range []struct {
		edit   func(*SyntheticSpec)
		fields []string
		msg    string
	}{
		{func(s *SyntheticSpec) { s.Arch = "qwen2" }, []string{"arch"}, `"qwen2" is not supported`},
		{func(s *SyntheticSpec) { s.Layers = 0 }, []string{"layers"}, "must be positive, got 0"},
		{func(s *SyntheticSpec) { s.Embd = -256 }, []string{"embd"}, "must be positive"},
		{func(s *SyntheticSpec) { s.Heads, s.KVHeads = 3, 3 }, []string{"heads"}, "3 does not divide embd 256"},
		{func(s *SyntheticSpec) { s.Embd, s.Heads, s.KVHeads = 96, 32, 32 }, []string{"heads"}, "head size embd/heads = 3 must be even"},
		{func(s *SyntheticSpec) { s.KVHeads = 3 }, []string{"kvHeads"}, "3 does not divide heads 4"},
		{func(s *SyntheticSpec) { s.Vocab = 258 }, []string{"vocab"}, "258 is below 259"},
		{func(s *SyntheticSpec) { s.Vocab = 1 << 30 }, []string{"vocab"}, "exceeds the limit"},
		{func(s *SyntheticSpec) { s.Ctx = 0 }, []string{"ctx"}, "must be positive"},
		{func(s *SyntheticSpec) { s.Type = "q4_K" }, []string{"type"}, `"q4_K" is not one of`},
		{func(s *SyntheticSpec) { s.Type = "F16" }, []string{"type"}, `"F16" is not one of`},
		{func(s *SyntheticSpec) { s.Embd, s.Heads, s.KVHeads = 272, 4, 4 }, []string{"embd"}, "272 is not a multiple of 32, the q8_0 block size"},
		{func(s *SyntheticSpec) { s.FF = 500 }, []string{"ff"}, "500 is not a multiple of 32"},
		{func(s *SyntheticSpec) { s.Heads, s.KVHeads, s.Vocab = 5, 2, 10 }, []string{"vocab", "heads", "kvHeads"}, ""},
	} {
		spec := ok
		tc.edit(&spec)
		err := spec.Validate()
		if err == nil {
			t.Errorf("Validate(%+v) = nil, want errors for %v", spec, tc.fields)
			continue
		}
		var fields []string
		for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
			var se *SpecError
			if !errors.As(e, &se) {
				t.Errorf("Validate(%+v): %v is not a *SpecError", spec, e)
				continue
			}
			fields = append(fields, se.Field)
		}
		if !sameSet(fields, tc.fields) {
			t.Errorf("Validate(%+v): got errors for %v, want %v (%v)", spec, fields, tc.fields, err)
		}
		if !strings.Contains(err.Error(), tc.msg) || !strings.HasPrefix(err.Error(), tc.fields[0]+": ") {
			t.Errorf("Validate(%+v): got %q, want %s: …%s…", spec, err, tc.fields[0], tc.msg)
		}
		if werr := WriteSynthetic(io.Discard, spec); werr == nil {
			t.Errorf("WriteSynthetic(%+v) succeeded", spec)
		}
	}
}

// TestWriteSynthetic_roundTrip reads back a model of a shape unlike the
// fixtures (grouped-query attention, a vocabulary past the two-letter
// pieces) and checks every fact and the tokenizer.
func TestWriteSynthetic_roundTrip(t *testing.T) {
	spec := SyntheticSpec{Arch: "llama", Layers: 3, Embd: 128, Heads: 8, KVHeads: 2, FF: 352,
		Vocab: 3000, Ctx: 4096, Type: "q8_0", Seed: 42}
	data := writeSpec(t, spec)
	path := filepath.Join(t.TempDir(), "m.gguf")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fa := f.Facts()
	kvDim := uint64(128 / 8 * 2)
	perLayer := 2*128*128 + 2*128*kvDim + 3*128*352 + 2*128
	wantParams := uint64(2*128*3000 + 128 + 3*perLayer)
	if fa.Architecture != "llama" || fa.Name != spec.Name() || fa.BlockCount != 3 || fa.EmbeddingLength != 128 ||
		fa.HeadCount != 8 || fa.HeadCountKV != 2 || fa.VocabSize != 3000 || fa.ContextLength != 4096 ||
		fa.FileTypeName != "MOSTLY_Q8_0" || fa.ParameterCount != wantParams || fa.UnknownTypes != 0 {
		t.Errorf("facts of %+v:\n%+v\nwant %d parameters", spec, fa, wantParams)
	}
	if rot, _ := f.Uint("llama.rope.dimension_count"); rot != 16 {
		t.Errorf("rope.dimension_count: got %d, want 16", rot)
	}
	for _, tt := range f.Tensors {
		if strings.HasSuffix(tt.Name, "attn_k.weight") && !reflect.DeepEqual(tt.Dims, []uint64{128, kvDim}) {
			t.Errorf("%s: dims %v, want [128 %d]", tt.Name, tt.Dims, kvDim)
		}
	}

	full, err := ReadWith(bytes.NewReader(data), keepAll)
	if err != nil {
		t.Fatal(err)
	}
	tokens := arrayValues(t, full, "tokenizer.ggml.tokens")
	scores := arrayValues(t, full, "tokenizer.ggml.scores")
	types := arrayValues(t, full, "tokenizer.ggml.token_type")
	seen := map[string]int{}
	for i, tok := range tokens {
		s := tok.(string)
		if j, dup := seen[s]; dup {
			t.Fatalf("token %d %q repeats token %d", i, s, j)
		}
		seen[s] = i
		wantType, wantScore := int32(1), -float32(i-258)
		switch {
		case i == 0:
			wantType, wantScore = 2, 0
		case i < 3:
			wantType, wantScore = 3, 0
		case i < 259:
			wantType, wantScore = 6, 0
			if want := fmt.Sprintf("<0x%02X>", i-3); s != want {
				t.Errorf("token %d: got %q, want %q", i, s, want)
			}
		}
		if types[i] != wantType || scores[i] != wantScore {
			t.Errorf("token %d %q: type %v score %v, want %v %v", i, s, types[i], scores[i], wantType, wantScore)
		}
	}
	for _, s := range []string{"<unk>", "<s>", "</s>", "▁", "▁Z", "ij", "zz", "▁ee", "eee"} {
		if _, ok := seen[s]; !ok {
			t.Errorf("token %q missing from a vocabulary of %d", s, len(tokens))
		}
	}
}

func arrayValues(t *testing.T, f *File, key string) []any {
	t.Helper()
	kv, ok := f.KV(key)
	if !ok {
		t.Fatalf("%s missing", key)
	}
	return kv.Value.(Array).Values
}

// tensorData returns the raw bytes of a tensor of a file in memory.
func tensorData(t *testing.T, data []byte, name string) (TensorInfo, []byte) {
	t.Helper()
	f, err := Read(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range f.Tensors {
		if tt.Name == name {
			n, _ := tt.Bytes()
			start := f.DataOffset + tt.Offset
			return tt, data[start : start+n]
		}
	}
	t.Fatalf("no tensor %s", name)
	return TensorInfo{}, nil
}

// The three types encode the same weights: F16 rounds them, Q8_0 quantizes
// them per block of 32 to within half a step. Norms are ones.
func TestWriteSynthetic_weights(t *testing.T) {
	f32 := fixtureBytes(t, "f32")
	f16 := fixtureBytes(t, "f16")
	q8 := fixtureBytes(t, "q8_0")
	for _, name := range []string{"token_embd.weight", "blk.1.ffn_down.weight"} {
		_, raw := tensorData(t, f32, name)
		ref := make([]float32, len(raw)/4)
		var sum, sumSq float64
		for i := range ref {
			ref[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
			if a := math.Abs(float64(ref[i])); a > 0.0693 {
				t.Fatalf("%s[%d] = %v, beyond ±0.0693", name, i, ref[i])
			}
			sum += float64(ref[i])
			sumSq += float64(ref[i]) * float64(ref[i])
		}
		n := float64(len(ref))
		mean, std := sum/n, math.Sqrt(sumSq/n-(sum/n)*(sum/n))
		if math.Abs(mean) > 0.001 || math.Abs(std-0.02) > 0.001 {
			t.Errorf("%s: mean %v, std %v; want about 0 and 0.02", name, mean, std)
		}

		_, half := tensorData(t, f16, name)
		for i, want := range ref {
			got := f16ToF32(binary.LittleEndian.Uint16(half[2*i:]))
			if diff := math.Abs(float64(got - want)); diff > math.Abs(float64(want))/2048+1e-7 {
				t.Fatalf("%s[%d]: f16 %v, f32 %v", name, i, got, want)
			}
		}

		_, quant := tensorData(t, q8, name)
		if len(quant) != len(ref)/32*34 {
			t.Fatalf("%s: %d q8_0 bytes for %d weights", name, len(quant), len(ref))
		}
		for b := 0; b < len(ref)/32; b++ {
			blk := quant[34*b : 34*b+34]
			d := f16ToF32(binary.LittleEndian.Uint16(blk))
			var amax float32
			for _, v := range ref[32*b : 32*b+32] {
				amax = max(amax, float32(math.Abs(float64(v))))
			}
			if rel := math.Abs(float64(d*127-amax)) / float64(amax); rel > 1e-3 {
				t.Fatalf("%s block %d: scale %v, want max|x|/127 = %v", name, b, d, amax/127)
			}
			maxQ := 0
			for j, v := range ref[32*b : 32*b+32] {
				q := int8(blk[2+j])
				maxQ = max(maxQ, int(math.Abs(float64(q))))
				// Half a step, plus the rounding of the scale to f16
				// (ggml quantizes with the f32 scale, then stores f16).
				if diff := math.Abs(float64(float32(q)*d - v)); diff > float64(d)*(0.5+127.0/2048) {
					t.Fatalf("%s[%d]: q8_0 %d×%v = %v, f32 %v", name, 32*b+j, q, d, float32(q)*d, v)
				}
			}
			if maxQ != 127 {
				t.Fatalf("%s block %d: largest |q| is %d, want 127", name, b, maxQ)
			}
		}
	}
	for _, data := range [][]byte{f32, f16, q8} {
		tt, raw := tensorData(t, data, "blk.0.ffn_norm.weight")
		if tt.Type != TypeF32 {
			t.Errorf("norm type %v, want F32", tt.Type)
		}
		for i := 0; i < len(raw); i += 4 {
			if v := math.Float32frombits(binary.LittleEndian.Uint32(raw[i:])); v != 1 {
				t.Fatalf("norm[%d] = %v, want 1", i/4, v)
			}
		}
	}
}

func TestF32ToF16(t *testing.T) {
	// Every half survives a round trip through float32.
	for h := 0; h < 1<<16; h++ {
		if h&0x7c00 == 0x7c00 && h&0x3ff != 0 {
			continue // NaN
		}
		if got := f32ToF16(f16ToF32(uint16(h))); got != uint16(h) {
			t.Fatalf("f32ToF16(f16ToF32(%#04x)) = %#04x", h, got)
		}
	}
	// Midpoints between neighbours round to the even one; a float32 step
	// either side rounds to the nearer one.
	for h := uint16(0); h < 0x7bff; h++ {
		lo, hi := f16ToF32(h), f16ToF32(h+1)
		mid := (lo + hi) / 2 // exact in float32
		even := h
		if h&1 == 1 {
			even = h + 1
		}
		if got := f32ToF16(mid); got != even {
			t.Fatalf("f32ToF16(%v, between %#04x and %#04x) = %#04x, want %#04x", mid, h, h+1, got, even)
		}
		if got := f32ToF16(math.Nextafter32(mid, 0)); got != h {
			t.Fatalf("f32ToF16(just below %v) = %#04x, want %#04x", mid, got, h)
		}
		if got := f32ToF16(math.Nextafter32(mid, float32(math.Inf(1)))); got != h+1 {
			t.Fatalf("f32ToF16(just above %v) = %#04x, want %#04x", mid, got, h+1)
		}
		if got := f32ToF16(-mid); got != even|0x8000 {
			t.Fatalf("f32ToF16(%v) = %#04x, want %#04x", -mid, got, even|0x8000)
		}
	}
	for _, tc := range []struct {
		in   float32
		want uint16
	}{
		{65520, 0x7c00}, // rounds up past the largest half
		{65519, 0x7bff},
		{float32(math.Inf(-1)), 0xfc00},
		{1e-9, 0},
	} {
		if got := f32ToF16(tc.in); got != tc.want {
			t.Errorf("f32ToF16(%v) = %#04x, want %#04x", tc.in, got, tc.want)
		}
	}
}

// Writing does not hold the model in memory.
func TestWriteSynthetic_boundedMemory(t *testing.T) {
	spec := SyntheticSpec{Arch: "llama", Layers: 1, Embd: 512, Heads: 8, KVHeads: 8, FF: 1408,
		Vocab: 2000, Ctx: 2048, Type: "f32", Seed: 7}
	size, err := spec.Size()
	if err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	cw := &countingWriter{}
	if err := WriteSynthetic(cw, spec); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	if cw.n != size {
		t.Errorf("wrote %d bytes, Size() said %d", cw.n, size)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 4<<20 {
		t.Errorf("writing a %d MB model allocated %d MB, want under 4", size>>20, alloc>>20)
	}
}

type countingWriter struct{ n int64 }

func (c *countingWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

func TestWordPiece(t *testing.T) {
	for _, tc := range []struct {
		n    int
		want string
	}{
		{0, "▁"}, {1, "e"}, {26, "z"}, {27, "E"}, {53, "0"}, {73, ")"}, {74, "▁e"}, {125, "▁Z"},
		{126, "ee"}, {127, "et"}, {126 + 675, "zz"}, {126 + 676, "▁ee"}, {126 + 2*676, "eee"},
		{126 + 2*676 + 17576, "▁eee"},
	} {
		if got := wordPiece(tc.n); got != tc.want {
			t.Errorf("wordPiece(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
}

func ExampleWriteSynthetic() {
	spec := SyntheticSpec{Arch: "llama", Layers: 2, Embd: 256, Heads: 4, KVHeads: 4, FF: 512,
		Vocab: 512, Ctx: 2048, Type: "q8_0", Seed: 0}
	var buf bytes.Buffer
	if err := WriteSynthetic(&buf, spec); err != nil {
		fmt.Println(err)
		return
	}
	f, err := Read(&buf)
	if err != nil {
		fmt.Println(err)
		return
	}
	fa := f.Facts()
	fmt.Println(fa.Name)
	fmt.Println(fa.ParameterCount, "parameters,", fa.FileTypeName, fa.QuantTypes())
	// Output:
	// synthetic-llama-2L-256e-4h-4kv-512ff-512v-2048ctx-q8_0-seed0
	// 1574144 parameters, MOSTLY_Q8_0 [Q8_0 F32]
}

func ExampleSyntheticSpec_Validate() {
	spec := SyntheticSpec{Arch: "llama", Layers: 2, Embd: 256, Heads: 3, KVHeads: 3, FF: 512,
		Vocab: 100, Ctx: 2048, Type: "f16"}
	fmt.Println(spec.Validate())
	// Output:
	// vocab: 100 is below 259 (3 special tokens and 256 byte tokens)
	// heads: 3 does not divide embd 256
}

// appendQ4_0 matches ggml's reference quantizer: dequantized, every value
// is within half a step of the original, and the value of largest
// magnitude is exact (it maps to -8·d).
func TestAppendQ4_0(t *testing.T) {
	vals := make([]float32, 64)
	rng := tensorSeed(7, "q4")
	for i := range vals {
		vals[i] = rng.weight()
	}
	vals[5] = 0.09 // the block's largest magnitude
	out := appendQ4_0(nil, vals)
	if len(out) != 2*18 {
		t.Fatalf("%d bytes for 2 blocks, want 36", len(out))
	}
	for b := 0; b < 2; b++ {
		blk := out[18*b : 18*b+18]
		d := f16ToF32(binary.LittleEndian.Uint16(blk))
		for j := 0; j < 16; j++ {
			for k, q := range []int{int(blk[2+j] & 15), int(blk[2+j] >> 4)} {
				i := 32*b + j + 16*k
				got := float32(q-8) * d
				if diff := math.Abs(float64(got - vals[i])); diff > math.Abs(float64(d))/2+1e-6 {
					t.Errorf("value %d: %g dequantizes to %g (d %g)", i, vals[i], got, d)
				}
			}
		}
	}
	if d := f16ToF32(binary.LittleEndian.Uint16(out)); math.Abs(float64(-8*d-0.09)) > 1e-4 {
		t.Errorf("block 0: -8·d = %g, want 0.09", -8*d)
	}
}
