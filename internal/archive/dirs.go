package archive

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// Kinds of directory artifacts: a build cache entry, an engine install.
const (
	KindBuild   = "build"
	KindInstall = "install"
)

// Tag is the tag of an artifact of kind and key ("build-<id>").
func Tag(kind, key string) string { return kind + "-" + key }

func configType(kind string) string {
	if kind == KindBuild {
		return MediaTypeBuildConfig
	}
	return MediaTypeInstall
}

// skipInBuild leaves out of a build's archive what only compiling
// needed: cmake's object files and per-target folders and git metadata.
// What runs (programs, libraries, the generated build-info) is kept.
func skipInBuild(rel string, d fs.DirEntry) bool {
	name := d.Name()
	if d.IsDir() {
		return name == "CMakeFiles" || name == ".git"
	}
	return strings.HasSuffix(name, ".o")
}

// PushDir archives the directory dir (a complete build cache entry or
// engine install, its marker file named marker) as one tar layer under
// Tag(kind, key), with the marker as the config. An artifact already there
// is not sent again: sent reports whether this call pushed it. The tar is
// written to a temporary file in tmpDir (hashed while written), then
// streamed to the registry.
func (a *Archive) PushDir(ctx context.Context, kind, key, dir, marker, tmpDir string, progress func(int64)) (sent bool, size int64, err error) {
	tag := Tag(kind, key)
	if ok, err := a.HasArtifact(ctx, tag); err != nil || ok {
		return false, 0, err
	}
	cfg, err := os.ReadFile(filepath.Join(dir, marker))
	if err != nil {
		return false, 0, fmt.Errorf("%s %.12s: %w", kind, key, err)
	}
	f, err := os.CreateTemp(tmpDir, ".rigor-archive-*.tar")
	if err != nil {
		return false, 0, err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	h := sha256.New()
	var skip func(string, fs.DirEntry) bool
	if kind == KindBuild {
		skip = skipInBuild
	}
	if err := writeTar(io.MultiWriter(f, h), dir, skip); err != nil {
		return false, 0, fmt.Errorf("%s %.12s: %w", kind, key, err)
	}
	st, err := f.Stat()
	if err != nil {
		return false, 0, err
	}
	sha := hex.EncodeToString(h.Sum(nil))
	what := fmt.Sprintf("%s %.12s (%s)", kind, key, tag)
	if _, err := a.PushFile(ctx, what, f.Name(), MediaTypeInstallTar, sha, st.Size(), progress); err != nil {
		return false, 0, err
	}
	art := Artifact{Tag: tag, ConfigType: configType(kind), Config: cfg,
		Layers: []ocispec.Descriptor{Layer(MediaTypeInstallTar, tag+".tar", sha, st.Size())}}
	if err := a.PushArtifact(ctx, art); err != nil {
		return false, 0, err
	}
	return true, st.Size(), nil
}

// FetchDir brings the artifact Tag(kind, key) into dir, an empty
// directory: its tar layer is fetched into tmpDir, checked against its
// digest (a mismatch is a [*ChangedError] naming the artifact), and
// unpacked. An artifact the archive does not hold is [ErrNotArchived].
// The caller checks what the marker records before using dir.
func (a *Archive) FetchDir(ctx context.Context, kind, key, dir, tmpDir string, progress func(int64)) error {
	tag := Tag(kind, key)
	art, err := a.FetchArtifact(ctx, tag)
	if err != nil {
		return err
	}
	if len(art.Layers) != 1 {
		return fmt.Errorf("archive %s: %s has %d layers, want one tar", a.Addr, tag, len(art.Layers))
	}
	l := art.Layers[0]
	tmp := filepath.Join(tmpDir, ".rigor-archive-"+l.Digest.Encoded()[:16]+".tar")
	defer os.Remove(tmp)
	what := fmt.Sprintf("%s %.12s (%s)", kind, key, tag)
	if err := a.FetchFile(ctx, what, l.Digest.Encoded(), l.Size, tmp, 0o600, progress); err != nil {
		return err
	}
	f, err := os.Open(tmp)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := readTar(f, dir); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// writeTar writes dir's regular files, folders and symlinks, in name
// order, with their modes and no owners or times, so that one tree gives
// one tar.
func writeTar(w io.Writer, dir string, skip func(string, fs.DirEntry) bool) error {
	tw := tar.NewWriter(w)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil || rel == "." {
			return err
		}
		if skip != nil && skip(rel, d) {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		hdr := &tar.Header{Name: filepath.ToSlash(rel), Mode: int64(info.Mode().Perm()), Format: tar.FormatPAX}
		switch {
		case d.IsDir():
			hdr.Typeflag, hdr.Name = tar.TypeDir, hdr.Name+"/"
		case info.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			hdr.Typeflag, hdr.Linkname = tar.TypeSymlink, target
		case info.Mode().IsRegular():
			hdr.Typeflag, hdr.Size = tar.TypeReg, info.Size()
		default:
			return nil // sockets, fifos: nothing a program loads
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if hdr.Typeflag == tar.TypeReg {
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			_, err = io.Copy(tw, f)
			f.Close()
			return err
		}
		return nil
	})
	if err != nil {
		return err
	}
	return tw.Close()
}

// readTar unpacks a tar written by writeTar into dir. A name or a link
// that would leave dir is refused.
func readTar(r io.Reader, dir string) error {
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		name := filepath.FromSlash(strings.TrimSuffix(hdr.Name, "/"))
		if !filepath.IsLocal(name) {
			return fmt.Errorf("the archive names %q, outside its folder: refused", hdr.Name)
		}
		p := filepath.Join(dir, name)
		mode := fs.FileMode(hdr.Mode).Perm()
		switch hdr.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(p, mode|0o700); err != nil {
				return err
			}
		case tar.TypeSymlink:
			target := hdr.Linkname
			if filepath.IsAbs(target) || !filepath.IsLocal(filepath.Join(filepath.Dir(name), target)) {
				return fmt.Errorf("the archive's link %q points at %q, outside its folder: refused", hdr.Name, target)
			}
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
			if err := os.Symlink(target, p); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
			f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
			if err != nil {
				return err
			}
			_, err = io.Copy(f, tr)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		default:
			return fmt.Errorf("the archive holds %q of tar type %q: refused", hdr.Name, hdr.Typeflag)
		}
	}
}

// ModelConfig is the config of a model file's artifact, shaped as Docker
// Model Runner's (format, architecture) with rigor's facts beside.
type ModelConfig struct {
	Config struct {
		Format       string `json:"format,omitempty"`
		Architecture string `json:"architecture,omitempty"`
		Size         string `json:"size,omitempty"`
	} `json:"config"`
	RootFS struct {
		Type    string   `json:"type"`
		DiffIDs []string `json:"diff_ids"`
	} `json:"rootfs"`
	// Rigor says what the file is to rigor: its name and size.
	Rigor struct {
		Path string `json:"path"`
		Size int64  `json:"size"`
	} `json:"rigor"`
}

// ModelTag is the tag of the model file whose sha256 is sha.
func ModelTag(sha string) string { return "model-" + sha }

// PushModelFile archives one model file, content-addressed by the sha256
// the lock holds; a GGUF gets Docker Model Runner's media types.
func (a *Archive) PushModelFile(ctx context.Context, name, path, sha string, size int64, arch string, progress func(int64)) (sent bool, err error) {
	tag := ModelTag(sha)
	// A tag that holds other bytes (written by another tool, or damaged)
	// is pushed again: the artifact rigor writes replaces it.
	if held, differs, err := a.ModelHas(ctx, sha, size); err != nil || held && differs == "" {
		return false, err
	}
	mt := MediaTypeFile
	var cfg ModelConfig
	if strings.HasSuffix(strings.ToLower(name), ".gguf") {
		mt = MediaTypeGGUF
		cfg.Config.Format, cfg.Config.Architecture = "gguf", arch
	}
	cfg.Config.Size = fmt.Sprintf("%d", size)
	cfg.RootFS.Type, cfg.RootFS.DiffIDs = "rootfs", []string{"sha256:" + sha}
	cfg.Rigor.Path, cfg.Rigor.Size = name, size
	what := fileWhat(name, tag)
	sent, err = a.PushFile(ctx, what, path, mt, sha, size, progress)
	if err != nil {
		return false, err
	}
	b, _ := json.Marshal(cfg)
	art := Artifact{Tag: tag, ConfigType: MediaTypeModelConfig, Config: b,
		Layers: []ocispec.Descriptor{Layer(mt, filepath.Base(name), sha, size)}}
	return true, a.PushArtifact(ctx, art)
}

// FetchModelFile writes the archived model file of sha256 sha to dest,
// refusing bytes that do not hash to sha. [ErrNotArchived] when the
// archive does not hold it.
func (a *Archive) FetchModelFile(ctx context.Context, name, sha string, size int64, dest string, progress func(int64)) error {
	tag := ModelTag(sha)
	if held, differs, err := a.ModelHas(ctx, sha, size); err != nil {
		return err
	} else if !held {
		return fmt.Errorf("%s: %w", strings.TrimSuffix(fileWhat(name, ""), " ()"), ErrNotArchived)
	} else if differs != "" {
		return &Error{Op: fileWhat(name, tag), Err: fmt.Errorf("%s: refused", differs),
			Advice: "the archive holds other bytes under the lock's tag; push them again from a machine whose cache holds the locked bytes (rigor archive push)"}
	}
	return a.FetchFile(ctx, fileWhat(name, tag), sha, size, dest, 0o644, progress)
}

// fileWhat names the file name under tag in messages: "model file …",
// or the name as it is when it says what it is ("corpus org/texts/c.txt":
// a hub corpus is archived as a hub model file is, by its sha256).
func fileWhat(name, tag string) string {
	if len(tag) > 18 {
		tag = tag[:18]
	}
	if strings.HasPrefix(name, "corpus ") {
		return fmt.Sprintf("%s (%s)", name, tag)
	}
	return fmt.Sprintf("model file %s (%s)", name, tag)
}

// ModelHas says whether the archive holds an artifact under the tag of
// the model file of sha256 sha (held), and, when it does, what of it is
// not the lock's file (differs, "" when nothing): a layer of another
// sha256 or size, or a layer whose blob the registry lacks. A tag is a
// name anyone with push rights can move; the layer's digest is the proof.
func (a *Archive) ModelHas(ctx context.Context, sha string, size int64) (held bool, differs string, err error) {
	art, err := a.FetchArtifact(ctx, ModelTag(sha))
	if errors.Is(err, ErrNotArchived) {
		return false, "", nil
	}
	if err != nil {
		return false, "", err
	}
	var others []string
	for _, l := range art.Layers {
		if LayerSHA256(l) != sha {
			others = append(others, fmt.Sprintf("sha256 %.12s", LayerSHA256(l)))
			continue
		}
		if l.Size != size {
			return true, fmt.Sprintf("its layer has %d bytes, but the lock holds %d", l.Size, size), nil
		}
		ok, err := a.HasBlob(ctx, sha, size)
		if err != nil || !ok {
			return err == nil, "the registry lacks the blob of its layer", err
		}
		return true, "", nil
	}
	if len(others) == 0 {
		others = []string{"no layer"}
	}
	return true, fmt.Sprintf("the artifact under its tag holds %s, but the lock holds %.12s", strings.Join(others, ", "), sha), nil
}

// Check says which of tags the archive holds.
func (a *Archive) Check(ctx context.Context, tags []string) (map[string]bool, error) {
	out := map[string]bool{}
	sorted := append([]string(nil), tags...)
	sort.Strings(sorted)
	for _, t := range sorted {
		ok, err := a.HasArtifact(ctx, t)
		if err != nil {
			return nil, err
		}
		out[t] = ok
	}
	return out, nil
}
