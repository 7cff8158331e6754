package gguf

// The reader trusts nothing in the file: every count and length is checked
// against a fixed limit (and, when the input size is known, against the
// bytes left) before it is used, and nothing is allocated up front from a
// count. Memory use is therefore bounded by a small multiple of the bytes
// actually read, whatever the header claims.

import (
	"bufio"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"math"
	"os"
	"slices"
)

// Magic is the first four bytes of every GGUF file.
const Magic = "GGUF"

// DefaultAlignment is the tensor data alignment of a file without a
// general.alignment key.
const DefaultAlignment = 32

// maxDims is GGML_MAX_DIMS: a tensor has at most four dimensions.
const maxDims = 4

// ErrNotGGUF is returned (wrapped) when the input does not start with the
// GGUF magic.
var ErrNotGGUF = errors.New("not a gguf file")

// File is the header of a GGUF file: its metadata and tensor table. The
// tensor data itself is not read.
type File struct {
	// Version is the GGUF version, 2 or 3.
	Version uint32
	// BigEndian is true for a big-endian file (GGUF v3 allows both).
	BigEndian bool
	// KVs are the metadata key-value pairs in file order.
	KVs []KV
	// Tensors is the tensor table in file order.
	Tensors []TensorInfo
	// Alignment is the alignment of tensor data: general.alignment or
	// [DefaultAlignment].
	Alignment uint64
	// DataOffset is the file offset at which tensor data starts; tensor
	// offsets are relative to it.
	DataOffset uint64

	index map[string]int
}

// KV is one metadata key-value pair.
type KV struct {
	Key  string
	Type ValueType
	// Value holds the Go value of the matching type: uint8, int8, uint16,
	// int16, uint32, int32, float32, bool, string, uint64, int64, float64,
	// or [Array].
	Value any
}

// Array is a metadata array. Arrays longer than
// [ReadOptions.MaxArrayValues] (such as a tokenizer vocabulary) are
// summarized: Len is set and Values is nil.
type Array struct {
	Elem ValueType
	Len  uint64
	// Values holds the elements (typed as in [KV.Value]) or is nil when
	// the array was summarized.
	Values []any
	// SHA256 is, for an array of strings that is a metadata value itself
	// (not nested), the hex sha256 of its elements in order, each as its
	// length (uint64, little-endian) and bytes: the digest of a token
	// list, kept even when the values are not. "" for other arrays.
	SHA256 string
}

// Summarized reports whether the array's values were dropped.
func (a Array) Summarized() bool { return a.Values == nil && a.Len > 0 }

// TensorInfo is one entry of the tensor table.
type TensorInfo struct {
	Name string
	// Dims are the dimensions, innermost (ne[0]) first, as in ggml.
	Dims []uint64
	Type GGMLType
	// Offset is the offset of the tensor's data from [File.DataOffset].
	Offset uint64
}

// Elements returns the number of elements of the tensor.
func (t TensorInfo) Elements() uint64 {
	n := uint64(1)
	for _, d := range t.Dims {
		n *= d // the reader rejects tables whose products overflow int64
	}
	return n
}

// Bytes returns the size of the tensor's data; ok is false when its type
// is unknown to this package.
func (t TensorInfo) Bytes() (size uint64, ok bool) {
	return t.Type.RowBytes(t.Elements())
}

// ReadOptions bounds what [ReadWith] accepts and keeps. Zero fields take
// the defaults of [DefaultReadOptions].
type ReadOptions struct {
	// Size is the total size of the input when known (ReadFile sets it),
	// or 0. Counts and lengths are then also checked against the bytes
	// left, and tensor extents against the end of the file.
	Size int64
	// MaxArrayValues is the longest array whose values are kept.
	MaxArrayValues int
	// MaxStringLen bounds any string value.
	MaxStringLen uint64
	// MaxKVs and MaxTensors bound the header's counts.
	MaxKVs, MaxTensors uint64
}

// DefaultReadOptions are the limits of [Read]: arrays up to 256 values
// are kept, strings up to 16 MiB, and at most 2^20 metadata pairs and
// 2^20 tensors are accepted.
var DefaultReadOptions = ReadOptions{
	MaxArrayValues: 256,
	MaxStringLen:   16 << 20,
	MaxKVs:         1 << 20,
	MaxTensors:     1 << 20,
}

const (
	maxKeyLen        = 1 << 16 // the specification's bound on keys
	maxTensorNameLen = 1 << 10 // ggml allows 63; be lenient but bounded
	maxArrayDepth    = 8
	chunk            = 64 << 10
)

// Read reads a GGUF header (metadata and tensor table) from r with
// [DefaultReadOptions]. It reads only as far as the end of the tensor
// table.
func Read(r io.Reader) (*File, error) {
	return ReadWith(r, ReadOptions{})
}

// ReadFile reads the header of the GGUF file at path, checking counts and
// tensor extents against the file's size.
func ReadFile(path string) (*File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading gguf file: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("reading gguf file: %w", err)
	}
	file, err := ReadWith(f, ReadOptions{Size: st.Size()})
	if err != nil {
		return nil, fmt.Errorf("reading gguf file %s: %w", path, err)
	}
	return file, nil
}

// ReadWith is [Read] with explicit limits.
func ReadWith(r io.Reader, opts ReadOptions) (*File, error) {
	def := DefaultReadOptions
	if opts.MaxArrayValues == 0 {
		opts.MaxArrayValues = def.MaxArrayValues
	}
	if opts.MaxStringLen == 0 {
		opts.MaxStringLen = def.MaxStringLen
	}
	if opts.MaxKVs == 0 {
		opts.MaxKVs = def.MaxKVs
	}
	if opts.MaxTensors == 0 {
		opts.MaxTensors = def.MaxTensors
	}
	d := &decoder{r: bufio.NewReaderSize(r, 16<<10), opts: opts}
	f, err := d.file()
	if err != nil {
		return nil, err
	}
	return f, nil
}

type decoder struct {
	r     *bufio.Reader
	order binary.ByteOrder
	off   uint64
	opts  ReadOptions
	buf   [8]byte
	// sum, when set, receives every string read (its length and bytes):
	// the digest of a top-level string array.
	sum hash.Hash
}

// summed writes a string's length and bytes to the running digest.
func (d *decoder) summed(n uint64, b []byte) {
	if d.sum == nil {
		return
	}
	var l [8]byte
	binary.LittleEndian.PutUint64(l[:], n)
	d.sum.Write(l[:])
	d.sum.Write(b)
}

// errorf adds the current offset to an error.
func (d *decoder) errorf(format string, args ...any) error {
	return errorAt(d.off, format, args...)
}

// errorAt adds the offset of the field at fault to an error.
func errorAt(off uint64, format string, args ...any) error {
	return fmt.Errorf("offset %d: %s", off, fmt.Sprintf(format, args...))
}

func (d *decoder) ioErr(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return d.errorf("truncated file: %v", io.ErrUnexpectedEOF)
	}
	return d.errorf("%v", err)
}

// remaining returns the bytes left in the input, or MaxUint64 when the
// size is unknown.
func (d *decoder) remaining() uint64 {
	if d.opts.Size <= 0 {
		return maxUint64
	}
	if uint64(d.opts.Size) < d.off {
		return 0
	}
	return uint64(d.opts.Size) - d.off
}

func (d *decoder) read(n int) ([]byte, error) {
	b := d.buf[:n]
	if _, err := io.ReadFull(d.r, b); err != nil {
		return nil, d.ioErr(err)
	}
	d.off += uint64(n)
	return b, nil
}

func (d *decoder) u8() (uint8, error) {
	b, err := d.read(1)
	if err != nil {
		return 0, err
	}
	return b[0], nil
}

func (d *decoder) u16() (uint16, error) {
	b, err := d.read(2)
	if err != nil {
		return 0, err
	}
	return d.order.Uint16(b), nil
}

func (d *decoder) u32() (uint32, error) {
	b, err := d.read(4)
	if err != nil {
		return 0, err
	}
	return d.order.Uint32(b), nil
}

func (d *decoder) u64() (uint64, error) {
	b, err := d.read(8)
	if err != nil {
		return 0, err
	}
	return d.order.Uint64(b), nil
}

func (d *decoder) skip(n uint64) error {
	if n > d.remaining() {
		return d.errorf("%d bytes claimed, %d left in file", n, d.remaining())
	}
	for n > 0 {
		step := min(n, 1<<30)
		k, err := d.r.Discard(int(step))
		d.off += uint64(k)
		if err != nil {
			return d.ioErr(err)
		}
		n -= step
	}
	return nil
}

// str reads a string of at most max bytes. It allocates in chunks as the
// bytes arrive, so a lying length costs at most one chunk.
func (d *decoder) str(max uint64, what string) (string, error) {
	at := d.off
	n, err := d.u64()
	if err != nil {
		return "", err
	}
	if n > max {
		return "", errorAt(at, "%s length %d exceeds the limit %d", what, n, max)
	}
	if n > d.remaining() {
		return "", errorAt(at, "%s length %d exceeds the %d bytes left in file", what, n, d.remaining())
	}
	buf := make([]byte, 0, min(n, chunk))
	for uint64(len(buf)) < n {
		step := int(min(n-uint64(len(buf)), chunk))
		buf = slices.Grow(buf, step)
		k, err := io.ReadFull(d.r, buf[len(buf):len(buf)+step])
		buf = buf[:len(buf)+k]
		d.off += uint64(k)
		if err != nil {
			return "", d.ioErr(err)
		}
	}
	d.summed(n, buf)
	return string(buf), nil
}

func (d *decoder) file() (*File, error) {
	magic, err := d.read(4)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotGGUF, err)
	}
	if string(magic) != Magic {
		return nil, fmt.Errorf("%w: magic %q", ErrNotGGUF, magic)
	}
	vb, err := d.read(4)
	if err != nil {
		return nil, err
	}
	f := &File{Alignment: DefaultAlignment}
	le, be := binary.LittleEndian.Uint32(vb), binary.BigEndian.Uint32(vb)
	switch {
	case le == 2 || le == 3:
		d.order, f.Version = binary.LittleEndian, le
	case be == 2 || be == 3:
		d.order, f.Version, f.BigEndian = binary.BigEndian, be, true
	case le == 1:
		return nil, fmt.Errorf("gguf version 1 is not supported (only 2 and 3)")
	default:
		return nil, fmt.Errorf("unsupported gguf version %d", le)
	}
	nTensors, err := d.u64()
	if err != nil {
		return nil, err
	}
	nKVs, err := d.u64()
	if err != nil {
		return nil, err
	}
	if nTensors > d.opts.MaxTensors {
		return nil, d.errorf("tensor count %d exceeds the limit %d", nTensors, d.opts.MaxTensors)
	}
	if nKVs > d.opts.MaxKVs {
		return nil, d.errorf("metadata count %d exceeds the limit %d", nKVs, d.opts.MaxKVs)
	}
	// A pair takes at least 13 bytes (key length, type, one byte) and a
	// tensor entry at least 24 (name length, n_dims, type, offset).
	if rem := d.remaining(); nKVs > rem/13 || nTensors > rem/24 || nKVs*13+nTensors*24 > rem {
		return nil, d.errorf("%d metadata pairs and %d tensors cannot fit in the %d bytes left", nKVs, nTensors, rem)
	}

	f.index = make(map[string]int)
	for i := uint64(0); i < nKVs; i++ {
		kv, err := d.kv()
		if err != nil {
			return nil, fmt.Errorf("metadata pair %d: %w", i, err)
		}
		if _, dup := f.index[kv.Key]; dup {
			return nil, fmt.Errorf("metadata pair %d: duplicate key %q", i, kv.Key)
		}
		f.index[kv.Key] = len(f.KVs)
		f.KVs = append(f.KVs, kv)
	}
	if kv, ok := f.KV("general.alignment"); ok {
		a, isU32 := kv.Value.(uint32)
		if !isU32 || a == 0 || a&(a-1) != 0 {
			return nil, fmt.Errorf("general.alignment: want a uint32 power of two, got %s %v", kv.Type, kv.Value)
		}
		f.Alignment = uint64(a)
	}

	names := make(map[string]bool)
	for i := uint64(0); i < nTensors; i++ {
		t, err := d.tensor()
		if err != nil {
			return nil, fmt.Errorf("tensor %d: %w", i, err)
		}
		if names[t.Name] {
			return nil, fmt.Errorf("tensor %d: duplicate name %q", i, t.Name)
		}
		names[t.Name] = true
		if t.Offset%f.Alignment != 0 {
			return nil, fmt.Errorf("tensor %d %q: offset %d is not a multiple of the alignment %d", i, t.Name, t.Offset, f.Alignment)
		}
		f.Tensors = append(f.Tensors, t)
	}
	f.DataOffset = alignUp(d.off, f.Alignment)

	if d.opts.Size > 0 {
		size := uint64(d.opts.Size)
		for i, t := range f.Tensors {
			n, ok := t.Bytes()
			if !ok {
				continue
			}
			if t.Offset > size || n > size || f.DataOffset > size-t.Offset || f.DataOffset+t.Offset > size-n {
				return nil, fmt.Errorf("tensor %d %q: data [%d, +%d) at file offset %d extends past the end of the file (%d bytes)",
					i, t.Name, t.Offset, n, f.DataOffset, size)
			}
		}
	}
	return f, nil
}

func alignUp(n, a uint64) uint64 {
	return (n + a - 1) / a * a
}

func (d *decoder) kv() (KV, error) {
	key, err := d.str(maxKeyLen, "key")
	if err != nil {
		return KV{}, err
	}
	t, err := d.u32()
	if err != nil {
		return KV{}, fmt.Errorf("%q: %w", key, err)
	}
	v, err := d.value(ValueType(t), 0)
	if err != nil {
		return KV{}, fmt.Errorf("%q: %w", key, err)
	}
	return KV{Key: key, Type: ValueType(t), Value: v}, nil
}

func (d *decoder) value(t ValueType, depth int) (any, error) {
	switch t {
	case TypeUint8:
		return d.u8()
	case TypeInt8:
		v, err := d.u8()
		return int8(v), err
	case TypeBool:
		v, err := d.u8()
		return v != 0, err
	case TypeUint16:
		return d.u16()
	case TypeInt16:
		v, err := d.u16()
		return int16(v), err
	case TypeUint32:
		return d.u32()
	case TypeInt32:
		v, err := d.u32()
		return int32(v), err
	case TypeFloat32:
		v, err := d.u32()
		return math.Float32frombits(v), err
	case TypeUint64:
		return d.u64()
	case TypeInt64:
		v, err := d.u64()
		return int64(v), err
	case TypeFloat64:
		v, err := d.u64()
		return math.Float64frombits(v), err
	case TypeString:
		return d.str(d.opts.MaxStringLen, "string")
	case TypeArray:
		return d.array(depth + 1)
	}
	return nil, d.errorf("unknown value type %d", uint32(t))
}

func (d *decoder) array(depth int) (any, error) {
	if depth > maxArrayDepth {
		return nil, d.errorf("arrays nested deeper than %d", maxArrayDepth)
	}
	at := d.off
	et, err := d.u32()
	if err != nil {
		return nil, err
	}
	elem := ValueType(et)
	size := elem.size()
	if size < 0 {
		return nil, errorAt(at, "unknown array element type %d", et)
	}
	n, err := d.u64()
	if err != nil {
		return nil, err
	}
	// Every element takes at least one byte (strings eight, arrays twelve).
	minSize := uint64(max(size, 1))
	switch elem {
	case TypeString:
		minSize = 8
	case TypeArray:
		minSize = 12
	}
	if n > math.MaxInt64/minSize {
		return nil, errorAt(at, "array length %d is too large", n)
	}
	if rem := d.remaining(); n > rem/minSize {
		return nil, errorAt(at, "array of %d %s cannot fit in the %d bytes left", n, elem, rem)
	}
	a := Array{Elem: elem, Len: n}
	if elem == TypeString && depth == 1 {
		d.sum = sha256.New()
		defer func() { d.sum = nil }()
		if err := d.elements(&a, depth); err != nil {
			return nil, err
		}
		a.SHA256 = hex.EncodeToString(d.sum.Sum(nil))
		return a, nil
	}
	if err := d.elements(&a, depth); err != nil {
		return nil, err
	}
	return a, nil
}

// elements reads an array's elements into a (or past them, when there
// are more than MaxArrayValues).
func (d *decoder) elements(a *Array, depth int) error {
	elem, n, size := a.Elem, a.Len, a.Elem.size()
	if n <= uint64(d.opts.MaxArrayValues) {
		a.Values = make([]any, 0, n)
		for i := uint64(0); i < n; i++ {
			v, err := d.value(elem, depth)
			if err != nil {
				return fmt.Errorf("element %d: %w", i, err)
			}
			a.Values = append(a.Values, v)
		}
		return nil
	}
	if size > 0 {
		return d.skip(n * uint64(size))
	}
	for i := uint64(0); i < n; i++ {
		if err := d.skipValue(elem, depth); err != nil {
			return fmt.Errorf("element %d: %w", i, err)
		}
	}
	return nil
}

// skipValue reads past a string or array value without keeping it.
func (d *decoder) skipValue(t ValueType, depth int) error {
	switch t {
	case TypeString:
		at := d.off
		n, err := d.u64()
		if err != nil {
			return err
		}
		if n > d.opts.MaxStringLen {
			return errorAt(at, "string length %d exceeds the limit %d", n, d.opts.MaxStringLen)
		}
		if d.sum != nil {
			if n > d.remaining() {
				return errorAt(at, "string length %d exceeds the %d bytes left in file", n, d.remaining())
			}
			var l [8]byte
			binary.LittleEndian.PutUint64(l[:], n)
			d.sum.Write(l[:])
			k, err := io.CopyN(d.sum, d.r, int64(n))
			d.off += uint64(k)
			if err != nil {
				return d.ioErr(err)
			}
			return nil
		}
		return d.skip(n)
	case TypeArray:
		_, err := d.array(depth + 1)
		return err
	}
	if s := t.size(); s > 0 {
		return d.skip(uint64(s))
	}
	return d.errorf("unknown value type %d", uint32(t))
}

func (d *decoder) tensor() (TensorInfo, error) {
	name, err := d.str(maxTensorNameLen, "tensor name")
	if err != nil {
		return TensorInfo{}, err
	}
	fail := func(err error) (TensorInfo, error) {
		return TensorInfo{}, fmt.Errorf("%q: %w", name, err)
	}
	nDims, err := d.u32()
	if err != nil {
		return fail(err)
	}
	if nDims > maxDims {
		return fail(d.errorf("%d dimensions, at most %d allowed", nDims, maxDims))
	}
	t := TensorInfo{Name: name, Dims: make([]uint64, nDims)}
	elems := uint64(1)
	for i := range t.Dims {
		if t.Dims[i], err = d.u64(); err != nil {
			return fail(err)
		}
		dim := t.Dims[i]
		if dim > math.MaxInt64 || (dim != 0 && elems > math.MaxInt64/dim) {
			return fail(d.errorf("dimensions %v overflow int64", t.Dims[:i+1]))
		}
		elems *= dim
	}
	typ, err := d.u32()
	if err != nil {
		return fail(err)
	}
	t.Type = GGMLType(typ)
	if info, ok := t.Type.Info(); ok && len(t.Dims) > 0 && t.Dims[0]%uint64(info.BlockSize) != 0 {
		return fail(d.errorf("first dimension %d is not a multiple of the %s block size %d", t.Dims[0], t.Type, info.BlockSize))
	}
	if t.Offset, err = d.u64(); err != nil {
		return fail(err)
	}
	return t, nil
}

// KV returns the metadata pair with the given key.
func (f *File) KV(key string) (KV, bool) {
	if f.index == nil {
		for _, kv := range f.KVs {
			if kv.Key == key {
				return kv, true
			}
		}
		return KV{}, false
	}
	i, ok := f.index[key]
	if !ok {
		return KV{}, false
	}
	return f.KVs[i], true
}

// Uint returns the value of key as an unsigned integer when it holds a
// non-negative integer of any width.
func (f *File) Uint(key string) (uint64, bool) {
	kv, ok := f.KV(key)
	if !ok {
		return 0, false
	}
	return asUint(kv.Value)
}

// Str returns the value of key when it is a string.
func (f *File) Str(key string) (string, bool) {
	kv, ok := f.KV(key)
	if !ok {
		return "", false
	}
	s, ok := kv.Value.(string)
	return s, ok
}

func asUint(v any) (uint64, bool) {
	switch v := v.(type) {
	case uint8:
		return uint64(v), true
	case uint16:
		return uint64(v), true
	case uint32:
		return uint64(v), true
	case uint64:
		return v, true
	case int8:
		return uint64(v), v >= 0
	case int16:
		return uint64(v), v >= 0
	case int32:
		return uint64(v), v >= 0
	case int64:
		return uint64(v), v >= 0
	}
	return 0, false
}
