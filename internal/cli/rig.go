package cli

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/rigorbench/rigor/internal/rig"
	"github.com/rigorbench/rigor/internal/spec"
)

type rigCmd struct {
	JSON  bool   `help:"Print the rig (or, with --check, the mismatches) as JSON."`
	Check string `placeholder:"ID" help:"Check the rig against experiment ID's #requires; exit 1 when a requirement is not met."`
}

func (rigCmd) Help() string {
	return `Prints what this machine is: its GPUs (name, memory, driver, from
nvidia-smi, amd-smi or rocm-smi, xpu-smi or sycl-ls, and /sys/class/drm),
CPU, RAM, OS, kernel and the compilers a build would use. A missing tool
is simply absent; what could not be detected is noted on stderr. Field
names follow MLPerf's system description. With --check ID, the rig is
unified with the experiment's #requires and every unmet requirement is
printed with its position, exactly as 'rigor run' will refuse it.
RIGOR_RIG_FILE names a JSON rig (the --json format) to use instead of
detecting one.

Examples:
  rigor rig
  rigor rig --json
  rigor rig --check example/smoke`
}

func (c *rigCmd) Run(e *env) error {
	r, err := e.detectRig(context.Background())
	if err != nil {
		return err
	}
	if c.Check != "" {
		return c.check(e, r)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(e.stderr, "rigor: note: %s\n", n)
	}
	if c.JSON {
		out := *r
		out.Notes = nil
		return e.printJSON(out)
	}
	printRig(e, r)
	return nil
}

func printRig(e *env, r *rig.Rig) {
	w := e.stdout
	fmt.Fprintf(w, "rig: %s\n", r.Summary())
	line := func(k, v string) {
		if v != "" {
			fmt.Fprintf(w, "%s: %s\n", k, v)
		}
	}
	line("hostname", r.Hostname)
	for _, g := range r.Accelerators {
		parts := []string{g.Name}
		if g.MemoryGB > 0 {
			parts = append(parts, fmt.Sprintf("%g GB", g.MemoryGB))
		}
		if g.DriverVersion != "" {
			parts = append(parts, "driver "+g.DriverVersion)
		}
		if g.PCIBusID != "" {
			parts = append(parts, g.PCIBusID)
		}
		switch {
		case g.EnforcedPowerLimitW > 0 && g.EnforcedPowerLimitW != g.PowerLimitW:
			parts = append(parts, fmt.Sprintf("power limit %g W (enforced %g W)", g.PowerLimitW, g.EnforcedPowerLimitW))
		case g.EffectivePowerLimitW() > 0:
			parts = append(parts, fmt.Sprintf("power limit %g W", g.EffectivePowerLimitW()))
		}
		if g.Source != "" {
			parts = append(parts, "via "+g.Source)
		}
		fmt.Fprintf(w, "gpu %d: %s\n", g.Index, strings.Join(parts, ", "))
	}
	if len(r.Accelerators) == 0 {
		line("gpu", "none detected")
	}
	cpu := r.HostProcessorModelName
	if r.HostProcessorCoreCount > 0 {
		cpu = fmt.Sprintf("%s (%d logical CPUs)", cpu, r.HostProcessorCoreCount)
	}
	line("cpu", strings.TrimSpace(cpu))
	if r.HostMemoryCapacityGB > 0 {
		line("ram", fmt.Sprintf("%g GB", r.HostMemoryCapacityGB))
	}
	line("os", r.OperatingSystem)
	line("kernel", r.Kernel)
	line("arch", r.Arch)
	names := make([]string, 0, len(r.Toolchain))
	for n := range r.Toolchain {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		line("toolchain "+n, r.Toolchain[n])
	}
}

type rigMismatch struct {
	Pos string `json:"pos"`
	rig.Mismatch
}

func (c *rigCmd) check(e *env, r *rig.Rig) error {
	_, x, _, err := e.findOne(c.Check)
	if err != nil {
		return err
	}
	ms := rig.Check(x.Requires, r)
	if c.JSON {
		out := []rigMismatch{}
		for _, m := range ms {
			out = append(out, rigMismatch{Pos: spec.FormatPos(m.Pos, e.wd), Mismatch: m})
		}
		if err := e.printJSON(out); err != nil {
			return err
		}
	} else {
		for _, m := range ms {
			fmt.Fprintf(e.stdout, "%s: %s: #requires.%s\n", spec.FormatPos(m.Pos, e.wd), x.ID, m.String())
		}
	}
	if len(ms) > 0 {
		return withHint(fmt.Errorf("this rig (%s) does not meet %d %s of %s", r.Summary(), len(ms), plural(len(ms), "requirement", "requirements"), x.ID),
			"run it on a machine that does, or change #requires; 'rigor rig' shows what this one is")
	}
	if !c.JSON {
		fmt.Fprintf(e.stderr, "rigor: this rig meets the #requires of %s\n", x.ID)
	}
	return nil
}
