package buildcache

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Toolchain returns the first line of --version of the C and C++
// compilers and cmake, or "not found". Answers are remembered in
// <cache>/builds/toolchain.json under each executable's path, size, mtime
// and inode, so that a cache lookup does not start three processes; an
// upgraded compiler has another stat and is asked again.
func Toolchain(ctx context.Context, cache string, env map[string]string) map[string]string {
	pick := func(key, def string) string {
		if v := env[key]; v != "" {
			return v
		}
		if v := os.Getenv(key); v != "" {
			return v
		}
		return def
	}
	tools := map[string]string{"cc": pick("CC", "cc"), "c++": pick("CXX", "c++"), "cmake": "cmake"}
	memoPath := filepath.Join(cache, "builds", "toolchain.json")
	memo := map[string]string{}
	if b, err := os.ReadFile(memoPath); err == nil {
		json.Unmarshal(b, &memo)
	}
	out := make(map[string]string, len(tools))
	var mu sync.Mutex
	var wg sync.WaitGroup
	changed := false
	stats := map[string]string{}
	for name, bin := range tools {
		stat := ""
		if p, err := exec.LookPath(bin); err == nil {
			if fi, err := os.Stat(p); err == nil {
				stat = fmt.Sprintf("%s|%d|%d", p, fi.Size(), fi.ModTime().UnixNano())
				if st, ok := fi.Sys().(*syscall.Stat_t); ok {
					stat += fmt.Sprintf("|%d|%d", st.Dev, st.Ino)
				}
			}
		}
		if v, ok := memo[stat]; ok && stat != "" {
			out[name] = v
			continue
		}
		stats[name] = stat
	}
	for name, stat := range stats {
		bin := tools[name]
		wg.Add(1)
		go func() {
			defer wg.Done()
			v := "not found: " + bin
			cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			ok := false
			if b, err := exec.CommandContext(cctx, bin, "--version").Output(); err == nil {
				line, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
				v, ok = strings.TrimSpace(line), true
			}
			mu.Lock()
			out[name] = v
			if ok && stat != "" {
				memo[stat], changed = v, true
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	if changed {
		if b, err := json.MarshalIndent(memo, "", "  "); err == nil && os.MkdirAll(filepath.Dir(memoPath), 0o755) == nil {
			tmp := memoPath + ".tmp-" + strconv.Itoa(os.Getpid())
			if os.WriteFile(tmp, append(b, '\n'), 0o644) == nil {
				os.Rename(tmp, memoPath)
			}
		}
	}
	return out
}
