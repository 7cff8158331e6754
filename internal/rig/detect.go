package rig

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rigorbench/rigor/internal/hoststate"
)

// RigFileEnv names the environment variable that replaces detection: when
// it holds a path, [Detect] reads the [Rig] from that JSON file (the format
// `rigor rig --json` prints) instead of looking at the machine. Test
// harnesses use it to pretend to be another box, e.g. a 4× Arc Pro B70 rig.
// Summary fields left out of the file are derived from its accelerators.
const RigFileEnv = "RIGOR_RIG_FILE"

// DefaultTimeout bounds each command [Detect] runs.
const DefaultTimeout = 5 * time.Second

// DetectOptions configures [Detect]. The zero value detects the real
// machine.
type DetectOptions struct {
	// RigFile, when set, names a JSON rig that replaces detection (tests;
	// the CLI takes it from $RIGOR_RIG_FILE).
	RigFile string

	// Root is the file system root under which /proc, /sys and /etc are
	// read; "" means "/". When Root is not "/", the kernel release and
	// hostname are also read from Root/proc/sys/kernel/{osrelease,hostname}
	// rather than asked of the running kernel, so that a test tree stands
	// for a whole machine.
	Root string

	// Run runs a command and returns its standard output. name is the bare
	// command name, as given to LookPath. nil runs it with os/exec; a
	// failure's error then carries the first line of standard error.
	Run func(ctx context.Context, name string, args ...string) ([]byte, error)

	// LookPath reports whether a command is installed, as exec.LookPath.
	// nil means exec.LookPath.
	LookPath func(name string) (string, error)

	// Timeout bounds each command; 0 means [DefaultTimeout].
	Timeout time.Duration

	// Cache, when set, is a directory where the toolchain's version lines
	// are kept between runs, keyed by each executable's stat.
	Cache string
}

// Detect describes the machine it runs on. It runs the GPU vendor tools it
// finds on PATH (nvidia-smi; amd-smi, else rocm-smi; xpu-smi, else
// sycl-ls), each under a timeout, reads /proc, /sys/class/drm and
// /etc/os-release under opts.Root, and asks cmake, cc, c++, node, npm,
// python3, nvcc, icpx and hipcc for their versions when they are on PATH.
//
// Nothing missing is an error: a tool that is absent, fails or prints
// something unparseable is skipped and said so in [Rig.Notes], and sysfs
// stands in for absent vendor tools. GPUs that two sources report (same PCI
// address) are merged, the vendor tool's fields winning. Detect returns an
// error only when ctx ends or when opts.RigFile (the CLI reads it from
// [RigFileEnv]) names a file that cannot be read.
func Detect(ctx context.Context, opts DetectOptions) (*Rig, error) {
	if path := opts.RigFile; path != "" {
		r, err := ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", RigFileEnv, err)
		}
		return r, nil
	}
	d := detector{opts: opts}
	if d.opts.Root == "" {
		d.opts.Root = "/"
	}
	if d.opts.Run == nil {
		d.opts.Run = runCommand
	}
	if d.opts.LookPath == nil {
		d.opts.LookPath = exec.LookPath
	}
	if d.opts.Timeout <= 0 {
		d.opts.Timeout = DefaultTimeout
	}
	r := &Rig{Arch: runtime.GOOS + "/" + runtime.GOARCH}
	d.rig = r
	d.host()
	d.gpus(ctx)
	d.toolchain(ctx)
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("detecting rig: %w", err)
	}
	if len(d.missing) > 0 {
		r.Notes = append(r.Notes, "not on PATH: "+strings.Join(d.missing, ", "))
	}
	r.fillSummary()
	return r, nil
}

// ReadFile reads a [Rig] from a JSON file and derives the summary fields
// it leaves out from its accelerators. Unknown fields are an error, so that
// a misspelt key in a hand-written rig file does not pass unnoticed.
func ReadFile(path string) (*Rig, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading rig: %w", err)
	}
	var r Rig
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("reading rig %s: %w", path, err)
	}
	r.fillSummary()
	return &r, nil
}

type detector struct {
	opts    DetectOptions
	rig     *Rig
	missing []string // GPU tools not on PATH, for one note
}

func (d *detector) note(format string, args ...any) {
	d.rig.Notes = append(d.rig.Notes, fmt.Sprintf(format, args...))
}

// path maps an absolute machine path to the path under Root.
func (d *detector) path(p string) string {
	return filepath.Join(d.opts.Root, filepath.FromSlash(p))
}

// read reads a file under Root; a missing file is noted only when
// noteMissing is set.
func (d *detector) read(p string, noteMissing bool) []byte {
	b, err := os.ReadFile(d.path(p))
	if err != nil {
		if noteMissing || !errors.Is(err, fs.ErrNotExist) {
			d.note("reading %s: %v", p, unwrapPathError(err))
		}
		return nil
	}
	return b
}

// unwrapPathError drops the *fs.PathError's path, which under a test root
// would not be the path the note names.
func unwrapPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func (d *detector) host() {
	r := d.rig
	if d.opts.Root == "/" {
		if h, err := os.Hostname(); err == nil {
			r.Hostname = h
		}
		var u unix.Utsname
		if err := unix.Uname(&u); err == nil {
			r.Kernel = unix.ByteSliceToString(u.Release[:])
		} else {
			d.note("uname: %v", err)
		}
	} else {
		r.Hostname = strings.TrimSpace(string(d.read("/proc/sys/kernel/hostname", false)))
		r.Kernel = strings.TrimSpace(string(d.read("/proc/sys/kernel/osrelease", true)))
	}
	if b := d.read("/proc/cpuinfo", true); b != nil {
		if c, err := ParseCPUInfo(b); err != nil {
			d.note("%v", err)
		} else {
			r.HostProcessorModelName, r.HostProcessorCoreCount = c.ModelName, c.LogicalCPUs
		}
	}
	if b := d.read("/proc/meminfo", true); b != nil {
		if n, err := ParseMemInfo(b); err != nil {
			d.note("%v", err)
		} else {
			r.HostMemoryCapacityGB = gib(float64(n))
		}
	}
	b := d.read("/etc/os-release", false)
	if b == nil {
		b = d.read("/usr/lib/os-release", false)
	}
	if b != nil {
		r.OperatingSystem = osName(ParseOSRelease(b))
	} else {
		d.note("no /etc/os-release or /usr/lib/os-release")
	}
}

// run runs a tool under the per-command timeout. ok is false when the tool
// is not on PATH (recorded for the "not on PATH" note when gpuTool is set)
// or failed (noted).
func (d *detector) run(ctx context.Context, gpuTool bool, name string, args ...string) ([]byte, bool) {
	if _, err := d.opts.LookPath(name); err != nil {
		if gpuTool {
			d.missing = append(d.missing, name)
		}
		return nil, false
	}
	if ctx.Err() != nil {
		return nil, false
	}
	cctx, cancel := context.WithTimeout(ctx, d.opts.Timeout)
	defer cancel()
	out, err := d.opts.Run(cctx, name, args...)
	if err != nil {
		if cctx.Err() == context.DeadlineExceeded {
			err = fmt.Errorf("timed out after %v", d.opts.Timeout)
		}
		d.note("%s %s: %v", name, strings.Join(args, " "), err)
		return nil, false
	}
	return out, true
}

// parsed runs a vendor tool and parses its output, noting failures.
func (d *detector) parsed(ctx context.Context, parse func([]byte) ([]GPU, error), name string, args ...string) []GPU {
	out, ok := d.run(ctx, true, name, args...)
	if !ok {
		return nil
	}
	gpus, err := parse(out)
	if err != nil {
		d.note("%s: %v", name, err)
		return nil
	}
	return gpus
}

func (d *detector) gpus(ctx context.Context) {
	var gpus []GPU
	have := func(vendor string) bool {
		for _, g := range gpus {
			if g.Vendor == vendor {
				return true
			}
		}
		return false
	}

	// NVIDIA: nvidia-smi, else the proprietary driver's procfs files.
	gpus = append(gpus, d.parsed(ctx, ParseNvidiaSMI, "nvidia-smi", NvidiaSMIArgs...)...)
	if !have("nvidia") {
		gpus = append(gpus, d.nvidiaProcfs()...)
	}
	if b := d.read("/proc/driver/nvidia/version", false); b != nil {
		if v, err := ParseNvidiaVersion(b); err != nil {
			d.note("%v", err)
		} else {
			for i := range gpus {
				if gpus[i].Vendor == "nvidia" && gpus[i].DriverVersion == "" {
					gpus[i].DriverVersion = v
				}
			}
		}
	}

	// AMD: amd-smi replaces rocm-smi; ask rocm-smi only without an answer.
	amd := d.parsed(ctx, ParseAmdSMI, "amd-smi", AmdSMIArgs...)
	if len(amd) == 0 {
		amd = d.parsed(ctx, ParseRocmSMI, "rocm-smi", RocmSMIArgs...)
	}
	gpus = append(gpus, amd...)

	// Intel: xpu-smi, with per-device details for memory and driver.
	xpu := d.parsed(ctx, ParseXpuSMI, "xpu-smi", XpuSMIArgs...)
	for i := range xpu {
		out, ok := d.run(ctx, true, "xpu-smi", "discovery", "-d", strconv.Itoa(xpu[i].Index), "-j")
		if !ok {
			continue
		}
		det, err := ParseXpuSMI(out)
		if err != nil || len(det) != 1 {
			d.note("xpu-smi discovery -d %d: no device details (%v)", xpu[i].Index, err)
			continue
		}
		mergeGPU(&xpu[i], det[0])
	}
	gpus = append(gpus, xpu...)

	// sycl-ls, Intel's oneAPI tool, stands in for xpu-smi; it also lists
	// CUDA and HIP devices, taken only for vendors nothing else reported.
	if !have("intel") {
		known := map[string]bool{}
		for _, g := range gpus {
			known[g.Vendor] = true
		}
		for _, g := range d.parsed(ctx, ParseSyclLs, "sycl-ls") {
			if g.Vendor != "" && !known[g.Vendor] {
				gpus = append(gpus, g)
			}
		}
	}

	gpus = d.mergeDRM(gpus)
	d.powerLimits(ctx, gpus)
	d.rig.Accelerators = gpus
}

// powerLimits asks each vendor tool that reported GPUs for their power
// limits (nvidia-smi's power.limit and enforced.power.limit, amd-smi's
// limit.socket_power, xpu-smi config's sustained limit), with the
// power sampler's parsers.
func (d *detector) powerLimits(ctx context.Context, gpus []GPU) {
	set := func(source string, idx int, limit, enforced float64) {
		for i := range gpus {
			if gpus[i].Source == source && gpus[i].Index == idx {
				gpus[i].PowerLimitW, gpus[i].EnforcedPowerLimitW = limit, enforced
			}
		}
	}
	count := func(source string) (ids []int) {
		for _, g := range gpus {
			if g.Source == source {
				ids = append(ids, g.Index)
			}
		}
		return ids
	}
	if len(count("nvidia-smi")) > 0 {
		if out, ok := d.run(ctx, false, "nvidia-smi", hoststate.NvidiaPowerLimitArgs...); ok {
			ls, err := hoststate.ParseNvidiaPowerLimits(out)
			if err != nil {
				d.note("nvidia-smi: %v", err)
			}
			for idx, l := range ls {
				set("nvidia-smi", idx, l[0], l[1])
			}
		}
	}
	if len(count("amd-smi")) > 0 {
		if out, ok := d.run(ctx, false, "amd-smi", hoststate.AmdSMILimitArgs...); ok {
			ls, err := hoststate.ParseAmdSMILimits(out)
			if err != nil {
				d.note("amd-smi: %v", err)
			}
			for idx, w := range ls {
				set("amd-smi", idx, w, 0)
			}
		}
	}
	for _, id := range count("xpu-smi") {
		if out, ok := d.run(ctx, false, "xpu-smi", hoststate.XPUSMIConfigArgs(id)...); ok {
			w, err := hoststate.ParseXPUSMIPowerLimit(out)
			if err != nil {
				d.note("xpu-smi config -d %d: %v", id, err)
			}
			set("xpu-smi", id, w, 0)
		}
	}
}

// nvidiaProcfs reads /proc/driver/nvidia/gpus/*/information.
func (d *detector) nvidiaProcfs() []GPU {
	dirs, err := filepath.Glob(filepath.Join(d.path("/proc/driver/nvidia/gpus"), "*", "information"))
	if err != nil {
		return nil
	}
	sort.Strings(dirs)
	var gpus []GPU
	for _, p := range dirs {
		b, err := os.ReadFile(p)
		if err != nil {
			d.note("reading nvidia gpu information: %v", unwrapPathError(err))
			continue
		}
		g, err := ParseNvidiaGPUInformation(b)
		if err != nil {
			d.note("%v", err)
			continue
		}
		gpus = append(gpus, g)
	}
	return gpus
}

// mergeDRM completes gpus with what sysfs knows. A sysfs GPU at the same PCI
// address as a tool's fills the tool's missing fields; one whose vendor no
// tool reported is added. When a tool reported a vendor's GPUs without PCI
// addresses (sycl-ls) and sysfs sees as many of that vendor, all alike
// (same memory, driver and PCI id), those fields are filled in: with
// identical cards the pairing does not matter.
func (d *detector) mergeDRM(gpus []GPU) []GPU {
	drm, err := ReadDRM(d.path("/sys/class/drm"))
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			d.note("%v", unwrapPathError(err))
		}
		return gpus
	}
	byVendor := map[string][]GPU{}
	toolVendor := map[string]int{}
	for _, g := range gpus {
		toolVendor[g.Vendor]++
	}
	for _, s := range drm {
		matched := false
		for i := range gpus {
			if s.PCIBusID != "" && gpus[i].PCIBusID == s.PCIBusID {
				mergeGPU(&gpus[i], s)
				matched = true
				break
			}
		}
		if !matched {
			byVendor[s.Vendor] = append(byVendor[s.Vendor], s)
		}
	}
	vendors := make([]string, 0, len(byVendor))
	for v := range byVendor {
		vendors = append(vendors, v)
	}
	sort.Strings(vendors)
	for _, v := range vendors {
		rest := byVendor[v]
		if toolVendor[v] == 0 {
			gpus = append(gpus, rest...)
			continue
		}
		var unplaced []int
		for i := range gpus {
			if gpus[i].Vendor == v && gpus[i].PCIBusID == "" {
				unplaced = append(unplaced, i)
			}
		}
		if len(unplaced) != len(rest) {
			continue
		}
		same := true
		for _, s := range rest {
			same = same && s.MemoryGB == rest[0].MemoryGB && s.Driver == rest[0].Driver && s.PCIID == rest[0].PCIID
		}
		if !same {
			continue
		}
		for _, i := range unplaced {
			if gpus[i].MemoryGB == 0 {
				gpus[i].MemoryGB = rest[0].MemoryGB
			}
			if gpus[i].Driver == "" {
				gpus[i].Driver = rest[0].Driver
			}
			if gpus[i].PCIID == "" {
				gpus[i].PCIID = rest[0].PCIID
			}
		}
	}
	return gpus
}

// mergeGPU fills dst's empty fields from src.
func mergeGPU(dst *GPU, src GPU) {
	if dst.Name == "" {
		dst.Name, dst.RawName = src.Name, src.RawName
	}
	if dst.MemoryGB == 0 {
		dst.MemoryGB = src.MemoryGB
	}
	if dst.DriverVersion == "" {
		dst.DriverVersion = src.DriverVersion
	}
	if dst.UUID == "" {
		dst.UUID = src.UUID
	}
	if dst.PCIBusID == "" {
		dst.PCIBusID = src.PCIBusID
	}
	if dst.Arch == "" {
		dst.Arch = src.Arch
	}
	if dst.Driver == "" {
		dst.Driver = src.Driver
	}
	if dst.PCIID == "" {
		dst.PCIID = src.PCIID
	}
}

// toolchainTools lists the toolchain entries; each tries its commands in
// order and records the first one on PATH under that command's name.
var toolchainTools = [][]string{
	{"cmake"}, {"cc", "gcc"}, {"c++", "g++"}, {"node"}, {"npm"}, {"python3"},
	{"nvcc"}, {"icpx"}, {"hipcc"},
}

// toolchain records the first line of `--version` of each toolchain
// program on PATH. The programs are asked concurrently, and with
// DetectOptions.Cache set their answers are kept, keyed by the executable's
// path, size and modification time, so a later run asks only the programs
// that changed (npm alone takes about 0.3 s to say its version).
func (d *detector) toolchain(ctx context.Context) {
	type found struct{ name, path string }
	var todo []found
	for _, alts := range toolchainTools {
		for _, name := range alts {
			if p, err := d.opts.LookPath(name); err == nil {
				todo = append(todo, found{name, p})
				break
			}
		}
	}
	cache := loadToolCache(d.opts.Cache)
	versions := make([]string, len(todo))
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []string
	for i, t := range todo {
		key := toolKey(t.path)
		if v, ok := cache.get(key); ok {
			versions[i] = v
			continue
		}
		wg.Add(1)
		go func(i int, t found, key string) {
			defer wg.Done()
			cctx, cancel := context.WithTimeout(ctx, d.opts.Timeout)
			defer cancel()
			out, err := d.opts.Run(cctx, t.name, "--version")
			if err != nil {
				mu.Lock()
				errs = append(errs, fmt.Sprintf("%s --version: %v", t.name, err))
				mu.Unlock()
				return
			}
			versions[i] = versionLine(t.name, out)
		}(i, t, key)
	}
	wg.Wait()
	for i, t := range todo {
		if key := toolKey(t.path); key != "" && versions[i] != "" {
			if _, ok := cache.get(key); !ok {
				cache.put(key, versions[i])
			}
		}
	}
	sort.Strings(errs)
	for _, e := range errs {
		d.note("%s", e)
	}
	for i, t := range todo {
		if versions[i] == "" {
			continue
		}
		if d.rig.Toolchain == nil {
			d.rig.Toolchain = map[string]string{}
		}
		d.rig.Toolchain[t.name] = versions[i]
	}
	cache.save()
}

// toolCache maps "path|size|mtime" of an executable to its version line.
type toolCache struct {
	file    string
	entries map[string]string
	dirty   bool
}

func loadToolCache(dir string) *toolCache {
	c := &toolCache{entries: map[string]string{}}
	if dir == "" {
		return c
	}
	c.file = filepath.Join(dir, "rig-toolchain.json")
	if b, err := os.ReadFile(c.file); err == nil {
		json.Unmarshal(b, &c.entries)
	}
	return c
}

func (c *toolCache) get(key string) (string, bool) {
	if key == "" {
		return "", false
	}
	v, ok := c.entries[key]
	return v, ok
}

func (c *toolCache) put(key, v string) {
	c.entries[key] = v
	c.dirty = true
}

func (c *toolCache) save() {
	if c.file == "" || !c.dirty {
		return
	}
	b, err := json.MarshalIndent(c.entries, "", "  ")
	if err != nil {
		return
	}
	os.MkdirAll(filepath.Dir(c.file), 0o755)
	tmp := c.file + ".tmp"
	if os.WriteFile(tmp, b, 0o644) == nil {
		os.Rename(tmp, c.file)
	}
}

// toolKey identifies an executable by where it resolves to, its size and
// its modification time; "" when it cannot be read.
func toolKey(path string) string {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return ""
	}
	fi, err := os.Stat(real)
	if err != nil {
		return ""
	}
	return fmt.Sprintf("%s|%d|%d", real, fi.Size(), fi.ModTime().UnixNano())
}

// versionLine picks the line of `name --version` output worth recording:
// the first non-empty line, except for nvcc whose first line names the
// program and whose version is on the "release" line.
func versionLine(name string, out []byte) string {
	lines := strings.Split(strings.ReplaceAll(string(out), "\r\n", "\n"), "\n")
	if name == "nvcc" {
		for _, l := range lines {
			if strings.Contains(l, "release") {
				return strings.TrimSpace(l)
			}
		}
	}
	for _, l := range lines {
		if l = strings.TrimSpace(l); l != "" {
			return l
		}
	}
	return ""
}

// maxOutput caps what runCommand keeps of a tool's standard output.
const maxOutput = 4 << 20

// runCommand is the default [DetectOptions.Run].
func runCommand(ctx context.Context, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	var stdout, stderr capped
	stdout.max, stderr.max = maxOutput, 4096
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = time.Second
	if err := cmd.Run(); err != nil {
		if line := firstLine(stderr.buf.String()); line != "" {
			return nil, fmt.Errorf("%w: %s", err, line)
		}
		if line := firstLine(stdout.buf.String()); line != "" {
			return nil, fmt.Errorf("%w: %s", err, line)
		}
		return nil, err
	}
	return stdout.buf.Bytes(), nil
}

func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return l
		}
	}
	return ""
}

// capped is a writer that keeps the first max bytes and drops the rest.
type capped struct {
	buf bytes.Buffer
	max int
}

// Write keeps what fits and reports the whole of p as written, so that a
// chatty tool is not killed by a short write.
func (c *capped) Write(p []byte) (int, error) {
	if room := c.max - c.buf.Len(); room > 0 {
		if len(p) > room {
			c.buf.Write(p[:room])
		} else {
			c.buf.Write(p)
		}
	}
	return len(p), nil
}
