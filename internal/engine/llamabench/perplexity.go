package llamabench

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/rigorbench/rigor/internal/results"
)

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
// --kl-divergence` (or node-llama-cpp's bench runner, which prints the
// same) prints on stdout (upstream's
// tools/perplexity/perplexity.cpp, kl_divergence()): the per-chunk table,
// counted as the chunks evaluated, then "====== Perplexity statistics
// ======" (Mean PPL(Q), Mean PPL(base), Mean PPL(Q)/PPL(base)), "======
// KL divergence statistics ======" (Mean KLD ± err, Maximum, 99.9%,
// 99.0%, Median) and "====== Token probability statistics ======" (RMS
// Δp, Same top p). Every one of those lines must be there; an error
// reads after the program's name ("printed no …").
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
		return nil, fmt.Errorf("printed no %s (it prints its statistics only from 100 scored tokens: more chunks or a larger ctx)", strings.Join(missing, ", "))
	}
	if q.Chunks == 0 {
		return nil, errors.New("printed no chunk of its table")
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

// PerplexityRun is what [JudgePerplexity] reads of a finished run of
// llama-perplexity, or of a runner that prints its format (node-llama-cpp's
// rigor-quality.mjs).
type PerplexityRun struct {
	// Program names the process in errors: "llama-perplexity".
	Program string
	// Tool is what the record's quality.measured.tool says.
	Tool string
	// Ctx is the context of each chunk; WriteBase marks the baseline's
	// run, which writes the reference and measures nothing.
	Ctx       int
	WriteBase bool
	// How the process ended and what it printed.
	ExitCode       int
	Signaled       bool
	Stdout, Stderr []byte
}

// JudgePerplexity is the quality judgement of every family whose runner
// prints llama-perplexity's format. A process that failed is an error with
// its status and the last line of its stderr. A base run measures nothing
// and must end with "Final estimate: PPL = …". A comparison run gives
// [ParseKLDivergence]'s statistics, the tool, and the tokens scored: the
// second half of each chunk's context but one, as llama-perplexity scores.
func JudgePerplexity(r PerplexityRun) (*results.QualityMeasured, error) {
	if r.ExitCode != 0 || r.Signaled {
		return nil, fmt.Errorf("%s exited with status %d%s", r.Program, r.ExitCode, stderrTail(r.Stderr))
	}
	if r.WriteBase {
		if _, _, ok := FinalEstimate(r.Stderr); !ok {
			return nil, fmt.Errorf("%s printed no \"Final estimate: PPL = …\"%s", r.Program, stderrTail(r.Stderr))
		}
		return nil, nil
	}
	q, err := ParseKLDivergence(r.Stdout)
	if err != nil {
		return nil, fmt.Errorf("%s %w", r.Program, err)
	}
	q.Tool = r.Tool
	q.Tokens = q.Chunks * (r.Ctx - 1 - r.Ctx/2)
	return q, nil
}

// stderrTail is ": " and the last line of a process's stderr, or "" when
// it printed nothing.
func stderrTail(b []byte) string {
	s := strings.TrimSpace(string(b))
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	if s == "" {
		return ""
	}
	return ": " + s
}
