package lock

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// bufSize is the read size of the hasher: large reads keep the syscall
// cost far below the cost of hashing (crypto/sha256 uses the CPU's SHA
// instructions, over 1 GB/s a core).
const bufSize = 4 << 20

// racyWindow is how close to the moment it was hashed a file's mtime may be
// before its cache entry is distrusted: a write within the same clock tick
// would leave size and mtime unchanged (git's "racy clean" problem).
const racyWindow = 2 * time.Second

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
// under its stat (path, size, mtime, inode, device) in a cache directory, so
// that an unchanged file is not read again.
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
	if e.HashedNs-e.MtimeNs < int64(racyWindow) {
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
		if sum, ok := h.lookup(abs, k); ok {
			out[i] = FileHash{Path: p, SHA256: sum, Size: k.Size, Cached: true}
			continue
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
	return out, nil
}
