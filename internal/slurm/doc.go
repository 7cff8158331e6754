// Package slurm hands rigor's runs to a Slurm cluster. rigor never
// schedules anything itself: Slurm decides where and when each job runs.
//
// The steps, from an experiment to its records:
//
//  1. [LoadConfig] reads the module's slurm.cue: defaults (partition,
//     account, time limit, further sbatch options, the git remote) and the
//     mapping from the facts #requires talks about to node features and GPU
//     GRES types.
//
//  2. [FromRequires] turns the experiment's #requires into a [Request]:
//     GPU count and type as --gres, CPUs and memory as --cpus-per-task and
//     --mem, every other fact as a --constraint over features.
//
//  3. A [Script] holds one submission: an array with one task per point and
//     round, each running `rigor jobs task` on its node. [Client.TestOnly]
//     asks Slurm first (sbatch --test-only), so nothing unmeetable is
//     submitted; [Client.Submit] submits.
//
//  4. A [Batch] in the module's .rigor/slurm/ directory tracks the
//     submission: the commit the jobs run, the tasks and their rounds, the
//     job id, and what each task reported ([TaskResult]). It is pushed to
//     refs/rigor/batches/<id> of the remote too ([FetchBatches] brings it
//     to other clones), and the job script carries it: the nodes share no
//     storage with the submitting side.
//
//  5. [Client.Jobs] reads the jobs' states (scontrol, sacct for jobs
//     scontrol has forgotten) and [Client.Cancel] cancels them.
//
//  6. [Submit] does steps 3 and 4 for rigor run --slurm, after checking
//     that what the jobs run is committed, and pushes that commit to
//     refs/rigor/submit/<id> of the remote.
//
//  7. [NodeTask] is a job on its node (rigor jobs task): fetch the module
//     from the remote at the batch's commit, run the point there, stamp the
//     record (invocation, round, order, Slurm job), publish it to the
//     batch's results branch ([gitrepo.Publish]).
//
//  8. [Refresh] reads every task's state for rigor jobs (Slurm, and the
//     records on the results branch) and records, commits and pushes the
//     tasks whose job ended without a record of its own.
//
//  9. [Prune] removes a finished batch's refs from the remote (rigor
//     results sync its submit ref, rigor jobs --prune its batch ref once
//     its records are merged); a job whose record is published ok removes
//     its own output from its node, and [RemoveOldOutputs] those of failed
//     jobs after [OutputKept].
//
// internal/cli keeps the flags and the rendering; gathering the results
// branches (rigor results sync) is [gitrepo.Sync].
package slurm
