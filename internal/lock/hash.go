package lock

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// bufSize is the read size of the hasher: large reads keep the syscall
// cost far below the cost of hashing (crypto/sha256 uses the CPU's SHA
// instructions, over 1 GB/s a core).
const bufSize = 4 << 20

// racyWindow is how close to the moment it was hashed a file's mtime or
// ctime may be before its cache entry is distrusted: a write within the
// same clock tick would leave size and times unchanged (git's "racy clean"
// problem).
var racyWindow = 2 * time.Second // a variable for tests only

var bufPool = sync.Pool{New: func() any { b := make([]byte, bufSize); return &b }}

// HashFile returns the hex sha256 and the size of the file at path, read in
// large chunks. It stops early when ctx is done.
func HashFile(ctx context.Context, path string) (string, int64, error) {
	return hashFile(ctx, path, nil)
}

func hashFile(ctx context.Context, path string, progress func(int64)) (string, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", 0, fmt.Errorf("hashing %s: %w", path, err)
	}
	defer f.Close()
	sum, n, err := hashPipelined(ctx, f, progress)
	if err != nil {
		return "", 0, fmt.Errorf("hashing %s: %w", path, err)
	}
	return sum, n, nil
}

// hashPipelined reads r on one goroutine and hashes on the caller's, with
// two buffers in flight, so the copy out of the page cache overlaps the
// hashing instead of adding to it.
func hashPipelined(ctx context.Context, r io.Reader, progress func(int64)) (string, int64, error) {
	type chunk struct {
		buf *[]byte
		n   int
		err error
	}
	free := make(chan *[]byte, 2)
	full := make(chan chunk, 2)
	for range 2 {
		free <- bufPool.Get().(*[]byte)
	}
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			var bp *[]byte
			select {
			case bp = <-free:
			case <-stop:
				return
			}
			k, err := io.ReadFull(r, *bp)
			if err == io.ErrUnexpectedEOF {
				err = io.EOF
			}
			select {
			case full <- chunk{bp, k, err}:
			case <-stop:
				bufPool.Put(bp)
				return
			}
			if err != nil {
				return
			}
		}
	}()
	h := sha256.New()
	var n int64
	for {
		c := <-full
		if c.n > 0 {
			h.Write((*c.buf)[:c.n])
			n += int64(c.n)
			if progress != nil {
				progress(int64(c.n))
			}
		}
		if c.err != nil {
			bufPool.Put(c.buf)
			if c.err == io.EOF {
				return hex.EncodeToString(h.Sum(nil)), n, nil
			}
			return "", 0, c.err
		}
		if err := ctx.Err(); err != nil {
			bufPool.Put(c.buf)
			return "", 0, err
		}
		free <- c.buf
	}
}

// Hasher hashes files, several at once, and remembers each file's hash
// under its stat (path, size, mtime, ctime, inode, device) in a cache
// directory, so that an unchanged file is not read again. The ctime is what
// catches a quiet in-place edit: a user can set size and mtime back
// (touch -r), but not the change time. Where the ctime cannot be read, the
// cache is not trusted at all.
//
// A context made by [WithHashReport] can ask for every file to be read
// again (rigor run --verify), and counts which hashes were read and which
// were trusted from the cache.
type Hasher struct {
	// Cache is the directory of the stat cache; "" disables it.
	Cache string
	// Workers bounds how many files are hashed at once; 0 means GOMAXPROCS.
	Workers int
	// Progress, when set, is called with the bytes hashed so far and the
	// total bytes to hash (files found in the cache excluded). Calls are
	// serialized.
	Progress func(done, total int64)

	mu sync.Mutex
}

// FileHash is the hash of one file.
type FileHash struct {
	Path   string
	SHA256 string
	Size   int64
	// Cached says the hash came from the stat cache.
	Cached bool
}

// statKey is what a cache entry is keyed by and checked against.
type statKey struct {
	Path    string `json:"path"`
	Size    int64  `json:"size"`
	MtimeNs int64  `json:"mtimeNs"`
	CtimeNs int64  `json:"ctimeNs"`
	Inode   uint64 `json:"inode"`
	Dev     uint64 `json:"dev"`
}

type cacheEntry struct {
	statKey
	SHA256 string `json:"sha256"`
	// HashedNs is when the hash was taken; see racyWindow.
	HashedNs int64 `json:"hashedNs"`
}

func keyOf(path string, fi os.FileInfo) statKey {
	k := statKey{Path: path, Size: fi.Size(), MtimeNs: fi.ModTime().UnixNano()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		k.Inode = uint64(st.Ino)
		k.Dev = uint64(st.Dev)
		k.CtimeNs = ctimeNs(st)
	}
	return k
}

func (h *Hasher) entryPath(abs string) string {
	sum := sha256.Sum256([]byte(abs))
	return filepath.Join(h.Cache, "hashes", hex.EncodeToString(sum[:20])+".json")
}

// lookup returns the cached hash of abs when its stat still matches.
func (h *Hasher) lookup(abs string, k statKey) (string, bool) {
	if h.Cache == "" {
		return "", false
	}
	b, err := os.ReadFile(h.entryPath(abs))
	if err != nil {
		return "", false
	}
	var e cacheEntry
	if json.Unmarshal(b, &e) != nil || e.statKey != k || !hex64.MatchString(e.SHA256) {
		return "", false
	}
	if e.CtimeNs == 0 || e.HashedNs-max(e.MtimeNs, e.CtimeNs) < int64(racyWindow) {
		return "", false
	}
	return e.SHA256, true
}

// store records the hash of abs; failures only cost a rehash later.
func (h *Hasher) store(abs string, k statKey, sum string, hashed time.Time) {
	if h.Cache == "" {
		return
	}
	b, err := json.Marshal(cacheEntry{statKey: k, SHA256: sum, HashedNs: hashed.UnixNano()})
	if err != nil {
		return
	}
	_ = writeAtomic(h.entryPath(abs), b)
}

// Hash returns the hashes of paths, in their order. Files whose stat
// matches the cache are not read; the others are hashed in parallel, at
// most Workers at a time. The first error stops the others.
func (h *Hasher) Hash(ctx context.Context, paths []string) ([]FileHash, error) {
	out := make([]FileHash, len(paths))
	rep, _ := ctx.Value(hashReportKey{}).(*HashReport)
	type job struct {
		i   int
		abs string
		k   statKey
	}
	var jobs []job
	var total int64
	for i, p := range paths {
		abs, err := filepath.Abs(p)
		if err != nil {
			return nil, fmt.Errorf("hashing %s: %w", p, err)
		}
		fi, err := os.Stat(abs)
		if err != nil {
			return nil, fmt.Errorf("hashing %s: %w", p, err)
		}
		if !fi.Mode().IsRegular() {
			return nil, fmt.Errorf("hashing %s: not a regular file", p)
		}
		k := keyOf(abs, fi)
		if !rep.reread() {
			if sum, ok := h.lookup(abs, k); ok {
				out[i] = FileHash{Path: p, SHA256: sum, Size: k.Size, Cached: true}
				rep.count(1, 0)
				continue
			}
		}
		jobs = append(jobs, job{i, abs, k})
		total += k.Size
	}
	if len(jobs) == 0 {
		return out, nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var done atomic.Int64
	var progress func(int64)
	if h.Progress != nil {
		progress = func(n int64) {
			d := done.Add(n)
			h.mu.Lock()
			h.Progress(d, total)
			h.mu.Unlock()
		}
	}
	workers := h.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = min(workers, len(jobs))
	var (
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
		next     atomic.Int64
	)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				n := int(next.Add(1)) - 1
				if n >= len(jobs) || ctx.Err() != nil {
					return
				}
				j := jobs[n]
				start := time.Now()
				sum, size, err := hashFile(ctx, j.abs, progress)
				if err == nil && size != j.k.Size {
					err = fmt.Errorf("hashing %s: the file changed while it was read (%d bytes, then %d)", paths[j.i], j.k.Size, size)
				}
				if err != nil {
					errOnce.Do(func() { firstErr = err; cancel() })
					return
				}
				// Only trust the hash for the stat taken before reading if
				// the file did not change meanwhile.
				if fi, err := os.Stat(j.abs); err == nil && keyOf(j.abs, fi) == j.k {
					h.store(j.abs, j.k, sum, start)
				}
				out[j.i] = FileHash{Path: paths[j.i], SHA256: sum, Size: size}
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	for _, j := range jobs {
		if out[j.i].SHA256 == "" {
			// The caller's context ended before every file was read.
			return nil, fmt.Errorf("hashing %s: %w", paths[j.i], ctx.Err())
		}
	}
	rep.count(0, len(jobs))
	return out, nil
}

type hashReportKey struct{}

// HashReport says how the hashes taken under a context were taken: read
// from the bytes, or trusted from the stat cache.
type HashReport struct {
	// Reread makes every hash be read from the file's bytes, the stat
	// cache consulted for nothing (and refreshed).
	Reread bool

	mu           sync.Mutex
	read, cached int
}

// WithHashReport returns a context under which every [Hasher.Hash] is
// counted in the returned report, and reads every file again when reread
// is set.
func WithHashReport(ctx context.Context, reread bool) (context.Context, *HashReport) {
	r := &HashReport{Reread: reread}
	return context.WithValue(ctx, hashReportKey{}, r), r
}

func (r *HashReport) reread() bool { return r != nil && r.Reread }

func (r *HashReport) count(cached, read int) {
	if r == nil {
		return
	}
	r.mu.Lock()
	r.cached += cached
	r.read += read
	r.mu.Unlock()
}

// Hash values of a record's "hashes" field.
const (
	// HashesRead: every file was hashed from its bytes for this run.
	HashesRead = "read"
	// HashesCached: at least one hash was trusted from the stat cache
	// (its size, mtime, ctime, inode and device unchanged since it was read).
	HashesCached = "cached"
)

// Summary is HashesRead when every hash was read from the bytes,
// HashesCached when any was trusted from the stat cache, and "" when
// nothing was hashed.
func (r *HashReport) Summary() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.cached > 0:
		return HashesCached
	case r.read > 0:
		return HashesRead
	}
	return ""
}

// CacheCheck is one file of the stat cache read again by [VerifyCache].
type CacheCheck struct {
	// Path is the file's absolute path.
	Path string
	// Was is the sha256 the cache held; Now the sha256 of the bytes.
	Was, Now string
	// Trusted is true when the cache would have trusted Was without
	// reading the file: its stat key and racy check still passed.
	Trusted bool
	// Stat names what of the file's stat differs from when Was was
	// hashed ("size", "mtime", "ctime", "inode", "device").
	Stat []string
}

// Changed says whether the bytes are not those the cache hashed.
func (c CacheCheck) Changed() bool { return c.Was != c.Now }

// VerifyCache reads every file the stat cache under cache holds a hash of
// again, refreshes its entry, and returns each file with the hash the
// cache held and the hash of its bytes, by path. Entries of files that are
// gone are removed (gone counts them).
func VerifyCache(ctx context.Context, cache string) (checks []CacheCheck, gone int, err error) {
	h := &Hasher{Cache: cache}
	dir := filepath.Join(cache, "hashes")
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, 0, nil
	} else if err != nil {
		return nil, 0, fmt.Errorf("reading the stat cache: %w", err)
	}
	var paths []string
	for _, de := range ents {
		if !strings.HasSuffix(de.Name(), ".json") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, de.Name()))
		if err != nil {
			continue
		}
		var e cacheEntry
		if json.Unmarshal(b, &e) != nil || !filepath.IsAbs(e.Path) || h.entryPath(e.Path) != filepath.Join(dir, de.Name()) {
			os.Remove(filepath.Join(dir, de.Name())) // not an entry this rigor reads
			continue
		}
		fi, err := os.Stat(e.Path)
		if err != nil || !fi.Mode().IsRegular() {
			os.Remove(filepath.Join(dir, de.Name()))
			gone++
			continue
		}
		k := keyOf(e.Path, fi)
		_, trusted := h.lookup(e.Path, k)
		checks = append(checks, CacheCheck{Path: e.Path, Was: e.SHA256, Trusted: trusted, Stat: statDiff(e.statKey, k)})
		paths = append(paths, e.Path)
	}
	ctx, _ = WithHashReport(ctx, true)
	sums, err := h.Hash(ctx, paths)
	if err != nil {
		return nil, gone, err
	}
	for i := range checks {
		checks[i].Now = sums[i].SHA256
	}
	slices.SortFunc(checks, func(a, b CacheCheck) int { return strings.Compare(a.Path, b.Path) })
	return checks, gone, nil
}

// statDiff names the fields of b that differ from a.
func statDiff(a, b statKey) []string {
	var out []string
	for _, f := range []struct {
		name string
		same bool
	}{{"size", a.Size == b.Size}, {"mtime", a.MtimeNs == b.MtimeNs}, {"ctime", a.CtimeNs == b.CtimeNs}, {"inode", a.Inode == b.Inode}, {"device", a.Dev == b.Dev}} {
		if !f.same {
			out = append(out, f.name)
		}
	}
	return out
}
