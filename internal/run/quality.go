package run

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/rigorbench/rigor/internal/engine"
	"github.com/rigorbench/rigor/internal/engine/all"
	"github.com/rigorbench/rigor/internal/lock"
	"github.com/rigorbench/rigor/internal/results"
	"github.com/rigorbench/rigor/internal/spec"
)

// QualityDir is where the baselines' reference logits and the corpora
// they were computed on are kept, content-addressed, under rigor's cache.
func QualityDir(cache string) string { return filepath.Join(cache, "quality") }

// qualityRun is what measuring one point's quality left: the measurement
// or why there is none, and the processes and their output, for the
// record.
type qualityRun struct {
	measured  *results.QualityMeasured
	err       error
	processes []results.Process
	raw       map[string][]byte
}

// BaselineOf is the experiment id quality.measure.baseline names.
func BaselineOf(x *spec.Experiment) string {
	if m := x.Spec.Quality.Measure; m != nil {
		return spec.BaselineID(x.Package, m.Baseline)
	}
	return ""
}

// measureQuality measures point p's quality against its baseline: the
// baseline's reference is computed once per (baseline lock, baseline
// point, corpus, ctx, chunks, program) and kept in the cache, then p is
// scored against it.
func (r *Runner) measureQuality(ctx context.Context, e engine.Engine, prep *Prepared, p *spec.Point, runDir string) *qualityRun {
	qr := &qualityRun{raw: map[string][]byte{}}
	fail := func(err error) *qualityRun { qr.err = err; return qr }
	x := prep.Experiment
	m := x.Spec.Quality.Measure
	qe, ok := engine.As[engine.Qualifier](e)
	if !ok {
		return fail(fmt.Errorf("%s does not measure quality", x.Spec.Engine.Family))
	}
	baseID := BaselineOf(x)
	base := prep
	if baseID != x.ID {
		base = r.Baselines[baseID]
	}
	if base == nil || len(base.Experiment.Points) != 1 {
		return fail(fmt.Errorf("the baseline %s was not prepared", baseID))
	}
	be, err := all.Get(base.Experiment.Spec.Engine.Family)
	if err != nil {
		return fail(err)
	}
	bq, ok := engine.As[engine.Qualifier](be)
	if !ok {
		return fail(fmt.Errorf("the baseline's family %s does not measure quality", base.Experiment.Spec.Engine.Family))
	}
	text, err := r.corpus(ctx, prep)
	if err != nil {
		return fail(err)
	}
	sum := sha256.Sum256(text)
	corpusSum := hex.EncodeToString(sum[:])
	if c := prep.Entry.Corpus; c == nil || c.SHA256 != corpusSum {
		return fail(fmt.Errorf("corpus %s is not the locked one (run 'rigor lock %s')", m.Corpus, x.ID))
	}
	dir := QualityDir(r.Cache)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fail(err)
	}
	corpusPath := filepath.Join(dir, "corpus-"+corpusSum+".txt")
	if _, err := os.Stat(corpusPath); err != nil {
		if err := writeAtomic(corpusPath, text); err != nil {
			return fail(err)
		}
	}
	bp := base.Experiment.Points[0]
	key := baselineKey(base, bp, corpusSum, m)
	basePath := filepath.Join(dir, key+".logits")
	job := engine.QualityJob{Corpus: corpusPath, Ctx: m.Ctx, Chunks: m.Chunks, Base: basePath, TopK: m.TopK}
	if _, err := os.Stat(basePath); err != nil {
		r.say("computing the reference logits of baseline %s on %s (ctx %d, %d chunks): %s, kept in %s",
			baseID, m.Corpus, m.Ctx, m.Chunks, baselineSize(bq, base, m), filepath.Join("<cache>", "quality", key[:12]+"….logits"))
		tmp := fmt.Sprintf("%s.tmp-%d", basePath, os.Getpid())
		defer os.Remove(tmp)
		bjob := job
		bjob.Base, bjob.WriteBase = tmp, true
		if bjob.Listen, err = freeListen(); err != nil {
			return fail(err)
		}
		plan, err := bq.QualityPlan(bp, base.Inputs, bjob)
		if err != nil {
			return fail(err)
		}
		out, err := r.execQuality(ctx, x, plan, runDir, "baseline")
		if err != nil {
			return fail(err)
		}
		qr.record(plan, out, runDir, "quality-baseline")
		if _, err := bq.JudgeQuality(bjob, finished(out)); err != nil {
			return fail(fmt.Errorf("computing the baseline's logits: %w", err))
		}
		if err := os.Rename(tmp, basePath); err != nil {
			return fail(err)
		}
	}
	if job.Listen, err = freeListen(); err != nil {
		return fail(err)
	}
	plan, err := qe.QualityPlan(p, prep.Inputs, job)
	if err != nil {
		return fail(err)
	}
	out, err := r.execQuality(ctx, x, plan, runDir, "quality")
	if err != nil {
		return fail(err)
	}
	qr.record(plan, out, runDir, "quality")
	q, err := qe.JudgeQuality(job, finished(out))
	if err != nil {
		return fail(err)
	}
	q.Corpus, q.CorpusSHA256, q.Ctx = m.Corpus.String(), corpusSum, m.Ctx
	q.Baseline, q.BaselineLockDigest, q.BaselinePoint = baseID, base.Entry.Digest(), bp.Digest
	qr.measured = q
	return qr
}

// corpus returns the bytes of the locked corpus of an experiment: a
// module file or a shipped corpus by its name, or a hub file from the hub
// cache, downloaded there when missing, its sha256 checked against the
// lock. A corpus neither in the cache nor downloadable (the hub gone) is
// brought from ctx's model substituter (the archive) when it holds it.
func (r *Runner) corpus(ctx context.Context, prep *Prepared) ([]byte, error) {
	c := prep.Experiment.Spec.Quality.Measure.Corpus
	if !c.Hub() {
		return lock.Corpus(r.Root, c.Name)
	}
	cl := prep.Entry.Corpus
	if cl == nil || cl.HF != c.HF || cl.Path != c.File || cl.Revision != c.Revision {
		return nil, fmt.Errorf("corpus %s is not locked (run 'rigor lock %s')", c, prep.Experiment.ID)
	}
	hub := r.Hub
	if r.Offline {
		hub = nil
	}
	b, err := lock.HubCorpus(ctx, hub, r.HFCache, cl)
	var miss *lock.CorpusMissingError
	if !errors.As(err, &miss) {
		return b, err
	}
	ok, serr := r.substituteCorpus(ctx, cl)
	if serr != nil {
		return nil, serr
	}
	if !ok {
		return nil, err
	}
	return lock.HubCorpus(ctx, nil, r.HFCache, cl)
}

func finished(out *Outcome) engine.Finished {
	return engine.Finished{Stdout: out.Stdout, Stderr: out.Stderr, ExitCode: out.ExitCode, Signaled: out.Signaled,
		Stopped: stopOf[out.How], StopErr: out.Err}
}

// record keeps a quality process and its output for the run's record.
func (qr *qualityRun) record(plan *engine.Plan, out *Outcome, runDir, name string) {
	for _, pp := range plan.Processes {
		argv := make([]string, len(pp.Argv))
		for i, a := range pp.Argv {
			argv[i] = strings.ReplaceAll(a, runDir, engine.RunDirPlaceholder)
		}
		proc := results.Process{Role: pp.Role, Argv: argv, Env: pp.Env, Dir: pp.Dir}
		c := out.ExitCode
		proc.Exit = &c
		proc.Signal = out.Signal
		qr.processes = append(qr.processes, proc)
	}
	qr.raw[name+".stdout"] = out.Stdout
	qr.raw[name+".stderr"] = out.Stderr
}

// execQuality runs one quality process with the experiment's environment
// and timeout; a process that did not end by itself is an error.
func (r *Runner) execQuality(ctx context.Context, x *spec.Experiment, plan *engine.Plan, runDir, name string) (*Outcome, error) {
	getenv := r.Getenv
	if getenv == nil {
		getenv = func(string) (string, bool) { return "", false }
	}
	env, _ := Environment(getenv, nil, x.Spec.PassEnv)
	timeout := r.Timeout
	if timeout == 0 {
		timeout = time.Hour
		if x.Spec.TimeoutSeconds > 0 {
			timeout = time.Duration(x.Spec.TimeoutSeconds) * time.Second
		}
	}
	dir := filepath.Join(runDir, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	out, err := Execute(ctx, Options{Plan: plan, Env: env, Secrets: planSecrets(getenv, plan), Dir: dir, LogDir: filepath.Join(dir, "logs"), Timeout: timeout, Grace: r.Grace})
	if err != nil {
		return nil, err
	}
	switch out.How {
	case TimedOut:
		return out, fmt.Errorf("%s timed out after %s", plan.Processes[0].Name, timeout)
	case Interrupted:
		return out, context.Canceled
	case StartFailed:
		return out, fmt.Errorf("starting %s: %v", plan.Processes[0].Name, out.Err)
	case WorkerFailed:
		return out, out.Err
	}
	return out, nil
}

// baselineKey is the content address of a baseline's reference logits.
func baselineKey(base *Prepared, bp *spec.Point, corpusSum string, m *spec.QualityMeasure) string {
	k := map[string]any{
		"lock": base.Entry.Digest(), "point": bp.Digest, "corpus": corpusSum, "ctx": m.Ctx, "chunks": m.Chunks,
		"family": base.Experiment.Spec.Engine.Family, "binaries": base.Engine.Binaries,
	}
	if m.TopK > 0 {
		k["topK"] = m.TopK
	}
	b, _ := json.Marshal(k)
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// baselineSize says how large the reference will be, by the engine's
// account of its layout; the vocabulary is the model's GGUF header's,
// when known.
func baselineSize(q engine.Qualifier, base *Prepared, m *spec.QualityMeasure) string {
	scored := int64(m.Chunks) * int64(m.Ctx-1-m.Ctx/2)
	if m.TopK > 0 {
		return fmt.Sprintf("about %s (at most %d tokens scored × the top %d log-probabilities)", humanBytes(q.ReferenceBytes(int64(m.TopK), int64(m.Ctx), int64(m.Chunks))), scored, m.TopK)
	}
	var vocab int64
	for _, f := range base.Model.Files {
		if v, ok := f.GGUF["vocabSize"]; ok {
			vocab = toInt(v)
		}
	}
	if vocab <= 0 {
		return fmt.Sprintf("about %s per 1,000 tokens of vocabulary (%d tokens scored; the vocabulary is not known before the run)", humanBytes(q.ReferenceBytes(1000, int64(m.Ctx), int64(m.Chunks))), scored)
	}
	return fmt.Sprintf("%s (%d tokens scored × %d log-probabilities)", humanBytes(q.ReferenceBytes(vocab, int64(m.Ctx), int64(m.Chunks))), scored, vocab)
}

func toInt(v any) int64 {
	switch n := v.(type) {
	case float64:
		return int64(n)
	case int64:
		return n
	case uint64:
		return int64(n)
	case int:
		return int64(n)
	case json.Number:
		i, _ := n.Int64()
		return i
	case string:
		i, _ := strconv.ParseInt(n, 10, 64)
		return i
	}
	return 0
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

func writeAtomic(path string, b []byte) error {
	tmp := fmt.Sprintf("%s.tmp-%d", path, os.Getpid())
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return errors.Join(err, os.Remove(tmp))
	}
	return nil
}

// freeListen is a port on the loopback that nothing listens on now, for
// a server a quality process needs (vLLM's `vllm serve`).
func freeListen() (engine.Listen, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return engine.Listen{}, fmt.Errorf("finding a free port for the quality server: %w", err)
	}
	defer l.Close()
	return engine.Listen{Host: "127.0.0.1", Port: l.Addr().(*net.TCPAddr).Port}, nil
}
