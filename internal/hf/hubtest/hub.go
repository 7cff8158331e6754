// Package hubtest is a stand-in Hugging Face hub for tests: an
// [httptest.Server] that speaks the hub's real API shapes for the
// endpoints rigor uses, serves real bytes, and injects faults.
//
// Endpoints (see reference/FORMATS.md §5):
//
//	GET  /api/models/{owner}/{name}[/revision/{rev}]   model info: sha, siblings (blobs=true adds sizes and lfs)
//	GET  /api/models/{owner}/{name}/tree/{rev}[/{path}] tree listing, ?recursive=true, Link-header pagination
//	GET  /api/models/{owner}/{name}/refs                branches and tags
//	GET|HEAD /{owner}/{name}/resolve/{rev}/{path}       content (git files) or 302 to /cdn/… (LFS files)
//	GET|HEAD /cdn/repos/{owner}/{name}/{sha256}?filename=…
//
// Errors carry X-Error-Code and X-Error-Message headers and a JSON body
// {"error": "…"} as the hub sends them: RepoNotFound for unknown and
// private repos (401 to anonymous requests, 404 to authenticated ones, the
// hub hiding private repos either way), RevisionNotFound and EntryNotFound
// (404), GatedRepo for downloads from a gated repo (401 without a token,
// 403 with a token lacking access). As on the real hub, the model info and
// tree of a gated repo are public; only its files are gated.
//
// Use it in Go tests with [New] and [Hub.AddRepo]; use it in testscript
// files through [Cmd] (in-process, sets HF_ENDPOINT) or [Main] (a separate
// process), both of which read a JSON [Config].
package hubtest

import (
	"bytes"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// LFSThreshold is the size from which a file is stored in LFS even when
// its File.LFS is false, as the hub does for files of 10 MB or more.
const LFSThreshold = 10 << 20

// File is one file of a repo.
type File struct {
	// Path is the slash-separated path in the repo.
	Path string
	// Data is the content.
	Data []byte
	// LFS stores the file in LFS (sha256 oid, served through the CDN).
	LFS bool
}

// RepoOptions describes a repo for [Hub.AddRepo].
type RepoOptions struct {
	// Files are the files of the first commit.
	Files []File
	// Branches name the branches that point at the first commit; default
	// ["main"].
	Branches []string
	// Tags name tags that point at the first commit.
	Tags []string
	// Gated repos need Token to download files (model info and tree stay
	// public, as on the hub).
	Gated bool
	// Private repos are answered RepoNotFound unless the request carries
	// Token.
	Private bool
	// Token is the token of an account with access to a gated or private
	// repo.
	Token string
	// PageSize is the number of tree entries per page; default 1000.
	PageSize int
}

// Endpoint names an API endpoint for [Hub.Malformed].
type Endpoint string

// Endpoints that can be made to answer malformed JSON.
const (
	EndpointModel Endpoint = "model" // /api/models/{repo} and /api/models/{repo}/revision/{rev}
	EndpointTree  Endpoint = "tree"  // /api/models/{repo}/tree/…
	EndpointRefs  Endpoint = "refs"  // /api/models/{repo}/refs
)

// Request is one entry of the hub's request log.
type Request struct {
	Method string
	// Path is the escaped URL path, as sent ("refs%2Fpr%2F1" stays so).
	Path  string
	Query string
	// Server is "hub", or "cdn" for requests to a separate CDN server.
	Server string
	Range  string
	// Token is the bearer token the request carried, or "".
	Token  string
	Status int
}

type blob struct {
	data   []byte
	lfs    bool
	oid    string // git blob sha1 of the content, or of the LFS pointer
	sha256 string
	ptr    int // pointer size for LFS files
}

type commit struct {
	sha   string
	files map[string]*blob // path → blob
}

type repo struct {
	id      string
	opts    RepoOptions
	refs    map[string]string // branch or tag name → commit sha
	tags    map[string]bool
	commits map[string]*commit
	order   []string // commit shas, oldest first
	created time.Time
	// deleted are the paths the hub no longer has at any commit
	// ([Hub.DeleteFile]); purged those it lists but no longer serves
	// ([Hub.PurgeFile]).
	deleted map[string]bool
	purged  map[string]bool
}

type fault struct {
	status int
	n      int
}

type cut struct {
	after int64
	n     int
}

// Hub is a running stand-in hub. Its methods are safe for concurrent use
// with the requests it serves.
type Hub struct {
	// URL is the hub's base URL, for HF_ENDPOINT.
	URL string
	// Server is the hub's HTTP server.
	Server *httptest.Server
	// CDN is the separate CDN server after [Hub.StartCDN], else nil.
	CDN *httptest.Server

	mu        sync.Mutex
	repos     map[string]*repo
	fails     map[string]*fault
	cuts      map[string]*cut // repo + "\x00" + file
	corrupt   map[string]bool // repo + "\x00" + file
	malformed map[Endpoint]bool
	// malformedN counts the malformed answers left for MalformedNext.
	malformedN map[Endpoint]int
	noRange    bool
	delay      time.Duration
	// logMu guards log alone: a handler may write its response while
	// holding mu, and the log is written as the status goes out.
	logMu sync.Mutex
	log   []Request
}

// New starts a stand-in hub with no repos on a loopback address. Close it
// when done.
func New() *Hub {
	h := newHub()
	h.Server = httptest.NewServer(h.handler("hub"))
	h.URL = h.Server.URL
	return h
}

func newHub() *Hub {
	return &Hub{
		repos:      map[string]*repo{},
		fails:      map[string]*fault{},
		cuts:       map[string]*cut{},
		corrupt:    map[string]bool{},
		malformed:  map[Endpoint]bool{},
		malformedN: map[Endpoint]int{},
	}
}

// Close shuts the hub (and its CDN) down.
func (h *Hub) Close() {
	if h.CDN != nil {
		h.CDN.Close()
	}
	if h.Server != nil {
		h.Server.Close()
	}
}

// StartCDN serves LFS content from a second server on another port, so
// that the hub's 302 redirects cross hosts (as they do to cdn-lfs.hf.co)
// and a client must drop its Authorization header.
func (h *Hub) StartCDN() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.CDN == nil {
		h.CDN = httptest.NewServer(h.handler("cdn"))
	}
}

// AddRepo adds the repo id ("owner/name") with one commit holding
// opts.Files, and returns that commit's sha. It panics on an invalid id
// or file path, as a test fixture error.
func (h *Hub) AddRepo(id string, opts RepoOptions) string {
	if owner, name, ok := strings.Cut(id, "/"); !ok || owner == "" || name == "" || strings.Contains(name, "/") {
		panic(fmt.Sprintf("hubtest: invalid repo id %q", id))
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	r := &repo{
		id:      id,
		opts:    opts,
		refs:    map[string]string{},
		tags:    map[string]bool{},
		commits: map[string]*commit{},
		deleted: map[string]bool{},
		purged:  map[string]bool{},
		created: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC),
	}
	c := r.commit("", opts.Files)
	branches := opts.Branches
	if len(branches) == 0 {
		branches = []string{"main"}
	}
	for _, b := range branches {
		r.refs[b] = c.sha
	}
	for _, t := range opts.Tags {
		r.refs[t] = c.sha
		r.tags[t] = true
	}
	h.repos[id] = r
	return c.sha
}

// Push adds a commit with files to the repo, makes branch point at it, and
// returns its sha. The earlier commits stay reachable by sha.
func (h *Hub) Push(id, branch string, files []File) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	r, ok := h.repos[id]
	if !ok {
		panic(fmt.Sprintf("hubtest: no repo %q", id))
	}
	c := r.commit(r.refs[branch], files)
	r.refs[branch] = c.sha
	return c.sha
}

// DeleteFile makes the hub lose one file of the repo: no commit lists it
// (model info, tree) and a download answers 404 EntryNotFound, while the
// repo and its commits stay, with their shas. That is a single file gone
// upstream from a repository that still exists, which a rerun of a lock
// pinning it can only take from a cache or an archive.
func (h *Hub) DeleteFile(id, file string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	r, ok := h.repos[id]
	if !ok {
		panic(fmt.Sprintf("hubtest: no repo %q", id))
	}
	r.deleted[file] = true
}

// PurgeFile makes the hub stop serving one file of the repo while every
// commit still lists it (model info, tree): a download or a HEAD answers
// 404 EntryNotFound. That is the hub without the bytes of a file whose
// commit cannot change, as when an LFS object is deleted from a repo's
// storage.
func (h *Hub) PurgeFile(id, file string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	r, ok := h.repos[id]
	if !ok {
		panic(fmt.Sprintf("hubtest: no repo %q", id))
	}
	r.purged[file] = true
}

// has returns the blob of file at c unless the file was deleted. The
// caller holds h.mu.
func (r *repo) has(c *commit, file string) (*blob, bool) {
	b, ok := c.files[file]
	if !ok || r.deleted[file] {
		return nil, false
	}
	return b, true
}

// serves returns the blob of file at c unless the file was deleted or
// purged. The caller holds h.mu.
func (r *repo) serves(c *commit, file string) (*blob, bool) {
	if r.purged[file] {
		return nil, false
	}
	return r.has(c, file)
}

// commit builds and stores a commit; its sha is derived from its parent
// and content, so fixtures are deterministic.
func (r *repo) commit(parent string, files []File) *commit {
	c := &commit{files: map[string]*blob{}}
	hs := sha1.New()
	fmt.Fprintf(hs, "repo %s\nparent %s\n", r.id, parent)
	sorted := append([]File(nil), files...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Path < sorted[j].Path })
	for _, f := range sorted {
		if f.Path == "" || strings.HasPrefix(f.Path, "/") || path.Clean(f.Path) != f.Path {
			panic(fmt.Sprintf("hubtest: invalid file path %q", f.Path))
		}
		b := newBlob(f)
		c.files[f.Path] = b
		fmt.Fprintf(hs, "%s %s\n", b.oid, f.Path)
	}
	c.sha = hex.EncodeToString(hs.Sum(nil))
	r.commits[c.sha] = c
	r.order = append(r.order, c.sha)
	return c
}

func newBlob(f File) *blob {
	sum := sha256.Sum256(f.Data)
	b := &blob{data: f.Data, lfs: f.LFS || len(f.Data) >= LFSThreshold, sha256: hex.EncodeToString(sum[:])}
	if b.lfs {
		ptr := fmt.Sprintf("version https://git-lfs.github.com/spec/v1\noid sha256:%s\nsize %d\n", b.sha256, len(f.Data))
		b.ptr = len(ptr)
		b.oid = GitBlobID([]byte(ptr))
	} else {
		b.oid = GitBlobID(f.Data)
	}
	return b
}

// GitBlobID returns the git blob sha1 of data: sha1("blob <len>\x00" + data).
func GitBlobID(data []byte) string {
	hs := sha1.New()
	fmt.Fprintf(hs, "blob %d\x00", len(data))
	hs.Write(data)
	return hex.EncodeToString(hs.Sum(nil))
}

// FailNext makes the next n requests whose URL path equals urlPath (or,
// when urlPath ends in "*", starts with the rest) answer status, with a
// Retry-After of 1 second for 429. The path is matched unescaped, e.g.
// "/api/models/org/name/revision/main".
func (h *Hub) FailNext(urlPath string, status, n int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.fails[urlPath] = &fault{status: status, n: n}
}

// CutNext makes the next n downloads of file in repo send only the first
// after bytes of the body and then drop the connection.
func (h *Hub) CutNext(repoID, file string, after int64, n int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.cuts[repoID+"\x00"+file] = &cut{after: after, n: n}
}

// Corrupt makes downloads of file in repo serve wrong bytes of the right
// length (every byte from the middle on is inverted).
func (h *Hub) Corrupt(repoID, file string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.corrupt[repoID+"\x00"+file] = true
}

// NoRange makes the hub ignore Range headers and answer 200 with the whole
// file, as some proxies do.
func (h *Hub) NoRange(on bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.noRange = on
}

// Delay makes every request wait d before it is answered (or until the
// client gives up), to provoke client timeouts.
func (h *Hub) Delay(d time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.delay = d
}

// Malformed makes the endpoint answer 200 with broken JSON.
func (h *Hub) Malformed(e Endpoint) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.malformed[e] = true
}

// MalformedNext makes the endpoint answer 200 with broken JSON n times,
// then normally again.
func (h *Hub) MalformedNext(e Endpoint, n int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.malformedN[e] = n
}

// Requests returns a copy of the request log, oldest first.
func (h *Hub) Requests() []Request {
	h.logMu.Lock()
	defer h.logMu.Unlock()
	return append([]Request(nil), h.log...)
}

// ResetRequests empties the request log.
func (h *Hub) ResetRequests() {
	h.logMu.Lock()
	defer h.logMu.Unlock()
	h.log = nil
}

// statusWriter records the status a handler wrote, and calls onStatus
// before the status reaches the client: a request is in the log before
// its client can see the response, so a test that counts requests after
// a download never misses the last one.
type statusWriter struct {
	http.ResponseWriter
	status   int
	onStatus func()
}

func (w *statusWriter) WriteHeader(s int) {
	if w.status == 0 {
		w.status = s
		w.onStatus()
	}
	w.ResponseWriter.WriteHeader(s)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
		w.onStatus()
	}
	return w.ResponseWriter.Write(p)
}

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (h *Hub) handler(server string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		entry := Request{Method: r.Method, Path: r.URL.EscapedPath(), Query: r.URL.RawQuery, Server: server, Range: r.Header.Get("Range"), Token: tok}
		sw := &statusWriter{ResponseWriter: w}
		logged := false
		logEntry := func() {
			if logged {
				return
			}
			logged = true
			entry.Status = sw.status
			h.logMu.Lock()
			h.log = append(h.log, entry)
			h.logMu.Unlock()
		}
		sw.onStatus = logEntry
		defer logEntry()
		h.mu.Lock()
		delay := h.delay
		h.mu.Unlock()
		if delay > 0 {
			select {
			case <-time.After(delay):
			case <-r.Context().Done():
				sw.status = 499 // client went away, as nginx logs it
				return
			}
		}
		if h.injectFault(sw, r) {
			return
		}
		h.route(sw, r, tok, server)
	})
}

func (h *Hub) injectFault(w http.ResponseWriter, r *http.Request) bool {
	h.mu.Lock()
	var f *fault
	for p, ff := range h.fails {
		if ff.n > 0 && (p == r.URL.Path || strings.HasSuffix(p, "*") && strings.HasPrefix(r.URL.Path, strings.TrimSuffix(p, "*"))) {
			f = ff
			ff.n--
			break
		}
	}
	h.mu.Unlock()
	if f == nil {
		return false
	}
	if f.status == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", "1")
		writeJSONError(w, f.status, "", "You have exceeded our hourly quotas for action 'resolve'. We invite you to retry later or log in with your Hugging Face account.")
		return true
	}
	writeJSONError(w, f.status, "", http.StatusText(f.status))
	return true
}

// writeJSONError answers as the hub does: X-Error-Code, X-Error-Message,
// and a JSON body {"error": msg}.
func writeJSONError(w http.ResponseWriter, status int, code, msg string) {
	if code != "" {
		w.Header().Set("X-Error-Code", code)
	}
	w.Header().Set("X-Error-Message", msg)
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	b, _ := json.Marshal(map[string]string{"error": msg})
	w.Write(b)
}

func (h *Hub) route(w http.ResponseWriter, r *http.Request, tok, server string) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		writeJSONError(w, http.StatusMethodNotAllowed, "", "method not allowed")
		return
	}
	p := r.URL.EscapedPath()
	switch {
	case strings.HasPrefix(p, "/cdn/"):
		h.serveCDN(w, r, strings.TrimPrefix(p, "/cdn/"))
		return
	case server == "cdn":
		http.NotFound(w, r)
		return
	case strings.HasPrefix(p, "/api/models/"):
		h.serveAPI(w, r, tok, strings.TrimPrefix(p, "/api/models/"))
		return
	}
	segs := strings.SplitN(strings.TrimPrefix(p, "/"), "/", 5)
	if len(segs) == 5 && segs[2] == "resolve" {
		h.serveResolve(w, r, tok, segs[0]+"/"+segs[1], segs[3], segs[4])
		return
	}
	writeJSONError(w, http.StatusNotFound, "", "Sorry, we can't find the page you are looking for.")
}

// lookup finds a repo visible to tok, writing the hub's error if there is
// none.
func (h *Hub) lookup(w http.ResponseWriter, id, tok string) (*repo, bool) {
	h.mu.Lock()
	rp, ok := h.repos[id]
	h.mu.Unlock()
	if ok && (!rp.opts.Private || tok != "" && tok == rp.opts.Token) {
		return rp, true
	}
	// The hub does not tell a private repo from a missing one. Anonymous
	// requests get 401 (huggingface_hub then suggests logging in),
	// authenticated ones 404.
	status := http.StatusNotFound
	if tok == "" {
		status = http.StatusUnauthorized
	}
	writeJSONError(w, status, "RepoNotFound", "Repository not found")
	return nil, false
}

// resolveRev finds the commit of rev (a ref name or a full sha).
func (h *Hub) resolveRev(w http.ResponseWriter, rp *repo, rev string) (*commit, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if sha, ok := rp.refs[rev]; ok {
		return rp.commits[sha], true
	}
	if c, ok := rp.commits[strings.ToLower(rev)]; ok {
		return c, true
	}
	writeJSONError(w, http.StatusNotFound, "RevisionNotFound", "Invalid rev id: "+rev)
	return nil, false
}

func (h *Hub) isMalformed(w http.ResponseWriter, e Endpoint) bool {
	h.mu.Lock()
	bad := h.malformed[e]
	if !bad && h.malformedN[e] > 0 {
		h.malformedN[e]--
		bad = true
	}
	h.mu.Unlock()
	if bad {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		io.WriteString(w, `{"_id":"621ffdc036468d709f174338","sha":"`)
	}
	return bad
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	w.Write(b)
}

// serveAPI handles /api/models/{owner}/{name}[/…]; rest is escaped.
func (h *Hub) serveAPI(w http.ResponseWriter, r *http.Request, tok, rest string) {
	segs := strings.SplitN(rest, "/", 4)
	if len(segs) < 2 {
		writeJSONError(w, http.StatusNotFound, "", "Not Found")
		return
	}
	owner, _ := url.PathUnescape(segs[0])
	name, _ := url.PathUnescape(segs[1])
	rp, ok := h.lookup(w, owner+"/"+name, tok)
	if !ok {
		return
	}
	kind, arg := "", ""
	if len(segs) >= 3 {
		kind = segs[2]
	}
	if len(segs) == 4 {
		arg = segs[3]
	}
	switch {
	case kind == "" || kind == "revision" && arg != "" && !strings.Contains(arg, "/"):
		rev := "main"
		if kind == "revision" {
			rev, _ = url.PathUnescape(arg)
		}
		c, ok := h.resolveRev(w, rp, rev)
		if !ok || h.isMalformed(w, EndpointModel) {
			return
		}
		writeJSON(w, h.modelInfo(rp, c, r.URL.Query().Get("blobs") == "true"))
	case kind == "tree" && arg != "":
		revEsc, pathEsc, _ := strings.Cut(arg, "/")
		rev, _ := url.PathUnescape(revEsc)
		dir, _ := url.PathUnescape(pathEsc)
		c, ok := h.resolveRev(w, rp, rev)
		if !ok || h.isMalformed(w, EndpointTree) {
			return
		}
		h.serveTree(w, r, rp, c, strings.Trim(dir, "/"))
	case kind == "refs" && arg == "":
		if h.isMalformed(w, EndpointRefs) {
			return
		}
		h.serveRefs(w, rp)
	default:
		writeJSONError(w, http.StatusNotFound, "", "Not Found")
	}
}

type lfsInfo struct {
	OID         string `json:"oid,omitempty"`
	SHA256      string `json:"sha256,omitempty"`
	Size        int    `json:"size"`
	PointerSize int    `json:"pointerSize"`
}

type sibling struct {
	RFilename string   `json:"rfilename"`
	Size      *int     `json:"size,omitempty"`
	BlobID    string   `json:"blobId,omitempty"`
	LFS       *lfsInfo `json:"lfs,omitempty"`
}

func (h *Hub) modelInfo(rp *repo, c *commit, blobs bool) any {
	owner, _, _ := strings.Cut(rp.id, "/")
	var sibs []sibling
	for _, p := range h.listed(rp, c) {
		b := c.files[p]
		s := sibling{RFilename: p}
		if blobs {
			n := len(b.data)
			s.Size, s.BlobID = &n, b.oid
			if b.lfs {
				s.LFS = &lfsInfo{SHA256: b.sha256, Size: n, PointerSize: b.ptr}
			}
		}
		sibs = append(sibs, s)
	}
	var gated any = false
	if rp.opts.Gated {
		gated = "auto"
	}
	sum := sha1.Sum([]byte(rp.id))
	return map[string]any{
		"_id":          hex.EncodeToString(sum[:12]),
		"id":           rp.id,
		"modelId":      rp.id,
		"author":       owner,
		"sha":          c.sha,
		"lastModified": rp.created.Format("2006-01-02T15:04:05.000Z"),
		"createdAt":    rp.created.Format("2006-01-02T15:04:05.000Z"),
		"private":      rp.opts.Private,
		"gated":        gated,
		"disabled":     false,
		"tags":         []string{"gguf"},
		"siblings":     sibs,
	}
}

// listed returns the paths of c the hub still has, sorted.
func (h *Hub) listed(rp *repo, c *commit) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var ps []string
	for _, p := range sortedPaths(c) {
		if _, ok := rp.has(c, p); ok {
			ps = append(ps, p)
		}
	}
	return ps
}

func sortedPaths(c *commit) []string {
	ps := make([]string, 0, len(c.files))
	for p := range c.files {
		ps = append(ps, p)
	}
	sort.Strings(ps)
	return ps
}

type treeEntry struct {
	Type string   `json:"type"`
	OID  string   `json:"oid"`
	Size int      `json:"size"`
	Path string   `json:"path"`
	LFS  *lfsInfo `json:"lfs,omitempty"`
}

// serveTree lists dir (recursively with ?recursive=true), a page at a
// time; the cursor is opaque to clients, as on the hub.
func (h *Hub) serveTree(w http.ResponseWriter, r *http.Request, rp *repo, c *commit, dir string) {
	recursive := strings.EqualFold(r.URL.Query().Get("recursive"), "true")
	dirs := map[string]bool{}
	var entries []treeEntry
	for _, p := range h.listed(rp, c) {
		rel := p
		if dir != "" {
			var ok bool
			if rel, ok = strings.CutPrefix(p, dir+"/"); !ok {
				continue
			}
		}
		parts := strings.Split(rel, "/")
		for i := 1; i < len(parts); i++ {
			d := strings.Join(parts[:i], "/")
			if !dirs[d] && (recursive || i == 1) {
				dirs[d] = true
				full := path.Join(dir, d)
				entries = append(entries, treeEntry{Type: "directory", Path: full, OID: GitBlobID([]byte("tree " + full))})
			}
		}
		if !recursive && len(parts) > 1 {
			continue
		}
		b := c.files[p]
		e := treeEntry{Type: "file", Path: p, OID: b.oid, Size: len(b.data)}
		if b.lfs {
			e.LFS = &lfsInfo{OID: b.sha256, Size: len(b.data), PointerSize: b.ptr}
		}
		entries = append(entries, e)
	}
	if dir != "" && len(entries) == 0 {
		writeJSONError(w, http.StatusNotFound, "EntryNotFound", fmt.Sprintf("%s does not exist on %q", dir, c.sha))
		return
	}
	sort.SliceStable(entries, func(i, j int) bool { return entries[i].Path < entries[j].Path })
	size := rp.opts.PageSize
	if size <= 0 {
		size = 1000
	}
	start := 0
	if cur := r.URL.Query().Get("cursor"); cur != "" {
		b, err := base64.RawURLEncoding.DecodeString(cur)
		n, err2 := strconv.Atoi(string(b))
		if err != nil || err2 != nil || n < 0 || n > len(entries) {
			writeJSONError(w, http.StatusBadRequest, "", "Invalid cursor")
			return
		}
		start = n
	}
	end := min(start+size, len(entries))
	if end < len(entries) {
		next := *r.URL
		q := next.Query()
		q.Set("cursor", base64.RawURLEncoding.EncodeToString([]byte(strconv.Itoa(end))))
		next.RawQuery = q.Encode()
		w.Header().Set("Link", fmt.Sprintf(`<http://%s%s>; rel="next"`, r.Host, next.RequestURI()))
	}
	page := entries[start:end]
	if page == nil {
		page = []treeEntry{}
	}
	writeJSON(w, page)
}

func (h *Hub) serveRefs(w http.ResponseWriter, rp *repo) {
	type ref struct {
		Name         string `json:"name"`
		Ref          string `json:"ref"`
		TargetCommit string `json:"targetCommit"`
	}
	h.mu.Lock()
	var names []string
	for n := range rp.refs {
		names = append(names, n)
	}
	sort.Strings(names)
	branches, tags := []ref{}, []ref{}
	for _, n := range names {
		if rp.tags[n] {
			tags = append(tags, ref{n, "refs/tags/" + n, rp.refs[n]})
		} else {
			branches = append(branches, ref{n, "refs/heads/" + n, rp.refs[n]})
		}
	}
	h.mu.Unlock()
	writeJSON(w, map[string]any{"branches": branches, "converts": []ref{}, "tags": tags})
}

// serveResolve handles /{repo}/resolve/{rev}/{path}: git files are served
// here, LFS files are redirected to the CDN with the X-Linked-* headers.
func (h *Hub) serveResolve(w http.ResponseWriter, r *http.Request, tok, id, revEsc, pathEsc string) {
	rp, ok := h.lookup(w, id, tok)
	if !ok {
		return
	}
	rev, _ := url.PathUnescape(revEsc)
	file, _ := url.PathUnescape(pathEsc)
	if rp.opts.Gated && (tok == "" || tok != rp.opts.Token) {
		if tok == "" {
			writeJSONError(w, http.StatusUnauthorized, "GatedRepo", fmt.Sprintf("Access to model %s is restricted. You must have access to it and be authenticated to access it. Please log in.", rp.id))
		} else {
			writeJSONError(w, http.StatusForbidden, "GatedRepo", fmt.Sprintf("Access to model %s is restricted and you are not in the authorized list. Visit https://huggingface.co/%s to ask for access.", rp.id, rp.id))
		}
		return
	}
	c, ok := h.resolveRev(w, rp, rev)
	if !ok {
		return
	}
	h.mu.Lock()
	b, ok := rp.serves(c, file)
	h.mu.Unlock()
	if !ok {
		writeJSONError(w, http.StatusNotFound, "EntryNotFound", "Entry not found")
		return
	}
	w.Header().Set("X-Repo-Commit", c.sha)
	w.Header().Set("ETag", `"`+b.oid+`"`)
	if b.lfs {
		w.Header().Set("X-Linked-Etag", `"`+b.sha256+`"`)
		w.Header().Set("X-Linked-Size", strconv.Itoa(len(b.data)))
		base := "http://" + r.Host
		h.mu.Lock()
		if h.CDN != nil {
			base = h.CDN.URL
		}
		h.mu.Unlock()
		q := url.Values{"filename": {file}, "Expires": {"1999999999"}, "Signature": {"stand-in"}}
		w.Header().Set("Location", base+"/cdn/repos/"+rp.id+"/"+b.sha256+"?"+q.Encode())
		w.WriteHeader(http.StatusFound)
		return
	}
	h.serveContent(w, r, rp.id, file, b)
}

// serveCDN handles /cdn/repos/{owner}/{name}/{sha256}?filename=….
func (h *Hub) serveCDN(w http.ResponseWriter, r *http.Request, rest string) {
	segs := strings.Split(rest, "/")
	if len(segs) != 4 || segs[0] != "repos" {
		http.NotFound(w, r)
		return
	}
	id := segs[1] + "/" + segs[2]
	h.mu.Lock()
	var found *blob
	if rp, ok := h.repos[id]; ok {
		for _, c := range rp.commits {
			for p, b := range c.files {
				if b.lfs && b.sha256 == segs[3] && !rp.deleted[p] && !rp.purged[p] {
					found = b
				}
			}
		}
	}
	h.mu.Unlock()
	if found == nil {
		w.WriteHeader(http.StatusForbidden) // as S3 answers an unknown key
		io.WriteString(w, "<Error><Code>AccessDenied</Code></Error>")
		return
	}
	w.Header().Set("ETag", `"`+found.sha256+`"`)
	h.serveContent(w, r, id, r.URL.Query().Get("filename"), found)
}

// serveContent serves b's bytes with Range support, applying the
// NoRange, Corrupt and CutNext faults.
func (h *Hub) serveContent(w http.ResponseWriter, r *http.Request, id, file string, b *blob) {
	key := id + "\x00" + file
	h.mu.Lock()
	noRange, corrupt := h.noRange, h.corrupt[key]
	var cutAfter int64 = -1
	if c := h.cuts[key]; c != nil && c.n > 0 && r.Method == http.MethodGet {
		c.n--
		cutAfter = c.after
	}
	h.mu.Unlock()
	data := b.data
	if corrupt {
		data = append([]byte(nil), data...)
		for i := len(data) / 2; i < len(data); i++ {
			data[i] = ^data[i]
		}
	}
	if noRange {
		r.Header.Del("Range")
	}
	w.Header().Set("Accept-Ranges", "bytes")
	w.Header().Set("Content-Type", "application/octet-stream")
	if cutAfter >= 0 {
		w = &cutWriter{ResponseWriter: w, left: cutAfter}
	}
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(data))
}

// cutWriter passes left bytes through, then aborts the connection
// mid-body.
type cutWriter struct {
	http.ResponseWriter
	left int64
}

func (c *cutWriter) Write(p []byte) (int, error) {
	if int64(len(p)) <= c.left {
		c.left -= int64(len(p))
		return c.ResponseWriter.Write(p)
	}
	n, _ := c.ResponseWriter.Write(p[:c.left])
	c.left = 0
	if f, ok := c.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
	_ = n
	panic(http.ErrAbortHandler)
}
