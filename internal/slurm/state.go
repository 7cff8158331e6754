package slurm

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/rigorbench/rigor/internal/gitrepo"
	"github.com/rigorbench/rigor/internal/logtail"
	"github.com/rigorbench/rigor/internal/redact"
	"github.com/rigorbench/rigor/internal/results"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"time"
)

// StateDir is where a module keeps its submissions, relative to its root.
// It ignores itself in git (a .gitignore of "*" one level up): job outputs
// and state are not results.
const StateDir = ".rigor/slurm"

// Batch is one submission: every point and round of one experiment as an
// array, kept in <module>/.rigor/slurm/<id>/batch.json on the submitting
// side. The nodes share no storage with it: each job gets the batch in its
// script, fetches the module from the remote at Commit (pushed to
// refs/rigor/submit/<id> before submitting) and pushes its record to
// Branch; rigor jobs reads the records there ([TaskResult]s beside
// batch.json are the submitting side's).
type Batch struct {
	// ID names the batch: a UTC timestamp and a random suffix.
	ID         string    `json:"id"`
	Experiment string    `json:"experiment"`
	Submitted  time.Time `json:"submitted"`
	// Module is the module's root on the submitting side (not used by
	// the jobs); they fetch SubmitRef of Remote, at Commit.
	Module string `json:"module"`
	Commit string `json:"commit"`
	// Remote is the git URL the jobs push records to, and Branch the
	// branch there (rigor/results/<batch id>).
	Remote string `json:"remote"`
	Branch string `json:"branch"`
	// Author is the author of the jobs' commits, "Name <email>".
	Author string `json:"author"`
	// Rigor is the executable the jobs run on their nodes (slurm.cue's
	// rigor, else rigor on the job's PATH).
	Rigor string `json:"rigor"`
	// RunArgs are extra arguments of each task's `rigor run`.
	RunArgs []string `json:"runArgs,omitempty"`
	// JobID is Slurm's job id (the array's).
	JobID string `json:"jobId"`
	// Invocation is the submission's invocation id, recorded with every
	// record of its jobs as a local run records its own: one submission
	// is one invocation. Rounds is --rounds and RoundsSeed the seed each
	// round's order was shuffled from (run.Order), as a local run's.
	Invocation string `json:"invocation,omitempty"`
	Rounds     int    `json:"rounds,omitempty"`
	RoundsSeed uint64 `json:"roundsSeed,omitempty"`
	// KeepOutput keeps each job's output file on its node when its record
	// is published ok (rigor run --slurm --keep-output); without it a job
	// that succeeded removes its own ([OutputKept]).
	KeepOutput bool `json:"keepOutput,omitempty"`
	// Args are the sbatch options the jobs were submitted with.
	Args  []string `json:"args"`
	Tasks []Task   `json:"tasks"`

	// Dir is the batch's directory (not stored).
	Dir string `json:"-"`
}

// Task is one job of a batch: a point, a round, and its place in the
// round's shuffled order (from 1; the array runs a round's tasks in that
// order).
type Task struct {
	Index int    `json:"index"`
	Point string `json:"point"`
	Round int    `json:"round"`
	Order int    `json:"order,omitempty"`
}

// TaskResult is what a job, or rigor jobs after it, wrote about one task:
// <batch dir>/task-<index>.json.
type TaskResult struct {
	Index int    `json:"index"`
	JobID string `json:"jobId,omitempty"`
	Node  string `json:"node,omitempty"`
	// Status is the record's status (ok, failed, …).
	Status string `json:"status"`
	// RunID and Record name the record (Record relative to the module).
	RunID  string `json:"runId,omitempty"`
	Record string `json:"record,omitempty"`
	// Pushed is the commit that carries the record on the results branch;
	// empty when the record was written by rigor jobs on the submitting
	// side (the job ended before recording).
	Pushed string `json:"pushed,omitempty"`
	// Published is the commit that carries a record rigor jobs wrote on
	// the results branch: it pushes it there as the jobs push theirs.
	Published string `json:"published,omitempty"`
	// SlurmState is the job's final state when rigor jobs recorded it.
	SlurmState string    `json:"slurmState,omitempty"`
	Error      string    `json:"error,omitempty"`
	Written    time.Time `json:"written"`
}

// NewBatchID returns a new batch id for t.
func NewBatchID(t time.Time) string {
	var b [2]byte
	rand.Read(b[:])
	return t.UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:])
}

// BatchDir is the directory of batch id in the module at root.
func BatchDir(root, id string) string {
	return filepath.Join(root, filepath.FromSlash(StateDir), id)
}

// Create makes the batch's directory under root and writes batch.json.
func (b *Batch) Create(root string) error {
	b.Dir = BatchDir(root, b.ID)
	ignore := filepath.Join(root, ".rigor", ".gitignore")
	if err := os.MkdirAll(b.Dir, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", StateDir, err)
	}
	if _, err := os.Stat(ignore); errors.Is(err, os.ErrNotExist) {
		if err := os.WriteFile(ignore, []byte("# rigor's local state (Slurm jobs): not results\n*\n"), 0o644); err != nil {
			return fmt.Errorf("writing %s: %w", ignore, err)
		}
	}
	return b.Save()
}

// Save writes batch.json atomically.
func (b *Batch) Save() error {
	return writeJSON(filepath.Join(b.Dir, "batch.json"), b)
}

// LoadBatch reads the batch in dir.
func LoadBatch(dir string) (*Batch, error) {
	data, err := os.ReadFile(filepath.Join(dir, "batch.json"))
	if err != nil {
		return nil, fmt.Errorf("reading the batch: %w", err)
	}
	var b Batch
	if err := json.Unmarshal(data, &b); err != nil {
		return nil, fmt.Errorf("reading %s: %w", filepath.Join(dir, "batch.json"), err)
	}
	b.Dir = dir
	return &b, nil
}

// ParseBatch reads a batch from its JSON (a job's script holds it); it has
// no directory.
func ParseBatch(data []byte) (*Batch, error) {
	var b Batch
	if err := json.Unmarshal(data, &b); err != nil {
		return nil, fmt.Errorf("reading the batch: %w", err)
	}
	if b.ID == "" || len(b.Tasks) == 0 {
		return nil, errors.New("reading the batch: it has no id or no tasks")
	}
	return &b, nil
}

// BatchRefPrefix is where a submission keeps its batch on the remote:
// refs/rigor/batches/<id>, a commit holding batch.json.
const BatchRefPrefix = "refs/rigor/batches/"

// FetchBatches brings the batches submitted from other clones of the
// module (BatchRefPrefix of remote) into this one's StateDir, with the
// commit each ran, so that rigor jobs shows them here too. It returns the
// ids it added; a batch whose commit cannot be fetched is left out, and
// said in the error.
func FetchBatches(ctx context.Context, root, remote string) ([]string, error) {
	// A batch this clone has is not read again: one git process each, 4 s
	// a 'rigor jobs' with 1,000 of them (BENCHMARKS.md).
	files, err := gitrepo.FetchFiles(ctx, root, remote, BatchRefPrefix, "batch.json", func(id string) bool {
		_, err := os.Stat(filepath.Join(BatchDir(root, id), "batch.json"))
		return err != nil
	})
	if err != nil {
		return nil, err
	}
	var added []string
	var errs []error
	for id, data := range files {
		b, err := ParseBatch(data)
		if err != nil || b.ID != id {
			continue
		}
		if err := fetchCommit(ctx, root, remote, b); err != nil {
			errs = append(errs, err)
			continue
		}
		if err := b.Create(root); err != nil {
			return added, err
		}
		added = append(added, id)
	}
	sort.Strings(added)
	return added, errors.Join(errs...)
}

// fetchCommit fetches the commit b's jobs ran from remote: at its submit
// ref while the batch runs, on its results branch once [Prune] removed
// that ref.
func fetchCommit(ctx context.Context, root, remote string, b *Batch) error {
	found, err := gitrepo.FetchRef(ctx, root, remote, b.SubmitRef())
	if err != nil || found {
		return err
	}
	if _, _, err := gitrepo.FetchBranch(ctx, root, remote, b.Branch, JobsRefPrefix+b.ID); err != nil {
		return err
	}
	if !gitrepo.HasCommit(ctx, root, b.Commit) {
		return fmt.Errorf("batch %s: %s has neither %s nor a results branch holding its commit %s", b.ID, redact.String(remote), b.SubmitRef(), gitrepo.ShortHash(b.Commit))
	}
	return nil
}

// Batches returns the module's batches, oldest first. A directory whose
// batch.json cannot be read is reported in the errors and left out.
func Batches(root string) ([]*Batch, []error) {
	dir := filepath.Join(root, filepath.FromSlash(StateDir))
	ents, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, []error{err}
	}
	var out []*Batch
	var errs []error
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		b, err := LoadBatch(filepath.Join(dir, e.Name()))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, b)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, errs
}

// Stamp writes into a record of task i what the batch knows of it: the
// invocation, the round and its place in the round (with more than one
// round, as a local rigor run --rounds records them), and the Slurm job.
// jobID is Slurm's own id of the job ($SLURM_JOB_ID), node and partition
// where it ran; each "" when unknown.
func (b *Batch) Stamp(run *results.Run, i int, jobID, node, partition string) {
	t := b.Tasks[i]
	run.Invocation = b.Invocation
	if b.Rounds > 1 {
		run.Round, run.Rounds, run.RoundsSeed, run.Order = t.Round, b.Rounds, b.RoundsSeed, t.Order
	}
	sj := &results.SlurmJob{Batch: b.ID, JobID: jobID, ArrayIndex: i, Node: node, Partition: partition}
	if len(b.Tasks) > 1 {
		sj.ArrayJobID = b.JobID
	} else if sj.JobID == "" {
		sj.JobID = b.JobID
	}
	run.Slurm = sj
}

// JobIDOf returns the Slurm id of task i: "<array id>_<i>" for an array,
// the job id for a batch of one task.
func (b *Batch) JobIDOf(i int) string {
	if len(b.Tasks) > 1 {
		return b.JobID + "_" + strconv.Itoa(i)
	}
	return b.JobID
}

// NodeDir is the directory the jobs start in and write their output to:
// one every node has, since the nodes need not share the submitting
// side's storage. rigor jobs shows a job's output tail where it can read
// it there (a job on this machine, or a /tmp the nodes share).
const NodeDir = "/tmp"

// SubmitRefPrefix is where a submission pushes the commit its jobs run:
// refs/rigor/submit/<id>.
const SubmitRefPrefix = "refs/rigor/submit/"

// JobsRefPrefix is where rigor jobs fetches a batch's results branch in
// the module: refs/rigor/jobs/<id> (a local ref, never pushed).
const JobsRefPrefix = "refs/rigor/jobs/"

// SubmitRef is the ref of the remote the submission pushes its commit to,
// and the jobs fetch it from.
func (b *Batch) SubmitRef() string { return SubmitRefPrefix + b.ID }

// OutputPattern is the --output of the batch's jobs.
func (b *Batch) OutputPattern() string {
	if len(b.Tasks) > 1 {
		return NodeDir + "/rigor-" + b.ID + "-%A_%a.out"
	}
	return NodeDir + "/rigor-" + b.ID + "-%j_0.out"
}

// OutputOf is the path of task i's output on its node once submitted.
func (b *Batch) OutputOf(i int) string {
	return NodeDir + "/rigor-" + b.ID + "-" + b.JobID + "_" + strconv.Itoa(i) + ".out"
}

func (b *Batch) resultPath(i int) string {
	return filepath.Join(b.Dir, "task-"+strconv.Itoa(i)+".json")
}

// Result returns what was written about task i, or nil.
func (b *Batch) Result(i int) (*TaskResult, error) {
	data, err := os.ReadFile(b.resultPath(i))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var r TaskResult
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("reading %s: %w", b.resultPath(i), err)
	}
	return &r, nil
}

// SetResult writes what is known of task r.Index, atomically. A batch a
// job read from its script has no directory: the record it pushed says it.
func (b *Batch) SetResult(r *TaskResult) error {
	if b.Dir == "" {
		return nil
	}
	if r.Written.IsZero() {
		r.Written = time.Now().UTC()
	}
	return writeJSON(b.resultPath(r.Index), r)
}

// Tail returns the last n lines of task i's output, "" when there is none.
func (b *Batch) Tail(i, n int) string {
	return logtail.File(b.OutputOf(i), n)
}

func writeJSON(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	data = append(data, '\n')
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
