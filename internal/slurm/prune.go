package slurm

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/rigorbench/rigor/internal/gitrepo"
	"github.com/rigorbench/rigor/internal/redact"
)

// A batch leaves two refs on the remote besides its results branch:
// SubmitRef (the commit its jobs fetch) and BatchRefPrefix+id (its
// batch.json, for rigor jobs in other clones). Left alone, every fetch or
// ls-remote of those refs grows with every batch ever submitted. [Prune]
// removes them once nothing needs them:
//
//   - the submit ref once the batch is finished: every task has a record on
//     the results branch (a job that ran publishes its own; rigor jobs
//     publishes one for a job that ended without), and that branch holds
//     the submitted commit, so no job will fetch it again and the commit
//     stays on the remote;
//   - the batch ref once the batch is finished and every one of its records
//     is merged into this clone's HEAD (rigor results sync), and only when
//     asked (rigor jobs --prune): other clones' rigor jobs list the batch
//     from it. Their results sync still brings every record from the
//     results branch, which is never removed (it is the records' home).
//
// When Prune cannot tell (the branch or HEAD cannot be read), it keeps
// the refs and says why.

// Pruned is what [Prune] did with one batch's refs on the remote.
type Pruned struct {
	Batch string `json:"batch"`
	// Removed are the refs removed from the remote (and from this clone).
	Removed []string `json:"removed,omitempty"`
	// Kept are the batch's refs left on the remote, and Why says why.
	Kept []string `json:"kept,omitempty"`
	Why  string   `json:"why,omitempty"`
}

// PruneOptions say whose refs [Prune] considers, and where.
type PruneOptions struct {
	// Root is the module's root; Remote the remote (name or URL) that holds
	// the batches' refs.
	Root, Remote string
	// Batches are the module's batches. A batch with a ref on the remote
	// and none here is read from its batch ref.
	Batches []*Batch
	// Only, when not empty, limits Prune to these batch ids.
	Only []string
	// SubmitOnly removes submit refs only (rigor results sync), and
	// considers only the batches that still have one: a batch's own ref
	// stays for rigor jobs in other clones.
	SubmitOnly bool
}

// Prune removes the refs of the batches that nothing needs any more from
// the remote (see above), in one push, and returns what it did with each
// batch it considered, in the order of their ids.
func Prune(ctx context.Context, o PruneOptions) ([]Pruned, error) {
	refs, err := gitrepo.RemoteRefs(ctx, o.Root, o.Remote, SubmitRefPrefix, BatchRefPrefix)
	if err != nil {
		return nil, fmt.Errorf("listing the batches' refs on %s: %w", redact.String(o.Remote), err)
	}
	batches, err := pruneCandidates(ctx, o, refs)
	if err != nil {
		return nil, err
	}
	var out []Pruned
	del := map[string]string{}
	for _, c := range batches {
		p := Pruned{Batch: c.id}
		finished, merged, why := false, false, c.why
		if c.b != nil {
			finished, merged, why = c.b.settledHere(ctx, o.Root, o.Remote)
		}
		for _, r := range c.refs {
			switch {
			case finished && r == SubmitRefPrefix+c.id, finished && merged && !o.SubmitOnly:
				p.Removed = append(p.Removed, r)
				del[r] = refs[r]
			default:
				p.Kept = append(p.Kept, r)
			}
		}
		if len(p.Kept) > 0 {
			p.Why = why
			if why == "" {
				p.Why = "kept for 'rigor jobs' in other clones ('rigor jobs --prune' removes it)"
			}
		}
		out = append(out, p)
	}
	if err := gitrepo.DeleteRemoteRefs(ctx, o.Root, o.Remote, del); err != nil {
		for i := range out {
			out[i].Kept = append(out[i].Kept, out[i].Removed...)
			sort.Strings(out[i].Kept)
			out[i].Removed = nil
		}
		return out, err
	}
	// The results branch fetched here to read the records goes too.
	local := map[string]string{}
	for _, p := range out {
		if len(p.Removed) > 0 {
			local[JobsRefPrefix+p.Batch] = ""
		}
	}
	return out, gitrepo.DeleteLocalRefs(ctx, o.Root, local)
}

// candidate is a batch with refs on the remote: its refs, and its batch
// when it could be read (else why not).
type candidate struct {
	id   string
	refs []string
	b    *Batch
	why  string
}

// pruneCandidates returns the batches Prune considers, by id: those with
// refs on the remote (a submit ref, with o.SubmitOnly), each with its
// batch, read from its batch ref when this clone has not got it.
func pruneCandidates(ctx context.Context, o PruneOptions, refs map[string]string) ([]*candidate, error) {
	byID := map[string]*candidate{}
	for ref := range refs {
		id, isSubmit := strings.CutPrefix(ref, SubmitRefPrefix)
		if !isSubmit {
			id = strings.TrimPrefix(ref, BatchRefPrefix)
		}
		if len(o.Only) > 0 && !slices.Contains(o.Only, id) {
			continue
		}
		c := byID[id]
		if c == nil {
			c = &candidate{id: id}
			byID[id] = c
		}
		c.refs = append(c.refs, ref)
	}
	var out []*candidate
	var missing []string
	for id, c := range byID {
		sort.Strings(c.refs)
		if o.SubmitOnly && !slices.Contains(c.refs, SubmitRefPrefix+id) {
			continue
		}
		for _, b := range o.Batches {
			if b.ID == id {
				c.b = b
			}
		}
		if c.b == nil && slices.Contains(c.refs, BatchRefPrefix+id) {
			missing = append(missing, BatchRefPrefix+id)
		}
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	files, err := gitrepo.FetchRefFiles(ctx, o.Root, o.Remote, missing, "batch.json")
	if err != nil {
		return nil, fmt.Errorf("reading batches from %s: %w", redact.String(o.Remote), err)
	}
	for _, c := range out {
		if c.b != nil {
			continue
		}
		data, ok := files[BatchRefPrefix+c.id]
		if !ok {
			c.why = "its batch (" + BatchRefPrefix + c.id + ") is not on the remote: whether its jobs are done cannot be told"
			continue
		}
		b, err := ParseBatch(data)
		if err != nil || b.ID != c.id {
			c.why = fmt.Sprintf("%s%s does not hold a batch of that id (%v)", BatchRefPrefix, c.id, err)
			continue
		}
		c.b = b
	}
	return out, nil
}

// settledHere reports whether every task of b has a record on b's results
// branch of remote, which holds b's commit (finished), and whether every
// one of those records is in this clone's HEAD (merged); why says what is
// missing when either is false.
func (b *Batch) settledHere(ctx context.Context, root, remote string) (finished, merged bool, why string) {
	res, tip, err := branchResultsFrom(ctx, root, remote, b)
	if err != nil {
		return false, false, fmt.Sprintf("its results branch %s could not be read: %v", b.Branch, err)
	}
	for i, t := range b.Tasks {
		if res[i] == nil {
			return false, false, fmt.Sprintf("job %s (%s, round %d) has no record on %s yet", b.JobIDOf(i), t.Point, t.Round, b.Branch)
		}
	}
	if ok, err := gitrepo.IsAncestor(ctx, root, b.Commit, tip); !ok {
		return false, false, fmt.Sprintf("%s does not hold the submitted commit %s (%v)", b.Branch, gitrepo.ShortHash(b.Commit), err)
	}
	var paths []string
	for _, r := range res {
		paths = append(paths, r.Record)
	}
	sort.Strings(paths)
	missing, err := gitrepo.InHead(ctx, root, paths)
	if err != nil {
		return true, false, fmt.Sprintf("whether its records are merged here could not be read: %v", err)
	}
	if len(missing) > 0 {
		return true, false, fmt.Sprintf("its records are not merged here yet (%d of %d missing; 'rigor results sync' merges them)", len(missing), len(paths))
	}
	return true, true, ""
}
