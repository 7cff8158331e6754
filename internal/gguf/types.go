package gguf

import "fmt"

// ValueType is the type tag of a metadata value (gguf_type in ggml).
type ValueType uint32

// Metadata value types, numbered as in the GGUF specification.
const (
	TypeUint8   ValueType = 0
	TypeInt8    ValueType = 1
	TypeUint16  ValueType = 2
	TypeInt16   ValueType = 3
	TypeUint32  ValueType = 4
	TypeInt32   ValueType = 5
	TypeFloat32 ValueType = 6
	TypeBool    ValueType = 7
	TypeString  ValueType = 8
	TypeArray   ValueType = 9
	TypeUint64  ValueType = 10
	TypeInt64   ValueType = 11
	TypeFloat64 ValueType = 12
)

var valueTypeNames = [...]string{
	TypeUint8:   "uint8",
	TypeInt8:    "int8",
	TypeUint16:  "uint16",
	TypeInt16:   "int16",
	TypeUint32:  "uint32",
	TypeInt32:   "int32",
	TypeFloat32: "float32",
	TypeBool:    "bool",
	TypeString:  "string",
	TypeArray:   "array",
	TypeUint64:  "uint64",
	TypeInt64:   "int64",
	TypeFloat64: "float64",
}

// String returns the specification's name of t, e.g. "uint32", or
// "type(N)" for an unknown tag.
func (t ValueType) String() string {
	if int(t) < len(valueTypeNames) {
		return valueTypeNames[t]
	}
	return fmt.Sprintf("type(%d)", uint32(t))
}

// size is the encoded size of a fixed-size value type, 0 for string and
// array, -1 for an unknown type.
func (t ValueType) size() int {
	switch t {
	case TypeUint8, TypeInt8, TypeBool:
		return 1
	case TypeUint16, TypeInt16:
		return 2
	case TypeUint32, TypeInt32, TypeFloat32:
		return 4
	case TypeUint64, TypeInt64, TypeFloat64:
		return 8
	case TypeString, TypeArray:
		return 0
	}
	return -1
}

// GGMLType is a tensor element type (ggml_type in ggml.h).
type GGMLType uint32

// Tensor types, numbered as in ggml.h. Numbers 4 and 5 (Q4_2, Q4_3) were
// removed from ggml long ago; 31–33 and 36–38 are the removed
// repacked Q4_0/IQ4_NL variants, kept so old files still get a size.
const (
	TypeF32      GGMLType = 0
	TypeF16      GGMLType = 1
	TypeQ4_0     GGMLType = 2
	TypeQ4_1     GGMLType = 3
	TypeQ5_0     GGMLType = 6
	TypeQ5_1     GGMLType = 7
	TypeQ8_0     GGMLType = 8
	TypeQ8_1     GGMLType = 9
	TypeQ2_K     GGMLType = 10
	TypeQ3_K     GGMLType = 11
	TypeQ4_K     GGMLType = 12
	TypeQ5_K     GGMLType = 13
	TypeQ6_K     GGMLType = 14
	TypeQ8_K     GGMLType = 15
	TypeIQ2_XXS  GGMLType = 16
	TypeIQ2_XS   GGMLType = 17
	TypeIQ3_XXS  GGMLType = 18
	TypeIQ1_S    GGMLType = 19
	TypeIQ4_NL   GGMLType = 20
	TypeIQ3_S    GGMLType = 21
	TypeIQ2_S    GGMLType = 22
	TypeIQ4_XS   GGMLType = 23
	TypeI8       GGMLType = 24
	TypeI16      GGMLType = 25
	TypeI32      GGMLType = 26
	TypeI64      GGMLType = 27
	TypeF64      GGMLType = 28
	TypeIQ1_M    GGMLType = 29
	TypeBF16     GGMLType = 30
	TypeQ4_0_4_4 GGMLType = 31
	TypeQ4_0_4_8 GGMLType = 32
	TypeQ4_0_8_8 GGMLType = 33
	TypeTQ1_0    GGMLType = 34
	TypeTQ2_0    GGMLType = 35
	TypeIQ4_NL44 GGMLType = 36
	TypeIQ4_NL48 GGMLType = 37
	TypeIQ4_NL88 GGMLType = 38
	TypeMXFP4    GGMLType = 39
)

// TypeInfo describes the storage of a [GGMLType]: BlockSize elements are
// stored in TypeSize bytes.
type TypeInfo struct {
	Name      string
	BlockSize int
	TypeSize  int
}

// qk is the super-block size of the k-quants and most IQ types (QK_K).
const qk = 256

// typeTable holds the block and byte sizes of ggml's type_traits, derived
// from the block_* structs of ggml-common.h.
var typeTable = map[GGMLType]TypeInfo{
	TypeF32:      {"F32", 1, 4},
	TypeF16:      {"F16", 1, 2},
	TypeQ4_0:     {"Q4_0", 32, 2 + 16},
	TypeQ4_1:     {"Q4_1", 32, 2 + 2 + 16},
	TypeQ5_0:     {"Q5_0", 32, 2 + 4 + 16},
	TypeQ5_1:     {"Q5_1", 32, 2 + 2 + 4 + 16},
	TypeQ8_0:     {"Q8_0", 32, 2 + 32},
	TypeQ8_1:     {"Q8_1", 32, 2 + 2 + 32},
	TypeQ2_K:     {"Q2_K", qk, qk/16 + qk/4 + 2 + 2},
	TypeQ3_K:     {"Q3_K", qk, qk/8 + qk/4 + 12 + 2},
	TypeQ4_K:     {"Q4_K", qk, 2 + 2 + 12 + qk/2},
	TypeQ5_K:     {"Q5_K", qk, 2 + 2 + 12 + qk/8 + qk/2},
	TypeQ6_K:     {"Q6_K", qk, qk/2 + qk/4 + qk/16 + 2},
	TypeQ8_K:     {"Q8_K", qk, 4 + qk + qk/16*2},
	TypeIQ2_XXS:  {"IQ2_XXS", qk, 2 + qk/8*2},
	TypeIQ2_XS:   {"IQ2_XS", qk, 2 + qk/8*2 + qk/32},
	TypeIQ3_XXS:  {"IQ3_XXS", qk, 2 + 3*qk/8},
	TypeIQ1_S:    {"IQ1_S", qk, 2 + qk/8 + qk/16},
	TypeIQ4_NL:   {"IQ4_NL", 32, 2 + 16},
	TypeIQ3_S:    {"IQ3_S", qk, 2 + qk/4 + qk/32 + qk/8 + qk/64},
	TypeIQ2_S:    {"IQ2_S", qk, 2 + qk/4 + qk/32 + qk/32},
	TypeIQ4_XS:   {"IQ4_XS", qk, 2 + 2 + qk/64 + qk/2},
	TypeI8:       {"I8", 1, 1},
	TypeI16:      {"I16", 1, 2},
	TypeI32:      {"I32", 1, 4},
	TypeI64:      {"I64", 1, 8},
	TypeF64:      {"F64", 1, 8},
	TypeIQ1_M:    {"IQ1_M", qk, qk/8 + qk/16 + qk/32},
	TypeBF16:     {"BF16", 1, 2},
	TypeQ4_0_4_4: {"Q4_0_4_4", 32, 18},
	TypeQ4_0_4_8: {"Q4_0_4_8", 32, 18},
	TypeQ4_0_8_8: {"Q4_0_8_8", 32, 18},
	TypeTQ1_0:    {"TQ1_0", qk, (qk-4*qk/64)/5 + qk/64 + 2},
	TypeTQ2_0:    {"TQ2_0", qk, qk/4 + 2},
	TypeIQ4_NL44: {"IQ4_NL_4_4", 32, 18},
	TypeIQ4_NL48: {"IQ4_NL_4_8", 32, 18},
	TypeIQ4_NL88: {"IQ4_NL_8_8", 32, 18},
	TypeMXFP4:    {"MXFP4", 32, 1 + 16},
}

// Info returns the block and byte sizes of t; ok is false for a type this
// package does not know (a newer ggml, or a fork's own types such as
// ik_llama.cpp's IQ*_K).
func (t GGMLType) Info() (info TypeInfo, ok bool) {
	info, ok = typeTable[t]
	return info, ok
}

// String returns ggml's name of t, e.g. "Q8_0", or "TYPE_N" for an
// unknown type.
func (t GGMLType) String() string {
	if info, ok := typeTable[t]; ok {
		return info.Name
	}
	return fmt.Sprintf("TYPE_%d", uint32(t))
}

// RowBytes returns the size in bytes of n elements of type t; ok is false
// when the type is unknown or n is not a whole number of blocks.
func (t GGMLType) RowBytes(n uint64) (size uint64, ok bool) {
	info, known := typeTable[t]
	if !known || n%uint64(info.BlockSize) != 0 {
		return 0, false
	}
	blocks := n / uint64(info.BlockSize)
	if blocks > maxUint64/uint64(info.TypeSize) {
		return 0, false
	}
	return blocks * uint64(info.TypeSize), true
}

const maxUint64 = ^uint64(0)

// fileTypeNames are the llama_ftype values of general.file_type, named as
// in llama.h without the LLAMA_FTYPE_ prefix.
var fileTypeNames = map[uint64]string{
	0:  "ALL_F32",
	1:  "MOSTLY_F16",
	2:  "MOSTLY_Q4_0",
	3:  "MOSTLY_Q4_1",
	4:  "MOSTLY_Q4_1_SOME_F16",
	5:  "MOSTLY_Q4_2",
	6:  "MOSTLY_Q4_3",
	7:  "MOSTLY_Q8_0",
	8:  "MOSTLY_Q5_0",
	9:  "MOSTLY_Q5_1",
	10: "MOSTLY_Q2_K",
	11: "MOSTLY_Q3_K_S",
	12: "MOSTLY_Q3_K_M",
	13: "MOSTLY_Q3_K_L",
	14: "MOSTLY_Q4_K_S",
	15: "MOSTLY_Q4_K_M",
	16: "MOSTLY_Q5_K_S",
	17: "MOSTLY_Q5_K_M",
	18: "MOSTLY_Q6_K",
	19: "MOSTLY_IQ2_XXS",
	20: "MOSTLY_IQ2_XS",
	21: "MOSTLY_Q2_K_S",
	22: "MOSTLY_IQ3_XS",
	23: "MOSTLY_IQ3_XXS",
	24: "MOSTLY_IQ1_S",
	25: "MOSTLY_IQ4_NL",
	26: "MOSTLY_IQ3_S",
	27: "MOSTLY_IQ3_M",
	28: "MOSTLY_IQ2_S",
	29: "MOSTLY_IQ2_M",
	30: "MOSTLY_IQ4_XS",
	31: "MOSTLY_IQ1_M",
	32: "MOSTLY_BF16",
	33: "MOSTLY_Q4_0_4_4",
	34: "MOSTLY_Q4_0_4_8",
	35: "MOSTLY_Q4_0_8_8",
	36: "MOSTLY_TQ1_0",
	37: "MOSTLY_TQ2_0",
	38: "MOSTLY_MXFP4_MOE",
	39: "MOSTLY_NVFP4",
	40: "MOSTLY_Q1_0",
}

// FileTypeName returns the llama_ftype name of a general.file_type value,
// e.g. "MOSTLY_F16" for 1, or "UNKNOWN_N" for a value it does not know.
func FileTypeName(ft uint64) string {
	if name, ok := fileTypeNames[ft]; ok {
		return name
	}
	return fmt.Sprintf("UNKNOWN_%d", ft)
}
