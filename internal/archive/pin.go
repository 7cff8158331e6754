package archive

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/rigorbench/rigor/internal/lock"
)

// KindPin is the pin of a request: what a lock resolved a git ref, a hub
// revision or an npm range to.
const KindPin = "pin"

// MediaTypePin is the config of a pin artifact: a [lock.Pin] as JSON.
const MediaTypePin = "application/vnd.rigor.pin.v1+json"

// PinTag is the tag of the pin of the request key: pin-<sha256 of the
// key>, since a key (a URL, globs) is not a tag.
func PinTag(key string) string {
	sum := sha256.Sum256([]byte(key))
	return Tag(KindPin, hex.EncodeToString(sum[:]))
}

// PinsOf are the pins a lock entry gives its requests: a git ref's commit
// (with the source artifact), a hub revision's files (with each model
// file's artifact), an npm range's version (the caller adds the install
// artifacts, which only the engine knows), a hub corpus's file (with its
// artifact, model-<sha256> as a hub model file's). A hub model read from
// a local path gives its revision's commit (with its local files'
// artifacts); one with a file the lock holds no sha256 of gives none.
func PinsOf(e *lock.Entry) []lock.Pin {
	var out []lock.Pin
	eng := e.Engine
	if eng.Requested.Git != "" && eng.Commit != "" {
		out = append(out, lock.Pin{Request: lock.GitKey(eng.Requested.Git, eng.Requested.Ref), Commit: eng.Commit, Kind: eng.Kind,
			Artifacts: []string{SourceTag(eng.Commit)}})
	}
	if eng.NPM != nil && eng.Requested.NPM != "" && eng.NPM.Platform != nil {
		out = append(out, lock.Pin{Request: lock.NPMKey(eng.NPM.Package, eng.Requested.NPM, eng.NPM.Platform.Package), NPM: eng.NPM,
			Artifacts: []string{}})
	}
	if p := hubPin(e.Model); p != nil {
		out = append(out, *p)
	}
	if m := e.Model; m.Requested.HF != "" && m.Requested.Path != "" && m.Commit != "" {
		// A local copy of a hub repo: the revision's commit, with the
		// local files the archive keeps beside it.
		p := lock.Pin{Request: lock.RevisionKey(m.Requested.HF, m.Requested.Revision), Commit: m.Commit, Artifacts: []string{}}
		for _, f := range m.Files {
			p.Artifacts = append(p.Artifacts, ModelTag(f.SHA256))
		}
		out = append(out, p)
	}
	if c := e.Corpus; c != nil && c.HF != "" && c.Commit != "" && c.SHA256 != "" {
		out = append(out, lock.Pin{Request: lock.CorpusKey(c.HF, c.Revision, c.Path), Commit: c.Commit,
			Files: []lock.FileLock{{Path: c.Path, Size: c.Size, SHA256: c.SHA256, BlobID: c.BlobID}}, Artifacts: []string{ModelTag(c.SHA256)}})
	}
	return out
}

// hubPin is the pin of a hub model's request, nil for a model read from
// a local path or with a file the lock holds no sha256 of.
func hubPin(m lock.ModelLock) *lock.Pin {
	if m.Requested.HF == "" || m.Requested.Path != "" || m.Commit == "" || len(m.Files) == 0 {
		return nil
	}
	p := lock.Pin{Request: lock.HubKey(m.Requested.HF, m.Requested.Revision, m.Requested.Files), Commit: m.Commit, Files: m.Files}
	for _, f := range m.Files {
		if f.SHA256 == "" {
			return nil
		}
		p.Artifacts = append(p.Artifacts, ModelTag(f.SHA256))
	}
	return &p
}

// PushPin archives p under [PinTag] once the archive holds every artifact
// it names (missing lists those it lacks, and nothing is pushed). A pin
// already there with the same facts is not sent again (sent false); one
// with other facts is replaced: the newest lock pushed is the pin.
func (a *Archive) PushPin(ctx context.Context, p lock.Pin) (sent bool, missing []string, err error) {
	for _, t := range p.Artifacts {
		ok, err := a.HasArtifact(ctx, t)
		if err != nil {
			return false, nil, err
		}
		if !ok {
			missing = append(missing, t)
		}
	}
	if len(missing) > 0 {
		return false, missing, nil
	}
	b, err := json.Marshal(p)
	if err != nil {
		return false, nil, err
	}
	tag := PinTag(p.Request)
	if old, err := a.FetchArtifact(ctx, tag); err == nil && old.ConfigType == MediaTypePin && bytes.Equal(old.Config, b) {
		return false, nil, nil
	} else if err != nil && !errors.Is(err, ErrNotArchived) {
		return false, nil, err
	}
	return true, nil, a.PushArtifact(ctx, Artifact{Tag: tag, ConfigType: MediaTypePin, Config: b})
}

// Pin returns the archived pin of the request key, nil when the archive
// holds none (a lock.Archive). A pin that is not one of key, or whose
// artifacts the archive does not hold, is an error naming its tag.
func (a *Archive) Pin(ctx context.Context, key string) (*lock.Pin, error) {
	tag := PinTag(key)
	art, err := a.FetchArtifact(ctx, tag)
	if errors.Is(err, ErrNotArchived) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if art.ConfigType != MediaTypePin {
		return nil, fmt.Errorf("%.20s…: its config is %s, not %s: refused", tag, art.ConfigType, MediaTypePin)
	}
	p, err := lock.DecodePin(art.Config, key)
	if err != nil {
		return nil, fmt.Errorf("%.20s…: %v: refused", tag, err)
	}
	for _, t := range p.Artifacts {
		ok, err := a.HasArtifact(ctx, t)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, fmt.Errorf("it holds the pin of %s but not its content %s: refused", key, t)
		}
	}
	return p, nil
}

// Pin is the archive's pin of key (a lock.Archive, with RestoreSource).
func (s *Substituter) Pin(ctx context.Context, key string) (*lock.Pin, error) {
	return s.A.Pin(ctx, key)
}

// String is the archive's address.
func (s *Substituter) String() string { return s.A.Addr.String() }

var _ lock.Archive = (*Substituter)(nil)
