package testscripts

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/rogpeppe/go-internal/testscript"
)

func init() {
	// registry-proxy [-hold-after N]: start a proxy in front of the test
	// registry that forwards each request once its whole body has arrived
	// (as nginx does by default), so that a client killed in the middle
	// of a request leaves nothing of it in the registry; point ARCHIVE at
	// it (after registry-login) and log in to it. It writes the bytes of
	// blob upload bodies it forwarded to $WORK/proxy-sent (PATCH and PUT
	// under /blobs/uploads/; manifests are not counted), and of the chunks
	// alone (PATCH) to $WORK/proxy-chunks. With
	// -hold-after N, once it has forwarded N upload bytes it holds the
	// next upload request (never forwarded) and creates
	// $WORK/proxy-holding, so that a script can kill the client while a
	// chunk is in flight; later requests pass.
	// With -hold-get, it answers the first GET of a blob larger than 1 MiB
	// with its headers and half its body, then holds the rest and creates
	// $WORK/proxy-holding, so that a script can interrupt a pull in the
	// middle of a file.
	// registry-proxy reset: set the count to 0.
	scriptCmds["registry-proxy"] = registryProxy
}

type regProxy struct {
	mu      sync.Mutex
	sent    int64
	chunks  int64
	hold    int64 // -1: none
	holdGet bool
	holding bool
	work    string
}

var (
	regProxiesMu sync.Mutex
	regProxies   = map[*testscript.TestScript]*regProxy{}
)

func (p *regProxy) write() {
	os.WriteFile(filepath.Join(p.work, "proxy-sent"), []byte(strconv.FormatInt(p.sent, 10)+"\n"), 0o644)
	os.WriteFile(filepath.Join(p.work, "proxy-chunks"), []byte(strconv.FormatInt(p.chunks, 10)+"\n"), 0o644)
}

// holdGetNow says whether this answer is the blob GET that -hold-get holds.
func (p *regProxy) holdGetNow(r *http.Request, code, size int) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.holdGet || p.holding || r.Method != http.MethodGet || code != http.StatusOK ||
		!strings.Contains(r.URL.Path, "/blobs/sha256:") || size <= 1<<20 {
		return false
	}
	p.holding = true
	return true
}

func registryProxy(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! registry-proxy")
	}
	if len(args) == 1 && args[0] == "reset" {
		regProxiesMu.Lock()
		p := regProxies[ts]
		regProxiesMu.Unlock()
		if p == nil {
			ts.Fatalf("registry-proxy reset: no proxy started")
		}
		p.mu.Lock()
		p.sent, p.chunks = 0, 0
		p.write()
		p.mu.Unlock()
		return
	}
	hold, holdGet := int64(-1), false
	if len(args) == 1 && args[0] == "-hold-get" {
		holdGet = true
	} else if len(args) == 2 && args[0] == "-hold-after" {
		n, err := strconv.ParseInt(args[1], 10, 64)
		ts.Check(err)
		hold = n
	} else if len(args) != 0 {
		ts.Fatalf("usage: registry-proxy [-hold-after N | -hold-get] | registry-proxy reset")
	}
	host, user, pw := ts.Getenv("RIGOR_TEST_REGISTRY"), ts.Getenv("RIGOR_TEST_REGISTRY_USER"), ts.Getenv("RIGOR_TEST_REGISTRY_PASSWORD")
	archive := ts.Getenv("ARCHIVE")
	if host == "" || !strings.HasPrefix(archive, "oci://"+host+"/") {
		ts.Fatalf("registry-proxy: run registry-login first")
	}
	target, _ := url.Parse("http://" + host)
	rp := httputil.NewSingleHostReverseProxy(target)
	p := &regProxy{hold: hold, holdGet: holdGet, work: ts.Getenv("WORK")}
	p.write()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil || r.ContentLength > 0 && int64(len(b)) != r.ContentLength {
			return // the client went away: nothing of its request is forwarded
		}
		upload := (r.Method == http.MethodPatch || r.Method == http.MethodPut) && strings.Contains(r.URL.Path, "/blobs/uploads/")
		p.mu.Lock()
		if upload && len(b) > 0 && p.hold >= 0 && p.sent >= p.hold && !p.holding {
			p.holding = true
			p.mu.Unlock()
			os.WriteFile(filepath.Join(p.work, "proxy-holding"), nil, 0o644)
			<-r.Context().Done() // held until the client goes away
			return
		}
		p.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(b))
		rec := httptest.NewRecorder()
		rp.ServeHTTP(rec, r)
		if upload && rec.Code < 300 {
			p.mu.Lock()
			p.sent += int64(len(b))
			if r.Method == http.MethodPatch {
				p.chunks += int64(len(b))
			}
			p.write()
			p.mu.Unlock()
		}
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		body := rec.Body.Bytes()
		if p.holdGetNow(r, rec.Code, len(body)) {
			w.Write(body[:len(body)/2])
			w.(http.Flusher).Flush()
			os.WriteFile(filepath.Join(p.work, "proxy-holding"), nil, 0o644)
			<-r.Context().Done() // held until the client goes away
			return
		}
		w.Write(body)
	}))
	ts.Defer(srv.Close)
	regProxiesMu.Lock()
	regProxies[ts] = p
	regProxiesMu.Unlock()
	ts.Defer(func() {
		regProxiesMu.Lock()
		delete(regProxies, ts)
		regProxiesMu.Unlock()
	})
	phost := strings.TrimPrefix(srv.URL, "http://")
	ts.Setenv("ARCHIVE", "oci://"+phost+strings.TrimPrefix(archive, "oci://"+host))
	auth := base64.StdEncoding.EncodeToString([]byte(user + ":" + pw))
	ts.Check(os.WriteFile(filepath.Join(ts.Getenv("HOME"), ".docker", "config.json"),
		[]byte(fmt.Sprintf("{\"auths\": {%q: {\"auth\": %q}, %q: {\"auth\": %q}}}\n", host, auth, phost, auth)), 0o600))
}
