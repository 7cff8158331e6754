// Package rig describes the machine a run happens on: its accelerators, host
// processor, memory, operating system and toolchain. (What the host did
// while a run ran, its load and clocks, is package hoststate.)
//
// Field names follow the MLPerf system description where one exists
// (accelerator_model_name, accelerators_per_node, host_processor_model_name,
// …) so that records read familiar to people who publish results.
//
// [Detect] builds a [Rig] in three steps:
//
//  1. Host facts from /proc/cpuinfo, /proc/meminfo, /etc/os-release, uname
//     and the hostname.
//  2. GPUs from the vendor tools on PATH (nvidia-smi; amd-smi, else
//     rocm-smi; xpu-smi, else sycl-ls), each parsed by a pure function on
//     its recorded output ([ParseNvidiaSMI], [ParseAmdSMI], [ParseRocmSMI],
//     [ParseXpuSMI], [ParseSyclLs]), then completed or replaced by what the
//     kernel exposes ([ReadDRM] on /sys/class/drm, /proc/driver/nvidia).
//  3. Toolchain versions (first line of `--version`).
//
// A missing or failing tool is never an error: it is skipped and noted in
// [Rig.Notes]. Setting RIGOR_RIG_FILE ([RigFileEnv]) to a JSON file makes
// Detect return that rig instead, so tests can pretend to be any machine.
//
// GPU names are normalized with [NormalizeName] ("Intel(R) Arc(TM) Pro B70
// Graphics" → "Intel Arc Pro B70"); the tool's spelling is kept in
// [GPU.RawName]. Sizes are GiB rounded to 0.1. [Rig.Facts] is the view an
// experiment's #requires is checked against and [Rig.Summary] the one-line
// description for logs.
package rig

// Rig is what rigor knows about one machine. Every field is optional: a
// missing tool leaves its fields empty, it is never an error.
type Rig struct {
	// Hostname is recorded for the user's benefit; it never takes part in
	// comparisons.
	Hostname string `json:"hostname,omitempty"`

	// AcceleratorModelName is the marketing name of the GPUs when they are
	// all the same model, else the names joined with " + ".
	AcceleratorModelName string `json:"accelerator_model_name,omitempty"`
	// AcceleratorsPerNode counts the GPUs.
	AcceleratorsPerNode int `json:"accelerators_per_node"`
	// AcceleratorMemoryCapacityGB is the VRAM of one GPU (the smallest, when
	// they differ), in GiB.
	AcceleratorMemoryCapacityGB float64 `json:"accelerator_memory_capacity_gb,omitempty"`
	// AcceleratorDriverVersion is the GPU driver's version.
	AcceleratorDriverVersion string `json:"accelerator_driver_version,omitempty"`
	// Accelerators lists each GPU as detected.
	Accelerators []GPU `json:"accelerators,omitempty"`

	// HostProcessorModelName is /proc/cpuinfo's "model name", as llama-bench
	// reports it in cpu_info.
	HostProcessorModelName string `json:"host_processor_model_name,omitempty"`
	// HostProcessorCoreCount is the number of logical CPUs.
	HostProcessorCoreCount int `json:"host_processor_core_count,omitempty"`
	// HostMemoryCapacityGB is MemTotal in GiB.
	HostMemoryCapacityGB float64 `json:"host_memory_capacity_gb,omitempty"`
	// OperatingSystem is PRETTY_NAME from os-release, e.g. "Ubuntu 24.04.4 LTS".
	OperatingSystem string `json:"operating_system,omitempty"`
	// Kernel is the kernel release (uname -r).
	Kernel string `json:"kernel,omitempty"`
	// Arch is GOOS/GOARCH style, e.g. "linux/amd64".
	Arch string `json:"arch,omitempty"`

	// Toolchain holds the versions of the compilers and runtimes a build or a
	// run would use (cmake, cc, c++, node, nvcc, icpx, python, …).
	Toolchain map[string]string `json:"toolchain,omitempty"`

	// Notes says what detection could not do: a vendor tool that is not on
	// PATH, one that failed or printed something unparseable, a file that
	// could not be read. Notes never take part in comparisons.
	Notes []string `json:"notes,omitempty"`
}

// GPU is one accelerator.
//
// Name is the normalized marketing name ([NormalizeName]: "Intel Arc Pro
// B70"); RawName keeps the tool's spelling ("Intel(R) Arc(TM) Pro B70
// Graphics") and is set only when it differs from Name. Index is the
// vendor tool's own index (the one CUDA_VISIBLE_DEVICES, HIP_VISIBLE_DEVICES
// or ONEAPI_DEVICE_SELECTOR use), so two GPUs of different vendors may share
// an index. PCIBusID is normalized to the lower-case "0000:03:00.0" form
// whatever the tool printed.
type GPU struct {
	Index         int     `json:"index"`
	Vendor        string  `json:"vendor,omitempty"` // nvidia, amd, intel
	Name          string  `json:"name"`
	RawName       string  `json:"raw_name,omitempty"`
	MemoryGB      float64 `json:"memory_gb,omitempty"` // GiB, rounded to 0.1
	DriverVersion string  `json:"driver_version,omitempty"`
	UUID          string  `json:"uuid,omitempty"`
	PCIBusID      string  `json:"pci_bus_id,omitempty"`
	Arch          string  `json:"arch,omitempty"`   // sm_89, gfx1201, …
	Source        string  `json:"source,omitempty"` // which tool reported it

	// Driver is the kernel driver bound to the device (amdgpu, xe, i915,
	// nvidia), from sysfs.
	Driver string `json:"driver,omitempty"`
	// PCIID is "vendor:device" in hex, e.g. "8086:e223".
	PCIID string `json:"pci_id,omitempty"`

	// PowerLimitW is the power limit set (W), EnforcedPowerLimitW the one
	// the driver enforces after every limiter (nvidia-smi only); 0 when
	// the tool does not say. [GPU.EffectivePowerLimitW] is what
	// #requires' gpu.powerLimitW is checked against.
	PowerLimitW         float64 `json:"power_limit_w,omitempty"`
	EnforcedPowerLimitW float64 `json:"enforced_power_limit_w,omitempty"`
}

// EffectivePowerLimitW is the enforced power limit when the tool reports
// one, else the one set; 0 when neither is known.
func (g GPU) EffectivePowerLimitW() float64 {
	if g.EnforcedPowerLimitW > 0 {
		return g.EnforcedPowerLimitW
	}
	return g.PowerLimitW
}
