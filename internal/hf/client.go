package hf

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// DefaultEndpoint is the hub used when HF_ENDPOINT is not set.
const DefaultEndpoint = "https://huggingface.co"

// Defaults for [ClientOptions] fields left zero.
const (
	DefaultTimeout    = 10 * time.Second // HF_HUB_ETAG_TIMEOUT's default
	DefaultMaxRetries = 5
	DefaultBackoff    = 1 * time.Second
	DefaultMaxBackoff = 60 * time.Second
)

// ClientOptions configures a [Client]. Zero fields take the defaults.
type ClientOptions struct {
	// Endpoint is the hub base URL; a trailing "/" is stripped.
	// Default [DefaultEndpoint].
	Endpoint string
	// Token is sent as "Authorization: Bearer <token>" to the endpoint's
	// host only (never across a redirect to another host).
	Token string
	// Offline makes every operation that needs the network fail with
	// [ErrOffline] without a request.
	Offline bool
	// HTTPClient is the client to send requests with; nil means a client
	// built on http.DefaultTransport. Its CheckRedirect is wrapped so that
	// the token is dropped on redirects to another host.
	HTTPClient *http.Client
	// Timeout bounds the wait for response headers and any stall while
	// reading a body (a large download may take longer in total, but it
	// must keep moving). Default [DefaultTimeout].
	Timeout time.Duration
	// MaxRetries is how many times a transient failure (429, 5xx, timeout,
	// dropped connection) is retried. Zero means [DefaultMaxRetries];
	// negative means no retry.
	MaxRetries int
	// Backoff is the wait before the first retry, doubled for each further
	// one up to MaxBackoff. A Retry-After header from the hub overrides it
	// (capped at MaxBackoff). Defaults [DefaultBackoff], [DefaultMaxBackoff].
	Backoff, MaxBackoff time.Duration
	// Sleep waits between retries; nil means a timer that stops early when
	// ctx is done. Tests inject a recorder.
	Sleep func(ctx context.Context, d time.Duration) error
	// UserAgent is sent as User-Agent; default "rigor".
	UserAgent string
}

// Client talks to one Hugging Face hub. It is safe for concurrent use.
type Client struct {
	endpoint   string
	host       string // endpoint host, the only one that gets the token
	token      string
	offline    bool
	http       *http.Client
	noFollow   *http.Client // http, returning redirects instead of following them
	timeout    time.Duration
	maxRetries int
	backoff    time.Duration
	maxBackoff time.Duration
	sleep      func(context.Context, time.Duration) error
	userAgent  string
	red        redactor
}

// NewClient returns a client configured by opts.
func NewClient(opts ClientOptions) *Client {
	c := &Client{
		endpoint:   strings.TrimRight(opts.Endpoint, "/"),
		token:      opts.Token,
		offline:    opts.Offline,
		timeout:    opts.Timeout,
		maxRetries: opts.MaxRetries,
		backoff:    opts.Backoff,
		maxBackoff: opts.MaxBackoff,
		sleep:      opts.Sleep,
		userAgent:  opts.UserAgent,
		red:        redactor(opts.Token),
	}
	if c.endpoint == "" {
		c.endpoint = DefaultEndpoint
	}
	if u, err := url.Parse(c.endpoint); err == nil {
		c.host = u.Host
	}
	if c.timeout <= 0 {
		c.timeout = DefaultTimeout
	}
	switch {
	case c.maxRetries == 0:
		c.maxRetries = DefaultMaxRetries
	case c.maxRetries < 0:
		c.maxRetries = 0
	}
	if c.backoff <= 0 {
		c.backoff = DefaultBackoff
	}
	if c.maxBackoff <= 0 {
		c.maxBackoff = DefaultMaxBackoff
	}
	if c.sleep == nil {
		c.sleep = sleepCtx
	}
	if c.userAgent == "" {
		c.userAgent = "rigor"
	}
	hc := opts.HTTPClient
	if hc == nil {
		hc = &http.Client{}
	}
	copied := *hc
	inner := copied.CheckRedirect
	copied.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		// Like huggingface_hub: the token goes to the hub only, never to
		// the CDN or any other host a redirect points at.
		if req.URL.Host != via[0].URL.Host {
			req.Header.Del("Authorization")
		}
		if inner != nil {
			return inner(req, via)
		}
		return nil
	}
	copied.Timeout = 0 // deadlines are per attempt and per stall, see watchdog
	c.http = &copied
	noFollow := copied
	noFollow.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	c.noFollow = &noFollow
	return c
}

// OptionsFromEnv reads HF_ENDPOINT, HF_TOKEN (else the file named by
// HF_TOKEN_PATH, else $HF_HOME/token), HF_HUB_OFFLINE or
// TRANSFORMERS_OFFLINE (1/ON/YES/TRUE), and the larger of
// HF_HUB_ETAG_TIMEOUT and HF_HUB_DOWNLOAD_TIMEOUT (seconds) as Timeout,
// through getenv.
func OptionsFromEnv(getenv func(string) string) ClientOptions {
	opts := ClientOptions{
		Endpoint: strings.TrimRight(strings.TrimSpace(getenv("HF_ENDPOINT")), "/"),
		Token:    strings.TrimSpace(getenv("HF_TOKEN")),
		Offline:  envBool(getenv("HF_HUB_OFFLINE")) || envBool(getenv("TRANSFORMERS_OFFLINE")),
	}
	for _, k := range []string{"HF_HUB_ETAG_TIMEOUT", "HF_HUB_DOWNLOAD_TIMEOUT"} {
		// Unparsable values are ignored, as huggingface_hub falls back to
		// its default.
		if secs, err := strconv.ParseFloat(strings.TrimSpace(getenv(k)), 64); err == nil && secs > 0 && secs < 1e6 {
			opts.Timeout = max(opts.Timeout, time.Duration(secs*float64(time.Second)))
		}
	}
	if opts.Token == "" {
		p := getenv("HF_TOKEN_PATH")
		if p == "" {
			if home, err := homeDir(getenv); err == nil {
				p = filepath.Join(home, "token")
			}
		}
		if p != "" {
			// A missing or unreadable token file means no token, as in
			// huggingface_hub.
			if b, err := os.ReadFile(p); err == nil {
				opts.Token = strings.TrimSpace(string(b))
			}
		}
	}
	return opts
}

// envBool reports whether v is one of the hub's true values.
func envBool(v string) bool {
	switch strings.ToUpper(strings.TrimSpace(v)) {
	case "1", "ON", "YES", "TRUE":
		return true
	}
	return false
}

// Endpoint returns the hub base URL the client uses.
func (c *Client) Endpoint() string { return c.endpoint }

// Offline reports whether offline mode is on.
func (c *Client) Offline() bool { return c.offline }

// HasToken reports whether the client sends a token.
func (c *Client) HasToken() bool { return c.token != "" }

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// request describes one hub request, for sending and for error messages.
type request struct {
	method string
	url    string
	header http.Header
	repo   string
	rev    string
	path   string
	// noRedirect returns a redirect (an LFS file's 302 to the CDN) as
	// the answer instead of following it.
	noRedirect bool
}

// watchdog cancels an attempt when nothing has happened for d: no
// response headers, or no body bytes.
type watchdog struct {
	d      time.Duration
	timer  *time.Timer
	fired  atomic.Bool
	cancel context.CancelFunc
}

func newWatchdog(parent context.Context, d time.Duration) (context.Context, *watchdog) {
	ctx, cancel := context.WithCancel(parent)
	w := &watchdog{d: d, cancel: cancel}
	w.timer = time.AfterFunc(d, func() {
		w.fired.Store(true)
		cancel()
	})
	return ctx, w
}

func (w *watchdog) kick() { w.timer.Reset(w.d) }

func (w *watchdog) stop() {
	w.timer.Stop()
	w.cancel()
}

// watchedBody kicks the watchdog on every read that makes progress.
type watchedBody struct {
	io.ReadCloser
	w *watchdog
}

func (b *watchedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.w.kick()
	}
	return n, err
}

// attemptError is the outcome of one failed attempt.
type attemptError struct {
	err        error
	transient  bool
	retryAfter time.Duration
}

// send makes one attempt. On success the caller must call done after
// reading the body; the body stalls out after the client's timeout.
func (c *Client) send(ctx context.Context, r request) (resp *http.Response, done func(), aerr *attemptError) {
	actx, w := newWatchdog(ctx, c.timeout)
	req, err := http.NewRequestWithContext(actx, r.method, r.url, nil)
	if err != nil {
		w.stop()
		return nil, nil, &attemptError{err: fmt.Errorf("building request %s %s: %w", r.method, r.url, err)}
	}
	for k, v := range r.header {
		req.Header[k] = v
	}
	req.Header.Set("User-Agent", c.userAgent)
	if c.token != "" && req.URL.Host == c.host {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	hc := c.http
	if r.noRedirect {
		hc = c.noFollow
	}
	resp, err = hc.Do(req)
	if err != nil {
		w.stop()
		return nil, nil, c.transportError(ctx, w, r, err)
	}
	w.kick()
	resp.Body = &watchedBody{resp.Body, w}
	done = func() {
		resp.Body.Close()
		w.stop()
	}
	if resp.StatusCode >= 200 && resp.StatusCode < 300 || r.noRedirect && resp.StatusCode >= 300 && resp.StatusCode < 400 {
		return resp, done, nil
	}
	herr := c.hubError(resp, r)
	done()
	ae := &attemptError{err: herr}
	if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500 {
		ae.transient = true
		ae.retryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
	}
	return nil, nil, ae
}

// transportError classifies an error from sending or reading: the caller's
// context, our timeout, an unreachable hub, or a dropped connection.
func (c *Client) transportError(ctx context.Context, w *watchdog, r request, err error) *attemptError {
	if ctx.Err() != nil {
		return &attemptError{err: fmt.Errorf("%s %s: %w", r.method, r.url, ctx.Err())}
	}
	if w.fired.Load() {
		return &attemptError{err: &TimeoutError{Endpoint: c.endpoint, Method: r.method, URL: r.url, After: c.timeout}, transient: true}
	}
	var dnsErr *net.DNSError
	var opErr *net.OpError
	if errors.As(err, &dnsErr) || (errors.As(err, &opErr) && opErr.Op == "dial") {
		return &attemptError{err: &UnreachableError{Endpoint: c.endpoint, Server: c.otherServer(err), Err: errors.New(c.red.redact(err.Error()))}, transient: true}
	}
	return &attemptError{err: c.red.wrap(fmt.Errorf("%s %s: %w", r.method, r.url, err)), transient: true}
}

// otherServer returns the scheme and host a failed request was sent to
// when it is not the hub's (a redirect to the CDN), from the *url.Error
// net/http returns; "" for the hub.
func (c *Client) otherServer(err error) string {
	var ue *url.Error
	if !errors.As(err, &ue) {
		return ""
	}
	u, perr := url.Parse(ue.URL)
	if perr != nil || u.Host == "" || u.Host == c.host {
		return ""
	}
	return u.Scheme + "://" + u.Host
}

// hubError builds a HubError from a non-2xx response.
func (c *Client) hubError(resp *http.Response, r request) *HubError {
	e := &HubError{
		Status:    resp.StatusCode,
		Code:      resp.Header.Get("X-Error-Code"),
		Message:   resp.Header.Get("X-Error-Message"),
		Method:    r.method,
		URL:       r.url,
		Endpoint:  c.endpoint,
		Repo:      r.repo,
		Revision:  r.rev,
		Path:      r.path,
		TokenSent: c.token != "",
		Attempts:  1,
	}
	if resp.Request != nil && resp.Request.URL.Host != c.host {
		// The CDN a download was redirected to, which never gets the token.
		e.Server = resp.Request.URL.Scheme + "://" + resp.Request.URL.Host
		e.TokenSent = false
	}
	if e.Message == "" {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		var j struct {
			Error any `json:"error"`
		}
		if json.Unmarshal(body, &j) == nil && j.Error != nil {
			switch v := j.Error.(type) {
			case string:
				e.Message = v
			default:
				b, _ := json.Marshal(v)
				e.Message = string(b)
			}
		} else if !strings.Contains(resp.Header.Get("Content-Type"), "html") {
			e.Message = strings.Join(strings.Fields(string(body)), " ")
		}
	}
	if len(e.Message) > 300 {
		e.Message = e.Message[:300] + "…"
	}
	e.Message = c.red.redact(e.Message)
	return e
}

// parseRetryAfter reads a Retry-After value: seconds or an HTTP date.
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if n, err := strconv.Atoi(v); err == nil {
		if n < 0 {
			return 0
		}
		return time.Duration(min(n, 86400)) * time.Second // no overflow
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// retry runs fn until it succeeds, fails permanently, or has been retried
// maxRetries times; between attempts it sleeps with exponential backoff or
// the server's Retry-After.
func (c *Client) retry(ctx context.Context, fn func() *attemptError) error {
	wait := c.backoff
	for attempt := 1; ; attempt++ {
		ae := fn()
		if ae == nil {
			return nil
		}
		if !ae.transient || attempt > c.maxRetries {
			return c.red.wrap(withAttempts(ae.err, attempt))
		}
		d := wait
		if ae.retryAfter > 0 {
			d = ae.retryAfter
		}
		d = min(d, c.maxBackoff)
		if err := c.sleep(ctx, d); err != nil {
			return fmt.Errorf("waiting to retry after %v: %w", c.red.wrap(ae.err), err)
		}
		wait = min(2*wait, c.maxBackoff)
	}
}

// withAttempts records the attempt count in the error.
func withAttempts(err error, n int) error {
	if n <= 1 {
		return err
	}
	var he *HubError
	var te *TimeoutError
	var ue *UnreachableError
	switch {
	case errors.As(err, &he):
		he.Attempts = n
	case errors.As(err, &te):
		te.Attempts = n
	case errors.As(err, &ue):
		ue.Attempts = n
	default:
		return fmt.Errorf("%w (gave up after %d attempts)", err, n)
	}
	return err
}

// getJSON fetches r and decodes the JSON body into v, retrying transient
// failures. It returns the response headers of the successful attempt.
func (c *Client) getJSON(ctx context.Context, r request, v any) (http.Header, error) {
	if c.offline {
		return nil, fmt.Errorf("%s %s: %w", r.method, r.url, ErrOffline)
	}
	var hdr http.Header
	err := c.retry(ctx, func() *attemptError {
		resp, done, ae := c.send(ctx, r)
		if ae != nil {
			return ae
		}
		defer done()
		body, err := io.ReadAll(io.LimitReader(resp.Body, 256<<20))
		if err != nil {
			return c.transportError(ctx, resp.Body.(*watchedBody).w, r, err)
		}
		if err := json.Unmarshal(body, v); err != nil {
			// A truncated or garbled answer (a proxy's error page with
			// status 200, a dropped connection the server did not report)
			// is tried again, as a 5xx is.
			return &attemptError{err: fmt.Errorf("decoding response of %s %s: %w", r.method, r.url, err), transient: true}
		}
		hdr = resp.Header
		return nil
	})
	return hdr, err
}
