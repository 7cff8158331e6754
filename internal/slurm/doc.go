// Package slurm hands rigor's runs to a Slurm cluster. rigor never
// schedules anything itself: Slurm decides where and when each job runs.
//
// The steps, from an experiment to its records:
//
//  1. [LoadConfig] reads the module's slurm.cue: defaults (partition,
//     account, time limit, further sbatch options, the git remote) and the
//     mapping from the facts #requires talks about to node features and GPU
//     GRES types.
//  2. [FromRequires] turns the experiment's #requires into a [Request]:
//     GPU count and type as --gres, CPUs and memory as --cpus-per-task and
//     --mem, every other fact as a --constraint over features.
//  3. A [Script] holds one submission: an array with one task per point and
//     round, each running `rigor jobs task` on its node. [Client.TestOnly]
//     asks Slurm first (sbatch --test-only), so nothing unmeetable is
//     submitted; [Client.Submit] submits.
//  4. A [Batch] in the module's .rigor/slurm/ directory tracks the
//     submission: the commit the jobs run, the tasks, the job id, and what
//     each task reported ([TaskResult]).
//  5. [Client.Jobs] reads the jobs' states (scontrol, sacct for jobs
//     scontrol has forgotten) and [Client.Cancel] cancels them.
//
// The job side (clone, run, publish the record through git) and the
// gathering of results (rigor results sync) live in internal/cli and
// internal/results.
package slurm
