package archive

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/rigorbench/rigor/internal/gitsrc"
)

// KindSource is an engine's git source at a locked commit.
const KindSource = "source"

// SourceTag is the tag of the source artifact of commit.
func SourceTag(commit string) string { return Tag(KindSource, strings.ToLower(commit)) }

// SourceConfig is the config of a source artifact: the repository as the
// lock names it, the commit the bundle holds, and the patches beside it.
type SourceConfig struct {
	Repo    string       `json:"repo"`
	Commit  string       `json:"commit"`
	Bundle  SourceFile   `json:"bundle"`
	Patches []SourceFile `json:"patches"`
}

// SourceFile is a layer of a source artifact: the bundle, or a patch by
// the path the lock gives it and the sha256 the lock holds.
type SourceFile struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
	// File is where this machine keeps it (not archived).
	File string `json:"-"`
}

// PushSource archives the git source of commit under [SourceTag]: a git
// bundle of the commit made from mirror (git's own `git bundle create`),
// and each patch, content-addressed by the sha256 the lock holds (a patch
// file whose bytes differ is a [*ChangedError], not archived). repo is the
// source as the lock names it. An artifact already there is completed with
// the patches it lacks (another experiment may patch the same commit
// otherwise); sent says whether anything was sent.
func (a *Archive) PushSource(ctx context.Context, repo, mirror, commit string, patches []SourceFile, tmpDir string, progress func(int64)) (sent bool, size int64, err error) {
	commit = strings.ToLower(commit)
	tag := SourceTag(commit)
	what := fmt.Sprintf("source %.12s (%.19s)", commit, tag)
	cfg := SourceConfig{Repo: repo, Commit: commit, Patches: []SourceFile{}}
	var layers []ocispec.Descriptor
	have, err := a.HasArtifact(ctx, tag)
	if err != nil {
		return false, 0, err
	}
	if have {
		art, old, err := a.fetchSource(ctx, commit)
		if err != nil {
			return false, 0, err
		}
		cfg, layers = *old, art.Layers
	} else {
		f, err := os.CreateTemp(tmpDir, ".rigor-archive-*.bundle")
		if err != nil {
			return false, 0, err
		}
		name := f.Name()
		f.Close()
		os.Remove(name)
		defer os.Remove(name)
		if err := gitsrc.Bundle(ctx, mirror, commit, name); err != nil {
			return false, 0, fmt.Errorf("%s: %w", what, err)
		}
		sha, n, err := gitsrc.HashFile(name)
		if err != nil {
			return false, 0, err
		}
		if _, err := a.PushFile(ctx, what, name, MediaTypeGitBundle, sha, n, progress); err != nil {
			return false, 0, err
		}
		cfg.Bundle = SourceFile{Path: commit + ".bundle", SHA256: sha, Size: n}
		layers = append(layers, Layer(MediaTypeGitBundle, cfg.Bundle.Path, sha, n))
		size += n
	}
	added := 0
	for _, p := range patches {
		if hasPatch(cfg.Patches, p.SHA256) {
			continue
		}
		pw := fmt.Sprintf("patch %s of %s", p.Path, what)
		if got, _, err := gitsrc.HashFile(p.File); err != nil {
			return false, 0, fmt.Errorf("%s: %w", pw, err)
		} else if !strings.EqualFold(got, p.SHA256) {
			return false, 0, &ChangedError{What: pw, Want: p.SHA256, Got: got}
		}
		if _, err := a.PushFile(ctx, pw, p.File, MediaTypePatch, p.SHA256, p.Size, nil); err != nil {
			return false, 0, err
		}
		cfg.Patches = append(cfg.Patches, SourceFile{Path: p.Path, SHA256: p.SHA256, Size: p.Size})
		layers = append(layers, Layer(MediaTypePatch, p.Path, p.SHA256, p.Size))
		size += p.Size
		added++
	}
	if have && added == 0 {
		return false, 0, nil
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		return false, 0, err
	}
	art := Artifact{Tag: tag, ConfigType: MediaTypeSource, Config: b, Layers: layers}
	if err := a.PushArtifact(ctx, art); err != nil {
		return false, 0, err
	}
	return true, size, nil
}

func hasPatch(ps []SourceFile, sha string) bool {
	for _, p := range ps {
		if strings.EqualFold(p.SHA256, sha) {
			return true
		}
	}
	return false
}

// SourceError is an archived source that is not what the lock pins: its
// config names another commit, or it lacks a layer the lock needs.
type SourceError struct {
	Tag string
	Msg string
}

func (e *SourceError) Error() string {
	return fmt.Sprintf("the archived source %.19s: %s: refused", e.Tag, e.Msg)
}

// Hint says what to do.
func (e *SourceError) Hint() string {
	return "push the source again from a machine whose git mirror holds the locked commit (rigor archive push)"
}

// fetchSource reads the artifact of commit and checks that its config is
// a source config of commit whose layers are what the config says.
func (a *Archive) fetchSource(ctx context.Context, commit string) (*Artifact, *SourceConfig, error) {
	tag := SourceTag(commit)
	art, err := a.FetchArtifact(ctx, tag)
	if err != nil {
		return nil, nil, err
	}
	var cfg SourceConfig
	if art.ConfigType != MediaTypeSource {
		return nil, nil, &SourceError{Tag: tag, Msg: fmt.Sprintf("its config is %s, not %s", art.ConfigType, MediaTypeSource)}
	}
	if err := json.Unmarshal(art.Config, &cfg); err != nil {
		return nil, nil, &SourceError{Tag: tag, Msg: "its config: " + err.Error()}
	}
	if !strings.EqualFold(cfg.Commit, commit) {
		return nil, nil, &SourceError{Tag: tag, Msg: fmt.Sprintf("its config names commit %.12s, not the locked %.12s", cfg.Commit, commit)}
	}
	if len(art.Layers) == 0 || LayerSHA256(art.Layers[0]) != cfg.Bundle.SHA256 || art.Layers[0].MediaType != MediaTypeGitBundle {
		return nil, nil, &SourceError{Tag: tag, Msg: "its first layer is not the git bundle its config names"}
	}
	if cfg.Patches == nil {
		cfg.Patches = []SourceFile{}
	}
	return art, &cfg, nil
}

// SourceHas says whether the archive holds the source of commit with every
// patch of patches (by sha256): the patches it lacks are listed.
func (a *Archive) SourceHas(ctx context.Context, commit string, patches []SourceFile) (ok bool, lacking []string, err error) {
	has, err := a.HasArtifact(ctx, SourceTag(commit))
	if err != nil || !has {
		return false, nil, err
	}
	_, cfg, err := a.fetchSource(ctx, commit)
	if err != nil {
		return false, nil, err
	}
	for _, p := range patches {
		if !hasPatch(cfg.Patches, p.SHA256) {
			lacking = append(lacking, p.Path)
		}
	}
	sort.Strings(lacking)
	return len(lacking) == 0, lacking, nil
}

// FetchSource brings the archived source of commit into the cache's git
// mirror of url (see gitsrc.ImportBundle): the bundle is fetched into
// tmpDir and checked against its digest, and it must hold exactly commit.
// Each patch of patches whose File is missing is written there from the
// archive, checked against the lock's sha256. Anything that is not what
// the lock pins is refused, naming the artifact; a source the archive does
// not hold is [ErrNotArchived].
func (a *Archive) FetchSource(ctx context.Context, cache, url, commit string, patches []SourceFile, tmpDir string, progress func(int64)) error {
	commit = strings.ToLower(commit)
	tag := SourceTag(commit)
	what := fmt.Sprintf("source %.12s (%.19s)", commit, tag)
	art, cfg, err := a.fetchSource(ctx, commit)
	if err != nil {
		return err
	}
	for _, p := range patches {
		if _, err := os.Stat(p.File); err == nil {
			continue
		}
		var layer *ocispec.Descriptor
		for i := range art.Layers {
			if art.Layers[i].MediaType == MediaTypePatch && strings.EqualFold(LayerSHA256(art.Layers[i]), p.SHA256) {
				layer = &art.Layers[i]
			}
		}
		if layer == nil {
			return &SourceError{Tag: tag, Msg: fmt.Sprintf("it holds no patch %s of sha256 %.12s", p.Path, p.SHA256)}
		}
		if err := a.FetchFile(ctx, fmt.Sprintf("patch %s of %s", p.Path, what), p.SHA256, layer.Size, p.File, 0o644, nil); err != nil {
			return err
		}
	}
	bundle := filepath.Join(tmpDir, ".rigor-archive-"+commit[:16]+".bundle")
	defer os.Remove(bundle)
	if err := a.FetchFile(ctx, what, cfg.Bundle.SHA256, cfg.Bundle.Size, bundle, 0o600, progress); err != nil {
		return err
	}
	if _, err := gitsrc.ImportBundle(ctx, cache, url, bundle, commit); err != nil {
		var be *gitsrc.BundleError
		if errors.As(err, &be) {
			return &SourceError{Tag: tag, Msg: be.Error()}
		}
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// RestoreSource implements gitsrc.SourceArchive: the archive's source of
// commit into the cache's mirror of url. A source the archive does not
// hold, or an archive that cannot be reached, is no substitute (warned
// about through Warn); one that is not the locked commit is an error.
func (s *Substituter) RestoreSource(ctx context.Context, cache, url, commit string) (bool, error) {
	commit = strings.ToLower(commit)
	return s.bring(ctx, SourceTag(commit), KindSource, commit, fmt.Sprintf("source %.12s", commit), func() error {
		return s.A.FetchSource(ctx, cache, url, commit, nil, s.TmpDir, nil)
	})
}

// Restored says whether this substituter brought the source of commit.
func (s *Substituter) Restored(commit string) bool {
	if s == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.got[SourceTag(commit)]
}
