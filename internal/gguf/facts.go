package gguf

import "sort"

// Facts are the properties of a model file that a lock or result record
// shows beside its hash, so a reader sees what the hash is.
type Facts struct {
	// Architecture is general.architecture, e.g. "llama".
	Architecture string
	// Name is general.name, or "" when absent.
	Name string
	// ParameterCount is the sum of the element counts of all tensors (what
	// llama-bench reports as model_n_params).
	ParameterCount uint64
	// FileType is general.file_type (a llama_ftype), or -1 when absent;
	// FileTypeName is its name, e.g. "MOSTLY_F16", or "" when absent.
	FileType     int64
	FileTypeName string
	// QuantMix counts tensors and bytes per tensor type name, e.g. "F32".
	QuantMix map[string]QuantShare
	// Hyperparameters from "<arch>.…" keys; 0 when absent. HeadCount and
	// HeadCountKV are the largest value when the file gives one per layer.
	ContextLength   uint64
	BlockCount      uint64
	EmbeddingLength uint64
	HeadCount       uint64
	HeadCountKV     uint64
	// VocabSize is <arch>.vocab_size, or else the length of
	// tokenizer.ggml.tokens.
	VocabSize uint64
	// TokenCount is the length of tokenizer.ggml.tokens and TokensSHA256
	// the digest of its strings in order ([Array.SHA256]): two models
	// whose next-token distributions can be compared have the same. 0 and
	// "" when the file has no token list.
	TokenCount   uint64
	TokensSHA256 string
	// TensorDataBytes is the total size of the tensors whose type is known
	// (what llama-bench reports as model_size).
	TensorDataBytes uint64
	// UnknownTypes counts tensors whose type this package cannot size;
	// their bytes are missing from TensorDataBytes and QuantMix.
	UnknownTypes int
}

// QuantShare is the part of a model stored in one tensor type.
type QuantShare struct {
	Tensors int
	Bytes   uint64
}

// Facts summarizes the file's header.
func (f *File) Facts() Facts {
	fa := Facts{FileType: -1, QuantMix: make(map[string]QuantShare)}
	fa.Architecture, _ = f.Str("general.architecture")
	fa.Name, _ = f.Str("general.name")
	if ft, ok := f.Uint("general.file_type"); ok {
		fa.FileType = int64(ft)
		fa.FileTypeName = FileTypeName(ft)
	}
	arch := fa.Architecture
	hp := func(key string) uint64 {
		kv, ok := f.KV(arch + "." + key)
		if !ok {
			return 0
		}
		if a, isArray := kv.Value.(Array); isArray {
			var m uint64
			for _, v := range a.Values {
				if u, ok := asUint(v); ok {
					m = max(m, u)
				}
			}
			return m
		}
		u, _ := asUint(kv.Value)
		return u
	}
	if arch != "" {
		fa.ContextLength = hp("context_length")
		fa.BlockCount = hp("block_count")
		fa.EmbeddingLength = hp("embedding_length")
		fa.HeadCount = hp("attention.head_count")
		fa.HeadCountKV = hp("attention.head_count_kv")
		fa.VocabSize = hp("vocab_size")
	}
	if kv, ok := f.KV("tokenizer.ggml.tokens"); ok {
		if a, ok := kv.Value.(Array); ok {
			fa.TokenCount, fa.TokensSHA256 = a.Len, a.SHA256
		}
	}
	if fa.VocabSize == 0 {
		fa.VocabSize = fa.TokenCount
	}
	for _, t := range f.Tensors {
		fa.ParameterCount = addSat(fa.ParameterCount, t.Elements())
		n, ok := t.Bytes()
		if !ok {
			fa.UnknownTypes++
		}
		s := fa.QuantMix[t.Type.String()]
		s.Tensors++
		s.Bytes = addSat(s.Bytes, n)
		fa.QuantMix[t.Type.String()] = s
		fa.TensorDataBytes = addSat(fa.TensorDataBytes, n)
	}
	return fa
}

// Map returns the facts as a JSON-friendly map with stable camelCase keys
// (every key present, whatever the file holds), for result records and
// lockfiles. quantMix maps a type name to {"tensors", "bytes"}.
func (fa Facts) Map() map[string]any {
	mix := make(map[string]any, len(fa.QuantMix))
	for name, s := range fa.QuantMix {
		mix[name] = map[string]any{"tensors": s.Tensors, "bytes": s.Bytes}
	}
	return map[string]any{
		"architecture":    fa.Architecture,
		"name":            fa.Name,
		"parameterCount":  fa.ParameterCount,
		"fileType":        fa.FileType,
		"fileTypeName":    fa.FileTypeName,
		"quantMix":        mix,
		"contextLength":   fa.ContextLength,
		"blockCount":      fa.BlockCount,
		"embeddingLength": fa.EmbeddingLength,
		"headCount":       fa.HeadCount,
		"headCountKV":     fa.HeadCountKV,
		"vocabSize":       fa.VocabSize,
		"tokenCount":      fa.TokenCount,
		"tokensSha256":    fa.TokensSHA256,
		"tensorDataBytes": fa.TensorDataBytes,
		"unknownTypes":    fa.UnknownTypes,
	}
}

// QuantTypes returns the tensor type names of the mix, largest share of
// bytes first (ties by name).
func (fa Facts) QuantTypes() []string {
	names := make([]string, 0, len(fa.QuantMix))
	for n := range fa.QuantMix {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool {
		a, b := fa.QuantMix[names[i]], fa.QuantMix[names[j]]
		if a.Bytes != b.Bytes {
			return a.Bytes > b.Bytes
		}
		return names[i] < names[j]
	})
	return names
}

// addSat adds without wrapping around: a hostile header can claim many
// huge tensors, and a saturated sum is at least not misleadingly small.
func addSat(a, b uint64) uint64 {
	if a > maxUint64-b {
		return maxUint64
	}
	return a + b
}
