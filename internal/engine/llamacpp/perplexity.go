package llamacpp

import (
	"bufio"
	"bytes"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/rigorbench/rigor/internal/engine"
	"github.com/rigorbench/rigor/internal/results"
	"github.com/rigorbench/rigor/internal/spec"
)

// PerplexityProgram is the program that measures quality: upstream's
// tools/perplexity, built beside llama-bench from the same locked build.
const PerplexityProgram = "llama-perplexity"

var _ engine.Qualifier = Engine{}

// qualityFlags are the flags of a point that llama-perplexity is given as
// llama-bench was: they change the numbers computed (the KV cache types)
// or where (threads, layers offloaded). Each takes one value.
var qualityFlags = []string{"t", "ngl", "ctk", "ctv"}

// QualityPlan returns the llama-perplexity process of a quality job: with
// job.WriteBase, `-f corpus --kl-divergence-base FILE` writes the
// baseline's log-probabilities; else `--kl-divergence-base FILE
// --kl-divergence` scores the point against them.
func (e Engine) QualityPlan(p *spec.Point, in engine.Inputs, job engine.QualityJob) (*engine.Plan, error) {
	argv := []string{in.Bin(PerplexityProgram), "-m", in.Model, "-c", strconv.Itoa(job.Ctx), "--chunks", strconv.Itoa(job.Chunks)}
	for _, name := range qualityFlags {
		for _, a := range p.Flags {
			if a.Def.Name == name && len(a.Values) == 1 {
				argv = append(argv, "-"+name, a.Values[0])
			}
		}
	}
	if job.WriteBase {
		argv = append(argv, "-f", job.Corpus, "--kl-divergence-base", job.Base)
	} else {
		argv = append(argv, "--kl-divergence-base", job.Base, "--kl-divergence")
	}
	proc := engine.Process{Role: "quality", Name: PerplexityProgram, Argv: argv, Env: engine.Env(p.Spec.Env)}
	return &engine.Plan{Point: p.ID, Family: e.Fork, Processes: []engine.Process{proc}}, nil
}

// JudgeQuality reads llama-perplexity's output. A base run must end with
// its "Final estimate"; a --kl-divergence run must print the statistics
// blocks (it prints none below 100 scored tokens).
func (e Engine) JudgeQuality(job engine.QualityJob, f engine.Finished) (*results.QualityMeasured, error) {
	if f.ExitCode != 0 || f.Signaled {
		return nil, fmt.Errorf("%s exited with status %d%s", PerplexityProgram, f.ExitCode, lastLine(f.Stderr))
	}
	if job.WriteBase {
		if _, _, ok := FinalEstimate(f.Stderr); !ok {
			return nil, fmt.Errorf("%s printed no \"Final estimate: PPL = …\"%s", PerplexityProgram, lastLine(f.Stderr))
		}
		return nil, nil
	}
	q, err := ParseKLDivergence(f.Stdout)
	if err != nil {
		return nil, err
	}
	q.Tool = PerplexityProgram
	q.Tokens = q.Chunks * (job.Ctx - 1 - job.Ctx/2)
	return q, nil
}

func lastLine(b []byte) string {
	s := strings.TrimSpace(string(b))
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	if s == "" {
		return ""
	}
	return ": " + s
}

// FinalEstimate reads "Final estimate: PPL = 8.1234 +/- 0.05678", which
// llama-perplexity prints (on stderr) at the end of a perplexity run.
func FinalEstimate(out []byte) (ppl, err float64, ok bool) {
	for _, line := range strings.Split(string(out), "\n") {
		rest, found := strings.CutPrefix(strings.TrimSpace(line), "Final estimate: PPL = ")
		if !found {
			continue
		}
		v, e, found := strings.Cut(rest, " +/- ")
		if !found {
			return 0, 0, false
		}
		p, err1 := strconv.ParseFloat(strings.TrimSpace(v), 64)
		u, err2 := strconv.ParseFloat(strings.TrimSpace(e), 64)
		if err1 != nil || err2 != nil {
			return 0, 0, false
		}
		return p, u, true
	}
	return 0, 0, false
}

// ParseKLDivergence reads the statistics that `llama-perplexity
// --kl-divergence` prints on stdout (upstream's
// tools/perplexity/perplexity.cpp, kl_divergence()): the per-chunk table,
// counted as the chunks evaluated, then "====== Perplexity statistics
// ======" (Mean PPL(Q), Mean PPL(base), Mean PPL(Q)/PPL(base)), "======
// KL divergence statistics ======" (Mean KLD ± err, Maximum, 99.9%,
// 99.0%, Median) and "====== Token probability statistics ======" (RMS
// Δp, Same top p). Every one of those lines must be there.
func ParseKLDivergence(out []byte) (*results.QualityMeasured, error) {
	q := &results.QualityMeasured{}
	type field struct {
		val, err *float64
	}
	fields := map[string]field{
		"Mean PPL(Q)":           {&q.PPL, &q.PPLErr},
		"Mean PPL(base)":        {&q.PPLBase, &q.PPLBaseErr},
		"Mean PPL(Q)/PPL(base)": {&q.PPLRatio, &q.PPLRatioErr},
		"Mean    KLD":           {&q.KLD, &q.KLDErr},
		"Maximum KLD":           {&q.KLDMax, nil},
		"99.9%   KLD":           {&q.KLD999, nil},
		"99.0%   KLD":           {&q.KLD99, nil},
		"Median  KLD":           {&q.KLDMedian, nil},
		"RMS Δp":                {&q.RMSDeltaP, &q.RMSDeltaPErr},
		"Same top p":            {&q.SameTop, &q.SameTopErr},
	}
	seen := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	inTable := false
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), " \r")
		if strings.HasPrefix(line, "chunk ") && strings.Contains(line, "KL Divergence") {
			inTable = true
			continue
		}
		if inTable {
			if f := strings.Fields(line); len(f) > 0 {
				if _, err := strconv.Atoi(f[0]); err == nil {
					q.Chunks++
				}
			}
			inTable = false
			continue
		}
		key, rest, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		key = strings.TrimSpace(key)
		fd, ok := fields[key]
		if !ok {
			continue
		}
		rest = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "%"))
		v, u, _ := strings.Cut(rest, "±")
		val, err := parseStat(v)
		if err != nil || math.IsNaN(val) || math.IsInf(val, 0) {
			return nil, fmt.Errorf("%s: %q is not a number", key, strings.TrimSpace(v))
		}
		*fd.val = val
		if fd.err != nil {
			e, err := parseStat(u)
			if err != nil || math.IsNaN(e) || math.IsInf(e, 0) {
				e = 0
			}
			*fd.err = e
		}
		seen[key] = true
	}
	var missing []string
	for _, k := range []string{"Mean PPL(Q)", "Mean PPL(base)", "Mean PPL(Q)/PPL(base)", "Mean    KLD", "Maximum KLD", "99.9%   KLD", "99.0%   KLD", "Median  KLD", "RMS Δp", "Same top p"} {
		if !seen[k] {
			missing = append(missing, strings.Join(strings.Fields(k), " "))
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%s printed no %s (it prints its statistics only from 100 scored tokens: more chunks or a larger ctx)", PerplexityProgram, strings.Join(missing, ", "))
	}
	if q.Chunks == 0 {
		return nil, fmt.Errorf("%s printed no chunk of its table", PerplexityProgram)
	}
	return q, nil
}

// parseStat reads a number as C's printf wrote it: "nan", "-nan" and
// "inf" included.
func parseStat(s string) (float64, error) {
	s = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(s), "%"))
	switch strings.TrimPrefix(strings.TrimPrefix(s, "-"), "+") {
	case "nan":
		return math.NaN(), nil
	case "inf":
		if strings.HasPrefix(s, "-") {
			return math.Inf(-1), nil
		}
		return math.Inf(1), nil
	}
	return strconv.ParseFloat(s, 64)
}
