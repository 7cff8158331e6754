package results

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// A secret value (HF_TOKEN passed through passEnv, say) never reaches a
// record, yet a rerun months later should say whether it changed: a run
// that was fast with one account's token and slow with another's is not a
// regression of the engine. So a record keeps, instead of the value, a
// fingerprint: HMAC-SHA256 of the value under a key that never leaves the
// machine (<rigor cache>/fingerprint.key, 32 random bytes, mode 0600),
// cut to 12 hex digits, with the first 8 hex digits of the key's own
// SHA-256 naming the key. A plain hash would let anyone holding the
// results repository test guesses offline (a short password, a token
// leaked elsewhere); with the key they cannot. Two records fingerprinted
// under the same key compare; under different keys (two machines) they
// cannot be compared, and the key ids say so.

// FingerprintKeyFile is the name of the key file in rigor's cache.
const FingerprintKeyFile = "fingerprint.key"

// Fingerprinter computes keyed fingerprints of secret values.
type Fingerprinter struct {
	key []byte
	id  string
}

// NewFingerprinter returns a fingerprinter with the given key (at least
// 16 bytes).
func NewFingerprinter(key []byte) (*Fingerprinter, error) {
	if len(key) < 16 {
		return nil, errors.New("fingerprint key: shorter than 16 bytes")
	}
	sum := sha256.Sum256(key)
	return &Fingerprinter{key: append([]byte(nil), key...), id: hex.EncodeToString(sum[:4])}, nil
}

// LoadFingerprinter reads the key in the cache directory, creating it
// (32 random bytes, mode 0600) when there is none.
func LoadFingerprinter(cache string) (*Fingerprinter, error) {
	p := filepath.Join(cache, FingerprintKeyFile)
	key, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		key = make([]byte, 32)
		if _, err := rand.Read(key); err != nil {
			return nil, fmt.Errorf("creating fingerprint key: %w", err)
		}
		if err := os.MkdirAll(cache, 0o755); err != nil {
			return nil, fmt.Errorf("creating fingerprint key: %w", err)
		}
		f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) {
			// Another rigor made it first: use theirs.
			return LoadFingerprinter(cache)
		}
		if err != nil {
			return nil, fmt.Errorf("creating fingerprint key: %w", err)
		}
		_, werr := f.Write(key)
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			os.Remove(p)
			return nil, fmt.Errorf("creating fingerprint key %s: %w", p, werr)
		}
	} else if err != nil {
		return nil, fmt.Errorf("reading fingerprint key: %w", err)
	}
	return NewFingerprinter(key)
}

// Redacted returns what a record holds in place of the secret value v:
// "<redacted fp:1a2b3c4d5e6f/9f8e7d6c>", the fingerprint, then the id of
// the key it was made with.
func (f *Fingerprinter) Redacted(v string) string {
	m := hmac.New(sha256.New, f.key)
	m.Write([]byte(v))
	return fmt.Sprintf("<redacted fp:%s/%s>", hex.EncodeToString(m.Sum(nil))[:12], f.id)
}

// isRedacted reports whether v is a redacted value, plain or fingerprinted.
func isRedacted(v string) bool {
	return v == Redacted || strings.HasPrefix(v, "<redacted fp:") && strings.HasSuffix(v, ">")
}
