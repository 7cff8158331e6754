package gguf

// The synthetic writer must give the same bytes for the same spec on every
// machine, because a lockfile pins their sha256. So weights come from an
// integer generator (SplitMix64) and each float is produced by a single
// float32 multiplication of an exactly representable integer, a step
// every IEEE-754 platform rounds the same way; Go may fuse a*b+c into an
// FMA on some architectures, so no such expression touches the data.

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
)

// SyntheticSpec describes a random-weight llama-architecture model, as the
// experiment schema's `model: synthetic: {…}` does. Field names in errors
// are the schema's.
type SyntheticSpec struct {
	// Arch is the architecture; only "llama" is supported.
	Arch string
	// Layers is the number of transformer blocks.
	Layers int
	// Embd is the embedding width (n_embd).
	Embd int
	// Heads and KVHeads are the attention and key/value head counts.
	Heads, KVHeads int
	// FF is the feed-forward width.
	FF int
	// Vocab is the vocabulary size: at least 259 (3 special tokens and 256
	// byte tokens).
	Vocab int
	// Ctx is the training context length written to the metadata.
	Ctx int
	// Type is the weight type: "f32", "f16", "q8_0" or "q4_0" (norms are always
	// f32).
	Type string
	// Seed selects the weights. The same spec gives the same bytes; the
	// weights do not depend on Type, only their encoding does.
	Seed uint64
}

// MinVocab is the smallest vocabulary of a synthetic model: <unk>, <s>,
// </s> and the 256 byte tokens.
const MinVocab = 3 + 256

// Bounds on synthetic shapes, so that sizes stay within int64 and the
// uint32 metadata fields.
const (
	maxSynthDim   = 1 << 20
	maxSynthVocab = 1 << 22
	maxSynthCtx   = 1 << 30
)

// SpecError is a problem with one field of a [SyntheticSpec]. Field is the
// schema's name of the field, e.g. "kvHeads".
type SpecError struct {
	Field string
	Msg   string
}

// Error returns "field: message".
func (e *SpecError) Error() string { return e.Field + ": " + e.Msg }

// synthTypes maps a spec type to its tensor type and general.file_type.
var synthTypes = map[string]struct {
	typ GGMLType
	ft  uint32
}{
	"f32":  {TypeF32, 0},
	"f16":  {TypeF16, 1},
	"q8_0": {TypeQ8_0, 7},
	"q4_0": {TypeQ4_0, 2},
}

// Validate reports every impossible field of s, each as a [*SpecError],
// joined with [errors.Join]; it returns nil when s describes a model that
// [WriteSynthetic] can write and llama.cpp can load.
func (s SyntheticSpec) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, &SpecError{Field: field, Msg: fmt.Sprintf(format, args...)})
	}
	if s.Arch != "llama" {
		bad("arch", "%q is not supported (only \"llama\")", s.Arch)
	}
	positive := func(field string, v, limit int) bool {
		switch {
		case v <= 0:
			bad(field, "must be positive, got %d", v)
		case v > limit:
			bad(field, "%d exceeds the limit %d", v, limit)
		default:
			return true
		}
		return false
	}
	positive("layers", s.Layers, maxSynthDim)
	okEmbd := positive("embd", s.Embd, maxSynthDim)
	okHeads := positive("heads", s.Heads, maxSynthDim)
	okKV := positive("kvHeads", s.KVHeads, maxSynthDim)
	okFF := positive("ff", s.FF, maxSynthDim)
	positive("ctx", s.Ctx, maxSynthCtx)
	switch {
	case s.Vocab < MinVocab:
		bad("vocab", "%d is below %d (3 special tokens and 256 byte tokens)", s.Vocab, MinVocab)
	case s.Vocab > maxSynthVocab:
		bad("vocab", "%d exceeds the limit %d", s.Vocab, maxSynthVocab)
	}
	if okEmbd && okHeads {
		if s.Embd%s.Heads != 0 {
			bad("heads", "%d does not divide embd %d", s.Heads, s.Embd)
		} else if (s.Embd/s.Heads)%2 != 0 {
			bad("heads", "head size embd/heads = %d must be even for rotary embeddings", s.Embd/s.Heads)
		}
	}
	if okHeads && okKV && s.Heads%s.KVHeads != 0 {
		bad("kvHeads", "%d does not divide heads %d", s.KVHeads, s.Heads)
	}
	if _, ok := synthTypes[s.Type]; !ok {
		bad("type", "%q is not one of \"f32\", \"f16\", \"q8_0\", \"q4_0\"", s.Type)
	} else if s.Type == "q8_0" || s.Type == "q4_0" {
		bs, _ := synthTypes[s.Type].typ.Info()
		if okEmbd && s.Embd%bs.BlockSize != 0 {
			bad("embd", "%d is not a multiple of %d, the %s block size", s.Embd, bs.BlockSize, s.Type)
		}
		if okFF && s.FF%bs.BlockSize != 0 {
			bad("ff", "%d is not a multiple of %d, the %s block size", s.FF, bs.BlockSize, s.Type)
		}
	}
	return errors.Join(errs...)
}

// synthTensor is one tensor of a synthetic model.
type synthTensor struct {
	name   string
	dims   []uint64
	typ    GGMLType
	norm   bool // all ones, F32
	offset uint64
	size   uint64
}

// layout returns the tensor table of a valid spec, in the fixtures' order,
// with offsets, and the total size of tensor data.
func (s SyntheticSpec) layout() ([]synthTensor, uint64) {
	wt := synthTypes[s.Type].typ
	embd, ff, vocab := uint64(s.Embd), uint64(s.FF), uint64(s.Vocab)
	kv := uint64(s.Embd / s.Heads * s.KVHeads)
	var ts []synthTensor
	add := func(name string, norm bool, dims ...uint64) {
		t := synthTensor{name: name, dims: dims, typ: wt, norm: norm}
		if norm {
			t.typ = TypeF32
		}
		ts = append(ts, t)
	}
	add("token_embd.weight", false, embd, vocab)
	add("output_norm.weight", true, embd)
	add("output.weight", false, embd, vocab)
	for i := 0; i < s.Layers; i++ {
		p := fmt.Sprintf("blk.%d.", i)
		add(p+"attn_norm.weight", true, embd)
		add(p+"attn_q.weight", false, embd, embd)
		add(p+"attn_k.weight", false, embd, kv)
		add(p+"attn_v.weight", false, embd, kv)
		add(p+"attn_output.weight", false, embd, embd)
		add(p+"ffn_norm.weight", true, embd)
		add(p+"ffn_gate.weight", false, embd, ff)
		add(p+"ffn_up.weight", false, embd, ff)
		add(p+"ffn_down.weight", false, ff, embd)
	}
	var off uint64
	for i := range ts {
		n := uint64(1)
		for _, d := range ts[i].dims {
			n *= d
		}
		ts[i].size, _ = ts[i].typ.RowBytes(n)
		ts[i].offset = off
		off = alignUp(off+ts[i].size, DefaultAlignment)
	}
	return ts, off
}

// Name returns the general.name of the synthetic model, which spells out
// its shape, e.g. "synthetic-llama-2L-256e-4h-4kv-512ff-512v-2048ctx-f16-seed0".
func (s SyntheticSpec) Name() string {
	return fmt.Sprintf("synthetic-%s-%dL-%de-%dh-%dkv-%dff-%dv-%dctx-%s-seed%d",
		s.Arch, s.Layers, s.Embd, s.Heads, s.KVHeads, s.FF, s.Vocab, s.Ctx, s.Type, s.Seed)
}

// WriteSynthetic writes the GGUF v3 file described by spec to w. The file
// has the layout of the tiny-llama fixtures: the same metadata keys in the
// same order, a llama (SentencePiece) tokenizer with byte fallback, the
// same tensor names, shapes and order, F32 norms of ones, and alignment
// 32. It streams: memory use does not grow with the model's size.
func WriteSynthetic(w io.Writer, spec SyntheticSpec) error {
	if err := spec.Validate(); err != nil {
		return fmt.Errorf("invalid synthetic model: %w", err)
	}
	e := &encoder{w: bufio.NewWriterSize(w, 1<<20)}
	tensors, _ := spec.layout()
	writeHeader(e, spec, tensors)
	data := e.n
	buf := &tensorBuf{}
	for _, t := range tensors {
		e.zeros(data + t.offset - e.n)
		buf.write(e, spec.Seed, t)
	}
	e.pad(DefaultAlignment)
	if e.err != nil {
		return fmt.Errorf("writing synthetic model: %w", e.err)
	}
	if err := e.w.Flush(); err != nil {
		return fmt.Errorf("writing synthetic model: %w", err)
	}
	return nil
}

// Size returns the size in bytes of the file [WriteSynthetic] writes for
// spec, without generating any weights.
func (s SyntheticSpec) Size() (int64, error) {
	if err := s.Validate(); err != nil {
		return 0, fmt.Errorf("invalid synthetic model: %w", err)
	}
	e := &encoder{w: bufio.NewWriter(io.Discard)}
	tensors, data := s.layout()
	writeHeader(e, s, tensors)
	return int64(e.n + data), nil
}

// writeHeader writes the metadata and tensor table, padded to the data
// alignment.
func writeHeader(e *encoder, spec SyntheticSpec, tensors []synthTensor) {
	vocab := spec.Vocab
	e.raw([]byte(Magic))
	e.u32(3)
	e.u64(uint64(len(tensors)))
	e.u64(22) // the number of key-value pairs below

	e.kvString("general.architecture", "llama")
	e.kvString("general.name", spec.Name())
	e.kvU32("llama.context_length", uint32(spec.Ctx))
	e.kvU32("llama.embedding_length", uint32(spec.Embd))
	e.kvU32("llama.block_count", uint32(spec.Layers))
	e.kvU32("llama.feed_forward_length", uint32(spec.FF))
	e.kvU32("llama.attention.head_count", uint32(spec.Heads))
	e.kvU32("llama.attention.head_count_kv", uint32(spec.KVHeads))
	e.kvU32("llama.rope.dimension_count", uint32(spec.Embd/spec.Heads))
	e.kvF32("llama.rope.freq_base", 10000)
	e.kvF32("llama.attention.layer_norm_rms_epsilon", 1e-5)
	e.kvU32("llama.vocab_size", uint32(vocab))
	e.kvU32("general.file_type", synthTypes[spec.Type].ft)
	e.kvString("tokenizer.ggml.model", "llama")

	e.key("tokenizer.ggml.tokens", TypeArray)
	e.u32(uint32(TypeString))
	e.u64(uint64(vocab))
	for i := 0; i < vocab; i++ {
		e.str(tokenText(i))
	}
	e.key("tokenizer.ggml.scores", TypeArray)
	e.u32(uint32(TypeFloat32))
	e.u64(uint64(vocab))
	for i := 0; i < vocab; i++ {
		e.f32(tokenScore(i))
	}
	e.key("tokenizer.ggml.token_type", TypeArray)
	e.u32(uint32(TypeInt32))
	e.u64(uint64(vocab))
	for i := 0; i < vocab; i++ {
		e.u32(uint32(tokenType(i)))
	}
	e.kvU32("tokenizer.ggml.bos_token_id", 1)
	e.kvU32("tokenizer.ggml.eos_token_id", 2)
	e.kvU32("tokenizer.ggml.unknown_token_id", 0)
	e.kvBool("tokenizer.ggml.add_bos_token", true)
	e.kvBool("tokenizer.ggml.add_eos_token", false)

	for _, t := range tensors {
		e.str(t.name)
		e.u32(uint32(len(t.dims)))
		for _, d := range t.dims {
			e.u64(d)
		}
		e.u32(uint32(t.typ))
		e.u64(t.offset)
	}
	e.pad(DefaultAlignment)
}

// encoder writes little-endian GGUF values, counting bytes and keeping the
// first error.
type encoder struct {
	w   *bufio.Writer
	n   uint64
	err error
	b   [8]byte
}

func (e *encoder) raw(p []byte) {
	if e.err != nil {
		return
	}
	_, e.err = e.w.Write(p)
	e.n += uint64(len(p))
}

func (e *encoder) u32(v uint32) {
	binary.LittleEndian.PutUint32(e.b[:4], v)
	e.raw(e.b[:4])
}

func (e *encoder) u64(v uint64) {
	binary.LittleEndian.PutUint64(e.b[:8], v)
	e.raw(e.b[:8])
}

func (e *encoder) f32(v float32) { e.u32(math.Float32bits(v)) }

func (e *encoder) str(s string) {
	e.u64(uint64(len(s)))
	if e.err == nil {
		_, e.err = e.w.WriteString(s)
		e.n += uint64(len(s))
	}
}

func (e *encoder) key(k string, t ValueType) {
	e.str(k)
	e.u32(uint32(t))
}

func (e *encoder) kvString(k, v string)      { e.key(k, TypeString); e.str(v) }
func (e *encoder) kvU32(k string, v uint32)  { e.key(k, TypeUint32); e.u32(v) }
func (e *encoder) kvF32(k string, v float32) { e.key(k, TypeFloat32); e.f32(v) }

func (e *encoder) kvBool(k string, v bool) {
	e.key(k, TypeBool)
	b := byte(0)
	if v {
		b = 1
	}
	e.raw([]byte{b})
}

var zeroBlock [DefaultAlignment]byte

func (e *encoder) zeros(n uint64) {
	for n > 0 {
		k := min(n, uint64(len(zeroBlock)))
		e.raw(zeroBlock[:k])
		n -= k
	}
}

func (e *encoder) pad(a uint64) { e.zeros(alignUp(e.n, a) - e.n) }

// Tokenizer. The vocabulary is that of the fixtures: <unk>, <s>, </s>, the
// 256 byte tokens, then word pieces, scored -1, -2, … in order.

const (
	tokenNormal  = 1
	tokenUnknown = 2
	tokenControl = 3
	tokenByte    = 6
)

const (
	pieceLower = "etaoinshrdlucmfwypvbgkjqxz"
	pieceUpper = "ETAOINSHRDLUCMFWYPVBGKJQXZ"
	piecePunct = "0123456789.,!?;:'\"-()"
	spaceMark  = "▁" // SentencePiece's word-start marker, U+2581
)

func tokenText(i int) string {
	switch {
	case i == 0:
		return "<unk>"
	case i == 1:
		return "<s>"
	case i == 2:
		return "</s>"
	case i < MinVocab:
		return fmt.Sprintf("<0x%02X>", i-3)
	}
	return wordPiece(i - MinVocab)
}

func tokenScore(i int) float32 {
	if i < MinVocab {
		return 0
	}
	return -float32(i - MinVocab + 1)
}

func tokenType(i int) int32 {
	switch {
	case i == 0:
		return tokenUnknown
	case i < 3:
		return tokenControl
	case i < MinVocab:
		return tokenByte
	}
	return tokenNormal
}

// wordPiece returns the n-th filler piece: "▁", single characters,
// "▁"+letter, then for k = 2, 3, …: every k-letter lowercase string,
// followed by the same strings with "▁" in front.
func wordPiece(n int) string {
	singles := spaceMark + pieceLower + pieceUpper + piecePunct
	runes := []rune(singles)
	if n < len(runes) {
		return string(runes[n])
	}
	n -= len(runes)
	letters := pieceLower + pieceUpper
	if n < len(letters) {
		return spaceMark + letters[n:n+1]
	}
	n -= len(letters)
	for k := 2; ; k++ {
		level := 1
		for j := 0; j < k; j++ {
			level *= len(pieceLower)
		}
		prefix := ""
		if n >= level {
			n -= level
			prefix = spaceMark
			if n >= level {
				n -= level
				continue
			}
		}
		var b strings.Builder
		b.WriteString(prefix)
		digits := make([]byte, k)
		m := n
		for j := k - 1; j >= 0; j-- {
			digits[j] = pieceLower[m%len(pieceLower)]
			m /= len(pieceLower)
		}
		b.Write(digits)
		return b.String()
	}
}

// Weights.

// splitMix64 is Vigna's SplitMix64 generator: tiny, fast, and fully
// specified, so the weights never depend on a library's implementation.
type splitMix64 uint64

func (s *splitMix64) next() uint64 {
	*s += 0x9e3779b97f4a7c15
	z := uint64(*s)
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// tensorSeed mixes the model seed with the tensor's name (FNV-1a), so each
// tensor has its own stream and adding a layer leaves the others alone.
func tensorSeed(seed uint64, name string) splitMix64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(name); i++ {
		h ^= uint64(name[i])
		h *= 1099511628211
	}
	s := splitMix64(seed)
	return splitMix64(s.next() ^ h)
}

// weightScale maps the sum of four 16-bit uniform integers (standard
// deviation 65536/sqrt(3)) to a standard deviation of 0.02, the usual
// initializer of llama-style models, so activations stay near unit scale.
const weightScale = float32(0.02 * 1.7320508075688772 / 65536)

// weight returns the next weight: an Irwin–Hall approximation of a normal
// distribution, bounded by ±0.0693.
func (s *splitMix64) weight() float32 {
	r := s.next()
	sum := int32(int16(r)) + int32(int16(r>>16)) + int32(int16(r>>32)) + int32(int16(r>>48))
	return float32(sum) * weightScale
}

// chunkElems is how many weights are generated at a time; a multiple of
// the Q8_0 block size.
const chunkElems = 32 << 10

// tensorBuf holds the reusable buffers of the data writer.
type tensorBuf struct {
	vals []float32
	out  []byte
}

func (b *tensorBuf) write(e *encoder, seed uint64, t synthTensor) {
	if b.vals == nil {
		b.vals = make([]float32, chunkElems)
		b.out = make([]byte, 0, chunkElems*4)
	}
	total := uint64(1)
	for _, d := range t.dims {
		total *= d
	}
	rng := tensorSeed(seed, t.name)
	for done := uint64(0); done < total && e.err == nil; {
		n := int(min(total-done, chunkElems))
		vals := b.vals[:n]
		for i := range vals {
			if t.norm {
				vals[i] = 1
			} else {
				vals[i] = rng.weight()
			}
		}
		out := b.out[:0]
		switch t.typ {
		case TypeF32:
			for _, v := range vals {
				out = binary.LittleEndian.AppendUint32(out, math.Float32bits(v))
			}
		case TypeF16:
			for _, v := range vals {
				out = binary.LittleEndian.AppendUint16(out, f32ToF16(v))
			}
		case TypeQ8_0:
			out = appendQ8_0(out, vals)
		case TypeQ4_0:
			out = appendQ4_0(out, vals)
		}
		e.raw(out)
		done += uint64(n)
	}
}

// appendQ8_0 quantizes vals (a whole number of 32-value blocks) as ggml's
// quantize_row_q8_0_ref does: per block an f16 scale d = max|x|/127 and
// 32 int8 values round(x/d).
func appendQ8_0(out []byte, vals []float32) []byte {
	for len(vals) >= 32 {
		blk := vals[:32]
		vals = vals[32:]
		var amax float32
		for _, v := range blk {
			amax = max(amax, float32(math.Abs(float64(v))))
		}
		d := amax / 127
		var id float32
		if d != 0 {
			id = 1 / d
		}
		out = binary.LittleEndian.AppendUint16(out, f32ToF16(d))
		for _, v := range blk {
			x := v * id
			out = append(out, byte(int8(math.Round(float64(x)))))
		}
	}
	return out
}

// appendQ4_0 quantizes vals (a whole number of 32-value blocks) as ggml's
// quantize_row_q4_0_ref does: per block an f16 scale d = max/-8, where
// max is the value of largest magnitude with its sign, and 32 4-bit
// values min(15, x/d + 8.5) truncated, the first 16 in the low nibbles.
func appendQ4_0(out []byte, vals []float32) []byte {
	for len(vals) >= 32 {
		blk := vals[:32]
		vals = vals[32:]
		var amax, mx float32
		for _, v := range blk {
			if a := float32(math.Abs(float64(v))); a > amax {
				amax, mx = a, v
			}
		}
		d := mx / -8
		var id float32
		if d != 0 {
			id = 1 / d
		}
		out = binary.LittleEndian.AppendUint16(out, f32ToF16(d))
		for j := 0; j < 16; j++ {
			x0, x1 := blk[j]*id, blk[16+j]*id
			q0, q1 := min(15, int8(x0+8.5)), min(15, int8(x1+8.5))
			out = append(out, byte(q0)|byte(q1)<<4)
		}
	}
	return out
}

// f32ToF16 converts to IEEE half precision, rounding to nearest even, as
// ggml's GGML_FP32_TO_FP16 does.
func f32ToF16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int32(b>>23) & 0xff
	mant := b & 0x7fffff
	switch {
	case exp == 0xff: // Inf or NaN
		if mant != 0 {
			return sign | 0x7e00
		}
		return sign | 0x7c00
	case exp-127 > 15: // overflow
		return sign | 0x7c00
	case exp-127 >= -14: // normal
		e := uint32(exp-127+15) << 10
		m := mant >> 13
		rest := mant & 0x1fff
		h := e | m
		if rest > 0x1000 || (rest == 0x1000 && h&1 == 1) {
			h++ // may carry into the exponent, which is correct
		}
		return sign | uint16(h)
	case exp-127 >= -25: // subnormal half
		mant |= 0x800000
		shift := uint32(-14-(exp-127)) + 13
		m := mant >> shift
		rest := mant & (1<<shift - 1)
		half := uint32(1) << (shift - 1)
		if rest > half || (rest == half && m&1 == 1) {
			m++
		}
		return sign | uint16(m)
	}
	return sign
}

// f16ToF32 converts an IEEE half to float32 exactly.
func f16ToF32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h & 0x3ff)
	switch {
	case exp == 0x1f:
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	case exp != 0:
		return math.Float32frombits(sign | (exp+112)<<23 | mant<<13)
	case mant == 0:
		return math.Float32frombits(sign)
	}
	// Subnormal: normalize.
	e := uint32(113)
	for mant&0x400 == 0 {
		mant <<= 1
		e--
	}
	return math.Float32frombits(sign | e<<23 | (mant&0x3ff)<<13)
}
