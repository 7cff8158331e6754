package report

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/rigorbench/rigor/internal/compare"
)

// chromium finds the browser: $RIGOR_CHROMIUM, else Debian's chromium.
// In CI (CI=true) a missing browser fails the test: .ci/run installs it,
// and a report nobody opened is not tested. Elsewhere the test skips.
func chromium(t *testing.T) string {
	t.Helper()
	for _, p := range []string{os.Getenv("RIGOR_CHROMIUM"), "/usr/bin/chromium", "chromium", "chromium-browser"} {
		if p == "" {
			continue
		}
		if path, err := exec.LookPath(p); err == nil {
			return path
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium is not installed: CI must open the report in a real browser (.ci/run installs Debian's chromium)")
	}
	t.Skip("chromium is not installed (apt-get install chromium, or set RIGOR_CHROMIUM); skipping the browser test outside CI")
	return ""
}

// artifacts is where screenshots go: $RIGOR_ARTIFACTS/report-browser
// when set, else the test's artifact directory (kept with go test
// -artifacts).
func artifacts(t *testing.T) string {
	dir := t.ArtifactDir()
	if a := os.Getenv("RIGOR_ARTIFACTS"); a != "" {
		dir = filepath.Join(a, "report-browser")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// pageCheck is what a page must show in the browser.
type pageCheck struct {
	path  string
	plots int      // SVG plots with role img and a title, at least
	text  []string // visible text
}

// svgInfo is what the page script reports of each plot.
type svgInfo struct {
	Role   string  `json:"role"`
	Title  string  `json:"title"`
	Desc   string  `json:"desc"`
	Width  float64 `json:"width"`
	Height float64 `json:"height"`
	Texts  int     `json:"texts"`
}

const inspectJS = `(() => [...document.querySelectorAll('svg')].map(s => {
  const r = s.getBoundingClientRect();
  return {role: s.getAttribute('role') || '', title: (s.querySelector('title') || {}).textContent || '',
    desc: (s.querySelector('desc') || {}).textContent || '', width: r.width, height: r.height,
    texts: s.querySelectorAll('text').length};
}))()`

// TestBrowser opens the pages of a generated report, and a diff page of
// `rigor diff --format html`, in headless Chromium: no console error, no
// failed request, no request leaving the files, every plot present and
// drawn with its title, the text there; a screenshot of each page is kept.
func TestBrowser(t *testing.T) {
	bin := chromium(t)
	runs := genRuns(realisticRepo(), 0.02)
	site, err := Build(runs, Options{Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "site")
	if err := site.Write(dir); err != nil {
		t.Fatal(err)
	}
	// A standalone diff page, as `rigor diff A B --format html` writes it.
	a, b := previousAndLatest(runs[:0:0])
	for _, r := range runs {
		if r.Experiment == "minimax-m27-b70/ubSweep" {
			if r.Start.Month() < 6 {
				a = append(a, *r)
			} else {
				b = append(b, *r)
			}
		}
	}
	rep, err := compare.Compare(compare.Side{Label: "minimax-m27-b70/ubSweep@spring", Runs: a},
		compare.Side{Label: "minimax-m27-b70/ubSweep", Runs: b}, compare.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var diff bytes.Buffer
	if err := DiffPage(&diff, rep, DiffOptions{Version: "test"}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "standalone-diff.html"), diff.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}

	// A broken page proves the listeners hear what they must: a console
	// error, an exception, a missing file and a request to the network.
	broken := `<!DOCTYPE html><html lang="en"><head><title>broken</title></head><body>
<img src="missing.png" alt=""><script>console.error("boom"); fetch("http://127.0.0.1:9/x").catch(() => {}); throw new Error("bang")</script>
<footer>end</footer></body></html>`
	if err := os.WriteFile(filepath.Join(dir, "broken.html"), []byte(broken), 0o644); err != nil {
		t.Fatal(err)
	}

	checks := []pageCheck{
		{"index.html", 0, []string{"15 experiments", "qwen25-7b-4090/base", "sweep of 12 points", "tokSOut tg128", "▲"}},
		{"experiments/qwen25-7b-4090/base.html", 2, []string{"Runs", "engine failed before decode", "▲ lock.engine."}},
		{"experiments/minimax-m27-b70/ubSweep.html", 1, []string{"nkvo=1 ub=512"}},
		{"experiments/minimax-m27-int4-b70/vllmThroughput.html", 3, []string{"latencyMs throughput (ms)"}},
		{"sweeps/minimax-m27-b70/ubSweep.html", 2, []string{"12 points over nkvo × ub", "Points"}},
		{"sweeps/llama31-8b-cpu/threads.html", 2, []string{"5 points over t"}},
		{"diffs/qwen25-7b-4090/base.html", 2, []string{"Configuration", "Metrics", "tokSOut tg128", "verdict"}},
		{"standalone-diff.html", 1, []string{"Configuration", "untested", "geomean", "ubSweep@spring"}},
	}

	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(bin),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	}
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelA()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	// Start the browser with a context that has no timeout (a timeout on
	// the first run would stop the browser with it).
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("starting %s: %v", bin, err)
	}

	var mu sync.Mutex
	var problems []string
	note := func(format string, args ...any) {
		mu.Lock()
		problems = append(problems, fmt.Sprintf(format, args...))
		mu.Unlock()
	}
	err = chromedp.Listen(ctx, func(ev any) {
		switch e := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.ConsoleAPICalledTypeError || e.Type == runtime.ConsoleAPICalledTypeAssert {
				var args []string
				for _, a := range e.Args {
					args = append(args, string(a.Value)+a.Description)
				}
				note("console %s: %s", e.Type, strings.Join(args, " "))
			}
		case *runtime.EventExceptionThrown:
			note("exception: %s", e.ExceptionDetails.Text)
		case *log.EventEntryAdded:
			if e.Entry.Level == log.EntryLevelError {
				note("log %s: %s %s", e.Entry.Source, e.Entry.Text, e.Entry.URL)
			}
		case *network.EventRequestWillBeSent:
			if !strings.HasPrefix(e.Request.URL, "file://") && !strings.HasPrefix(e.Request.URL, "data:") {
				note("request leaves the files: %s", e.Request.URL)
			}
		case *network.EventLoadingFailed:
			note("request failed: %s %s", e.Type, e.ErrorText)
		case *network.EventResponseReceived:
			if e.Response.Status >= 400 {
				note("response %d: %s", int(e.Response.Status), e.Response.URL)
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(ctx, log.Enable, cdp.Empty{}); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{}); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Call(ctx, runtime.Enable, cdp.Empty{}); err != nil {
		t.Fatal(err)
	}

	shots := artifacts(t)
	t.Logf("screenshots in %s", shots)
	// The broken page first: each kind of problem must be heard.
	{
		mu.Lock()
		problems = nil
		mu.Unlock()
		url := "file://" + filepath.ToSlash(filepath.Join(dir, "broken.html"))
		if err := chromedp.Do(ctx, chromedp.Navigate(url), chromedp.WaitReady(chromedp.CSS("footer"))); err != nil {
			t.Fatal(err)
		}
		// The failed requests report after the load: wait for every kind,
		// up to a deadline generous for a loaded machine.
		// Every event the page causes is waited for, so that none arrives
		// late and is blamed on the next page.
		wants := []string{`console error: "boom"`, "exception: Uncaught",
			"request failed: Image net::ERR_FILE_NOT_FOUND", "log network: Failed to load resource: net::ERR_FILE_NOT_FOUND",
			"request leaves the files: http://127.0.0.1:9/x",
			"request failed: Fetch net::ERR_UNSAFE_PORT", "log network: Failed to load resource: net::ERR_UNSAFE_PORT"}
		var heard string
		for deadline := time.Now().Add(30 * time.Second); ; {
			mu.Lock()
			heard = strings.Join(problems, "\n")
			mu.Unlock()
			all := true
			for _, want := range wants {
				all = all && strings.Contains(heard, want)
			}
			if all || time.Now().After(deadline) {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		for _, want := range wants {
			if !strings.Contains(heard, want) {
				t.Errorf("the broken page: the listeners did not hear %q; heard:\n%s", want, heard)
			}
		}
	}
	for _, c := range checks {
		t.Run(strings.TrimSuffix(c.path, ".html"), func(t *testing.T) {
			mu.Lock()
			problems = nil
			mu.Unlock()
			url := "file://" + filepath.ToSlash(filepath.Join(dir, filepath.FromSlash(c.path)))
			tctx, cancel := context.WithTimeout(ctx, time.Minute)
			defer cancel()
			if err := chromedp.Do(tctx, chromedp.Navigate(url), chromedp.WaitReady(chromedp.CSS("footer"))); err != nil {
				t.Fatalf("opening %s: %v", c.path, err)
			}
			svgs, err := chromedp.Run(tctx, chromedp.Evaluate[[]svgInfo](inspectJS))
			if err != nil {
				t.Fatal(err)
			}
			text, err := chromedp.Run(tctx, chromedp.Evaluate[string](`document.body.innerText`))
			if err != nil {
				t.Fatal(err)
			}
			overflow, err := chromedp.Run(tctx, chromedp.Evaluate[bool](`document.documentElement.scrollWidth > window.innerWidth`))
			if err != nil {
				t.Fatal(err)
			}
			png, err := chromedp.Run(tctx, chromedp.FullScreenshot(100))
			if err != nil {
				t.Fatal(err)
			}
			name := strings.ReplaceAll(strings.TrimSuffix(c.path, ".html"), "/", "_") + ".png"
			if err := os.WriteFile(filepath.Join(shots, name), png, 0o644); err != nil {
				t.Error(err)
			}
			mu.Lock()
			for _, p := range problems {
				t.Errorf("%s: %s", c.path, p)
			}
			mu.Unlock()
			if len(svgs) < c.plots {
				t.Errorf("%s: %d plots, want at least %d", c.path, len(svgs), c.plots)
			}
			for i, s := range svgs {
				if s.Role != "img" || s.Title == "" || s.Desc == "" {
					t.Errorf("%s: plot %d has role %q, title %q, desc %q; want img and both", c.path, i+1, s.Role, s.Title, s.Desc)
				}
				if s.Width < 400 || s.Height < 150 || s.Texts < 5 {
					t.Errorf("%s: plot %d (%s) drawn %.0f×%.0f px with %d texts; want a readable plot with axes", c.path, i+1, s.Title, s.Width, s.Height, s.Texts)
				}
			}
			for _, want := range c.text {
				if !strings.Contains(text, want) {
					t.Errorf("%s: the page does not show %q", c.path, want)
				}
			}
			if overflow {
				t.Errorf("%s: the page is wider than a 1280 px window", c.path)
			}
		})
	}
	// Whatever the last page reported after its checks arrives before the
	// next navigation ends.
	mu.Lock()
	problems = nil
	mu.Unlock()
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	for _, p := range problems {
		if !strings.Contains(p, "about:blank") {
			t.Errorf("reported after the last page's checks: %s", p)
		}
	}
	mu.Unlock()
}
