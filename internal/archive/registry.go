// Package archive keeps every input a lock pins in an OCI registry, and
// brings it back: model files, engine installs, engine sources and built
// engines, so that a locked experiment reruns on a machine whose caches
// are empty and whose upstreams (the hub, npm, a git remote) are gone.
//
// An archive is one repository of any OCI registry, addressed as
// oci://host[:port]/repository. It holds one artifact (an OCI image
// manifest) per input, under a tag derived from what the lock pins:
//
//	model-<sha256>     one model file; a GGUF is shaped as Docker Model
//	                   Runner packages one (config
//	                   application/vnd.docker.ai.model.config.v0.1+json,
//	                   layer application/vnd.docker.ai.gguf.v3)
//	build-<build id>   a built engine: its programs and libraries, one
//	                   layer each, content-addressed by the sha256 its build
//	                   recorded; the build's marker is the config
//	install-<key>      an npm engine install (node-llama-cpp), one tar layer
//	source-<commit>    a git bundle of the locked commit, and its patches
//
// Every blob is content-addressed: a layer's digest is the sha256 the lock
// or the build recorded, so a push first asks whether the registry has it
// (HEAD) and sends only what is missing, and a pull hashes the bytes while
// it writes them and refuses a blob whose bytes are not its digest, naming
// the artifact. Files are streamed, never held in memory.
//
// Credentials come from the docker credential store conventions
// (config.json under DOCKER_CONFIG or ~/.docker, its credential helpers),
// through oras-go; the CLI passes the file's path. They are never part of
// the address, a record, a log or an error.
package archive

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/credentials"
	"oras.land/oras-go/v2/registry/remote/errcode"
	"oras.land/oras-go/v2/registry/remote/retry"
)

// Scheme starts every archive address.
const Scheme = "oci://"

// Media types of rigor's artifacts. Model files use Docker Model Runner's.
const (
	MediaTypeModelConfig = "application/vnd.docker.ai.model.config.v0.1+json"
	MediaTypeGGUF        = "application/vnd.docker.ai.gguf.v3"
	MediaTypeFile        = "application/vnd.rigor.file.v1"
	MediaTypeBuildConfig = "application/vnd.rigor.build.v1+json"
	MediaTypeBuildFile   = "application/vnd.rigor.build.file.v1"
	MediaTypeInstall     = "application/vnd.rigor.install.v1+json"
	MediaTypeInstallTar  = "application/vnd.rigor.install.v1.tar"
	MediaTypeSource      = "application/vnd.rigor.source.v1+json"
	MediaTypeGitBundle   = "application/vnd.rigor.git.bundle.v1"
	MediaTypePatch       = "application/vnd.rigor.patch.v1"

	// AnnotationPath is a layer's file path, as Docker Model Runner and
	// the CNCF model spec name it.
	AnnotationPath = "org.cncf.model.filepath"
)

// Address is a parsed archive address.
type Address struct {
	// Host is host[:port]; Repo the repository path.
	Host, Repo string
}

// String is the address as written: oci://host/repo.
func (a Address) String() string { return Scheme + a.Host + "/" + a.Repo }

// ParseAddress reads oci://host[:port]/repository. Credentials in the
// address are refused: they belong in the credential store.
func ParseAddress(s string) (Address, error) {
	rest, ok := strings.CutPrefix(s, Scheme)
	if !ok {
		return Address{}, fmt.Errorf("archive %q is not an oci:// address", redactAddress(s))
	}
	host, repo, _ := strings.Cut(rest, "/")
	if strings.Contains(host, "@") {
		return Address{}, fmt.Errorf("archive %q carries credentials in its address: they belong in the docker credential store (docker login, or ~/.docker/config.json)", redactAddress(s))
	}
	repo = strings.Trim(repo, "/")
	if host == "" || repo == "" {
		return Address{}, fmt.Errorf("archive %q needs a host and a repository: oci://host[:port]/repository", s)
	}
	if lower := strings.ToLower(repo); lower != repo {
		return Address{}, fmt.Errorf("archive %q is not a registry repository: a repository name is lowercase (oci://%s/%s)", s, host, lower)
	}
	if _, err := remote.NewRepository(host + "/" + repo); err != nil {
		return Address{}, fmt.Errorf("archive %q is not a registry repository: %v", s, err)
	}
	return Address{Host: host, Repo: repo}, nil
}

func redactAddress(s string) string {
	if i := strings.Index(s, "@"); i >= 0 {
		if j := strings.Index(s, "://"); j >= 0 && j < i {
			return s[:j+3] + "<redacted>" + s[i:]
		}
		return "<redacted>" + s[i:]
	}
	return s
}

// Loopback says whether the archive is on this machine: rigor talks plain
// HTTP to it (as docker does to a localhost registry), and --offline allows it.
func (a Address) Loopback() bool {
	h := a.Host
	if host, _, err := net.SplitHostPort(h); err == nil {
		h = host
	}
	h = strings.Trim(h, "[]")
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// Options configure [Open].
type Options struct {
	// DockerConfig is the docker config.json whose credentials (and
	// credential helpers) are used; "" uses none.
	DockerConfig string
	// HTTPClient replaces the default client (tests).
	HTTPClient *http.Client
	// StateDir keeps the state of uploads in progress, so that an
	// interrupted push of a large blob resumes ("" keeps none).
	StateDir string
}

// Archive is an open archive.
type Archive struct {
	Addr Address
	repo *remote.Repository
	// StateDir is Options.StateDir.
	StateDir string
	// Resumed, when set, is told when an upload resumes or starts again.
	Resumed ResumeFunc
	// cred is the docker credential store's lookup (nil without one).
	cred auth.CredentialFunc
}

// Open prepares the archive at addr; nothing is sent until it is used.
func Open(addr Address, opts Options) (*Archive, error) {
	repo, err := remote.NewRepository(addr.Host + "/" + addr.Repo)
	if err != nil {
		return nil, fmt.Errorf("archive %s: %w", addr, err)
	}
	repo.PlainHTTP = addr.Loopback()
	client := &auth.Client{Client: retry.DefaultClient, Cache: auth.NewCache()}
	if opts.HTTPClient != nil {
		client.Client = opts.HTTPClient
	}
	client.SetUserAgent("rigor")
	if opts.DockerConfig != "" {
		store, err := credentials.NewStore(opts.DockerConfig, credentials.StoreOptions{})
		if err != nil {
			return nil, fmt.Errorf("archive %s: reading the credential store %s: %v", addr, opts.DockerConfig, scrub(err))
		}
		client.Credential = credentials.Credential(store)
	}
	repo.Client = client
	return &Archive{Addr: addr, repo: repo, StateDir: opts.StateDir, cred: client.Credential}, nil
}

// Error is a failure to talk to the archive, with a hint.
type Error struct {
	Op     string
	Err    error
	Advice string
}

func (e *Error) Error() string { return e.Op + ": " + e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// Hint says what to do.
func (e *Error) Hint() string { return e.Advice }

// ErrUnauthorized is a registry that refused the credentials sent.
var ErrUnauthorized = errors.New("the registry refused the credentials")

// ErrNoCredentials is a registry that asks for credentials when the
// docker credential store has none for it: nothing was sent, so nothing
// was refused.
var ErrNoCredentials = errors.New("the registry asks for credentials")

// ErrUnreachable is a registry that did not answer.
var ErrUnreachable = errors.New("the registry is unreachable")

// wrap turns a registry or network error into an [*Error] with a hint;
// nothing of the credentials is in it.
func (a *Archive) wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	var ee *Error
	if errors.As(err, &ee) {
		return err
	}
	if errors.Is(err, context.Canceled) {
		return fmt.Errorf("%s: %w", op, context.Canceled)
	}
	var resp *errcode.ErrorResponse
	unauthorized := errors.As(err, &resp) && (resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden)
	if unauthorized || errors.Is(err, auth.ErrBasicCredentialNotFound) {
		cause := fmt.Errorf("%w and the docker credential store has none for %s", ErrNoCredentials, a.Addr.Host)
		if unauthorized && a.hasCredential() {
			cause = fmt.Errorf("%w (%s answered %d %s)", ErrUnauthorized, a.Addr.Host, resp.StatusCode, http.StatusText(resp.StatusCode))
		}
		return &Error{Op: op, Err: cause,
			Advice: fmt.Sprintf("log in to %s with `docker login %s` (or an auths entry in ~/.docker/config.json, or DOCKER_CONFIG); rigor reads the docker credential store and never takes a password in the address", a.Addr.Host, a.Addr.Host)}
	}
	var ne net.Error
	var oe *net.OpError
	if errors.Is(err, syscall.ECONNREFUSED) || errors.As(err, &oe) || errors.As(err, &ne) {
		return &Error{Op: op, Err: fmt.Errorf("%w at %s: %v", ErrUnreachable, a.Addr.Host, scrub(unwrapURL(err))),
			Advice: "check that the registry is running and the address is right (--archive, RIGOR_ARCHIVE or the module's archive setting)"}
	}
	return &Error{Op: op, Err: scrub(err)}
}

// hasCredential says whether the docker credential store has credentials
// for the registry: a registry that answers 401 to a request sent without
// any refused nothing.
func (a *Archive) hasCredential() bool {
	if a.cred == nil {
		return false
	}
	c, err := a.cred(context.Background(), a.Addr.Host)
	return err != nil || c != auth.EmptyCredential
}

func unwrapURL(err error) error {
	for {
		u := errors.Unwrap(err)
		if u == nil {
			return err
		}
		if _, ok := err.(*net.OpError); ok {
			return err
		}
		err = u
	}
}

// scrub keeps an error's text free of credentials: URLs with userinfo and
// Authorization values never appear in oras-go's errors, but a registry's
// body might echo one.
func scrub(err error) error {
	if err == nil {
		return nil
	}
	s := err.Error()
	if strings.Contains(strings.ToLower(s), "authorization") || strings.Contains(s, "Basic ") || strings.Contains(s, "Bearer ") {
		return errors.New("the registry's answer was withheld: it echoed credentials")
	}
	return err
}

// Ping checks that the registry answers and takes the credentials: it
// resolves a tag that does not exist (a 404 is success).
func (a *Archive) Ping(ctx context.Context) error {
	_, err := a.repo.Resolve(ctx, "rigor-ping")
	if err == nil || errors.Is(err, errdef.ErrNotFound) {
		return nil
	}
	var resp *errcode.ErrorResponse
	if errors.As(err, &resp) && resp.StatusCode == http.StatusNotFound {
		return nil
	}
	return a.wrap("archive "+a.Addr.String(), err)
}

func blobDesc(mediaType, sha string, size int64) ocispec.Descriptor {
	return ocispec.Descriptor{MediaType: mediaType, Digest: digest.NewDigestFromEncoded(digest.SHA256, sha), Size: size}
}

// HasBlob says whether the registry holds the blob of sha256 sha.
func (a *Archive) HasBlob(ctx context.Context, sha string, size int64) (bool, error) {
	ok, err := a.repo.Blobs().Exists(ctx, blobDesc("application/octet-stream", sha, size))
	return ok, a.wrap("archive "+a.Addr.String(), err)
}

// ChangedError is a file whose bytes are not the sha256 the lock holds:
// a local file changed since it was locked (push), or a blob of the
// registry whose bytes are not its digest (pull).
type ChangedError struct {
	What      string // the artifact, e.g. "model file tiny.gguf (model-…)"
	Want, Got string
	Pulled    bool
}

func (e *ChangedError) Error() string {
	if e.Pulled {
		return fmt.Sprintf("%s: the archive's bytes hash to sha256 %.12s, but the lock holds %.12s: refused", e.What, e.Got, e.Want)
	}
	return fmt.Sprintf("%s: the local file hashes to sha256 %.12s, but the lock holds %.12s: not archived", e.What, e.Got, e.Want)
}

// Hint says what to do.
func (e *ChangedError) Hint() string {
	if e.Pulled {
		return "the archive's copy is damaged or was tampered with; push it again from a machine whose cache holds the locked bytes (rigor archive push)"
	}
	return "the cache's copy changed since it was locked; fetch it again (rigor pull, rigor build) before archiving"
}

// hashingReader hashes what is read through it.
type hashingReader struct {
	r io.Reader
	h hash.Hash
	n int64
	// progress is told the bytes read so far.
	progress func(int64)
}

func (h *hashingReader) Read(p []byte) (int, error) {
	n, err := h.r.Read(p)
	if n > 0 {
		h.h.Write(p[:n])
		h.n += int64(n)
		if h.progress != nil {
			h.progress(h.n)
		}
	}
	return n, err
}

// PushFile sends the file at path as the blob of sha256 sha and size
// size, unless the registry holds it already; sent says which. The bytes
// are hashed once, while they are sent: a file that does not hash to sha
// is a [*ChangedError] (and the registry refuses the upload too).
func (a *Archive) PushFile(ctx context.Context, what, path, mediaType, sha string, size int64, progress func(int64)) (sent bool, err error) {
	if has, err := a.HasBlob(ctx, sha, size); err != nil {
		return false, err
	} else if has {
		return false, nil
	}
	if size >= ChunkThreshold {
		// Large: in chunks, resumed after an interruption.
		return true, a.pushChunked(ctx, what, path, sha, size, progress, a.Resumed)
	}
	f, err := os.Open(path)
	if err != nil {
		return false, fmt.Errorf("%s: %w", what, err)
	}
	defer f.Close()
	hr := &hashingReader{r: bufio.NewReaderSize(f, 1<<20), h: sha256.New(), progress: progress}
	perr := a.repo.Blobs().Push(ctx, blobDesc(mediaType, sha, size), hr)
	if got := hex.EncodeToString(hr.h.Sum(nil)); hr.n == size && got != sha {
		return false, &ChangedError{What: what, Want: sha, Got: got}
	}
	if hr.n != size && perr == nil {
		return false, &ChangedError{What: what, Want: sha, Got: fmt.Sprintf("(%d bytes, not %d)", hr.n, size)}
	}
	if perr != nil {
		return false, a.wrap(what, perr)
	}
	return true, nil
}

// PushBytes sends small content (a config) as a blob, unless it is there.
func (a *Archive) PushBytes(ctx context.Context, mediaType string, b []byte) (ocispec.Descriptor, error) {
	sum := sha256.Sum256(b)
	d := blobDesc(mediaType, hex.EncodeToString(sum[:]), int64(len(b)))
	if ok, err := a.repo.Blobs().Exists(ctx, d); err != nil {
		return d, a.wrap("archive "+a.Addr.String(), err)
	} else if ok {
		return d, nil
	}
	return d, a.wrap("archive "+a.Addr.String(), a.repo.Blobs().Push(ctx, d, strings.NewReader(string(b))))
}

// FetchFile writes the blob of sha256 sha to dest, through a temporary
// file beside it that is renamed into place only when its bytes hash to
// sha; otherwise it is removed and the error is a [*ChangedError] naming
// what (the artifact).
func (a *Archive) FetchFile(ctx context.Context, what, sha string, size int64, dest string, mode os.FileMode, progress func(int64)) error {
	rc, err := a.repo.Blobs().Fetch(ctx, blobDesc("application/octet-stream", sha, size))
	if err != nil {
		if errors.Is(err, errdef.ErrNotFound) {
			return fmt.Errorf("%s: the archive %s has no blob sha256:%.12s: %w", what, a.Addr, sha, errdef.ErrNotFound)
		}
		return a.wrap(what, err)
	}
	defer rc.Close()
	if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(dest), "."+filepath.Base(dest)+".archive-*")
	if err != nil {
		return err
	}
	ok := false
	defer func() {
		if !ok {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	hr := &hashingReader{r: rc, h: sha256.New(), progress: progress}
	if _, err := io.Copy(tmp, hr); err != nil {
		return a.wrap(what, err)
	}
	if got := hex.EncodeToString(hr.h.Sum(nil)); got != sha {
		return &ChangedError{What: what, Want: sha, Got: got, Pulled: true}
	}
	if err := tmp.Chmod(mode); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), dest); err != nil {
		return err
	}
	ok = true
	return nil
}

// Artifact is one archived input: a manifest under a tag.
type Artifact struct {
	Tag string
	// ConfigType and Config are the manifest's config blob.
	ConfigType string
	Config     []byte
	Layers     []ocispec.Descriptor
	// Annotations are the manifest's.
	Annotations map[string]string
}

// Layer describes a file as a layer: its digest is sha, its path the
// org.cncf.model.filepath and org.opencontainers.image.title annotations.
func Layer(mediaType, path, sha string, size int64) ocispec.Descriptor {
	d := blobDesc(mediaType, sha, size)
	d.Annotations = map[string]string{AnnotationPath: path, ocispec.AnnotationTitle: path}
	return d
}

// LayerSHA256 is the hex sha256 of a layer's digest.
func LayerSHA256(d ocispec.Descriptor) string { return d.Digest.Encoded() }

// LayerPath is a layer's file path.
func LayerPath(d ocispec.Descriptor) string { return d.Annotations[AnnotationPath] }

// HasArtifact says whether the tag exists.
func (a *Archive) HasArtifact(ctx context.Context, tag string) (bool, error) {
	_, err := a.repo.Resolve(ctx, tag)
	if err == nil {
		return true, nil
	}
	if errors.Is(err, errdef.ErrNotFound) {
		return false, nil
	}
	return false, a.wrap("archive "+a.Addr.String(), err)
}

// PushArtifact writes the config and the manifest of art under its tag.
// The layers must have been pushed. The manifest's bytes depend only on
// art, so pushing the same artifact twice changes nothing.
func (a *Archive) PushArtifact(ctx context.Context, art Artifact) error {
	cfg, err := a.PushBytes(ctx, art.ConfigType, art.Config)
	if err != nil {
		return err
	}
	m := ocispec.Manifest{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageManifest,
		Config: cfg, Layers: art.Layers, Annotations: art.Annotations}
	if m.Layers == nil {
		m.Layers = []ocispec.Descriptor{}
	}
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	sum := sha256.Sum256(b)
	d := blobDesc(ocispec.MediaTypeImageManifest, hex.EncodeToString(sum[:]), int64(len(b)))
	return a.wrap("archive "+a.Addr.String()+": "+art.Tag, a.repo.PushReference(ctx, d, strings.NewReader(string(b)), art.Tag))
}

// ErrNotArchived is an artifact the archive does not hold.
var ErrNotArchived = errors.New("not in the archive")

// FetchArtifact reads the manifest and config of tag; an unknown tag is
// [ErrNotArchived]. Manifest and config are checked against their digests.
func (a *Archive) FetchArtifact(ctx context.Context, tag string) (*Artifact, error) {
	desc, rc, err := a.repo.FetchReference(ctx, tag)
	if err != nil {
		if errors.Is(err, errdef.ErrNotFound) {
			return nil, fmt.Errorf("%s: %w", tag, ErrNotArchived)
		}
		return nil, a.wrap("archive "+a.Addr.String()+": "+tag, err)
	}
	b, err := readVerified(rc, desc, 4<<20)
	if err != nil {
		return nil, fmt.Errorf("archive %s: %s: %w", a.Addr, tag, err)
	}
	var m ocispec.Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("archive %s: %s: not an image manifest: %v", a.Addr, tag, err)
	}
	crc, err := a.repo.Blobs().Fetch(ctx, m.Config)
	if err != nil {
		return nil, a.wrap("archive "+a.Addr.String()+": "+tag, err)
	}
	cfg, err := readVerified(crc, m.Config, 16<<20)
	if err != nil {
		return nil, fmt.Errorf("archive %s: %s: its config: %w", a.Addr, tag, err)
	}
	return &Artifact{Tag: tag, ConfigType: m.Config.MediaType, Config: cfg, Layers: m.Layers, Annotations: m.Annotations}, nil
}

func readVerified(rc io.ReadCloser, d ocispec.Descriptor, limit int64) ([]byte, error) {
	defer rc.Close()
	if d.Size > limit {
		return nil, fmt.Errorf("%d bytes, more than %d", d.Size, limit)
	}
	b, err := io.ReadAll(io.LimitReader(rc, limit+1))
	if err != nil {
		return nil, err
	}
	if digest.FromBytes(b) != d.Digest {
		return nil, fmt.Errorf("its bytes are not its digest %.19s: refused", d.Digest)
	}
	return b, nil
}
