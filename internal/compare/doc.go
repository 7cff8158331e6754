// Package compare is the statistics and diff engine behind `rigor diff A B`
// and `rigor log ID`. It takes recorded runs ([results.Run]) and returns
// values: a [Report] or a [History]. It renders nothing: the text,
// Markdown, CSV and JSON forms are internal/report/text's, the HTML pages
// internal/report's. Its own words are the messages of a report (notes,
// warnings, the untested line) and the number formats they use
// ([FormatNum], [FormatDelta], …), which every renderer shares. It never
// prints or exits; the CLI decides what a finding means.
//
// # Compare, step by step
//
//  1. Each [Side] is a label plus runs. Runs are ordered by start time and
//     grouped into points by their swept values (Run.Swept; a run without
//     one is the single point). Numbers in swept values are normalized
//     through JSON, so 16 and 16.0 are one point.
//  2. Runs whose status is not ok are left out (counted in a warning);
//     Options.IncludeIncomplete keeps the samples of crashed, timed-out
//     and interrupted runs. Failed runs never count.
//  3. Within a point, the samples of a metric key (Metric.Key: name plus
//     test, "tokSOut tg64") are, when both sides have at least two runs of
//     the point, the runs' means (one per engine process: Row.SampleUnit
//     UnitRuns); otherwise every repetition pooled across the runs
//     (UnitRepetitions). Runs of A and B recorded in the same round of one
//     invocation (Run.Invocation, Run.Round) pair up. A metric recorded
//     without samples counts its value as one sample.
//  4. Points are matched by their swept values; points of one side only are
//     listed (Report.OnlyA, OnlyB). Two sides of one point each are matched
//     whatever their swept values.
//  5. Configuration diff: for each matched point, the latest run of each
//     side is flattened into leaves and diffed (see below). Identical
//     changes across points are merged; a change that applies to some
//     points only names them.
//  6. Comparability guard (see below).
//  7. One [Table] per metric, one [Row] per matched point: each side's
//     [Summary] (with its outliers and warm-up runs), the delta of the
//     centers, the test its design allows (see "When there is a
//     verdict"), the Holm correction over every tested row of the report,
//     the verdict, the minimum detectable change at the current n; a
//     geomean row when the table has two rows or more. The table of the
//     figure to quote (tokSOut) comes first. Report.Notes say which
//     samples the tests used and why; Report.Untested says why rows have
//     no test and which command would give one; machine-state warnings
//     compare the busiest run of each side.
//
// # When there is a verdict
//
// A verdict (better, worse, changed) is given only when the units are
// runs and the design separates the change from the machine's drift
// (issue 25; verdict.go):
//
//  1. paired rounds: runs of A and B in the same rounds of one
//     invocation (rigor run A B --rounds K), [DecidePairedT];
//  2. separate invocations with an estimate of the noise between
//     invocations from Options.History: the invocation means of earlier
//     invocations of the same experiment, point, lock digest and host,
//     at least [MinHistoryDF] degrees of freedom, [DecideHistory], held
//     to Options.HistoryAlpha (α/5 by default): its p is multiplied by
//     α/HistoryAlpha before the Holm correction, because it assumes
//     today's noise is the history's.
//
// Every other row (one run a side, the repetitions inside runs, a serve
// run's requests, separate invocations without history) is [Untested]:
// delta and intervals, no p-value. A significant row whose sides ran
// under machine states that can explain at least half the change (the
// share of the cores other processes took, the lowest CPU clock) is
// [Confounded], and a warning names the state. A serve metric (test
// "serve") counts one value per run, its recorded summary: its samples
// are requests, not repetitions.
//
// # The statistics, and why
//
// What follows describes the tests the designs above use; the rank and
// Welch tests remain in package stats, and decide nothing on their own
// since issue 25.
//
// The two anchors: benchstat reports the median with a distribution-free
// order-statistic interval, tests with the Mann–Whitney U test and calls a
// difference only when p < α = 0.05; hyperfine offers Welch's t-test. rigor
// takes benchstat's decision rule and keeps the mean as the figure people
// read:
//
//   - Center: the mean, with a Student-t 95% interval (Options.Center =
//     CenterMean, the default). llama-bench reports the mean (avg_ts),
//     leaderboards publish it and the users' own notes quote it (seed 000:
//     14.29 → 16.38 tok/s). Each sample is already an average over many
//     tokens, so its noise is close to normal and the t-interval is
//     meaningful even at n = 3, where a median has no 95% interval at all.
//     CenterMedian gives benchstat's view: the median with the narrowest
//     order-statistic interval [x(k), x(n+1-k)] whose binomial coverage
//     reaches 95%. That needs n ≥ 6; below, the achievable coverage is
//     kept in Summary.Confidence and the renderers show "± ∞".
//   - Samples: runs when both sides have two or more (see step 3): the
//     repetitions inside one process share the machine's state of that
//     minute and understate the noise between runs (issue 18). On runs,
//     Welch's t-test of the runs' means decides (DecideWelch); on runs
//     paired by round, the paired t-test of the log ratios ln(B/A)
//     ([stats.PairedLogT], DecidePairedT), whose exact sign-flip p is reported
//     beside it. Both are t-tests because a run's mean averages many
//     tokens, and because rank tests cannot decide at the run counts
//     people record (3 vs 3 cannot go below p = 0.1).
//   - Test on repetitions: the two-sided Mann–Whitney U test decides. It assumes no shape
//     of the noise, and one stalled repetition (thermal throttling, a
//     background job) can neither manufacture nor hide a difference. For
//     small samples (the smaller side ≤ 10 values, both ≤ 200) the p-value
//     is exact: the permutation distribution of the rank sum over all
//     C(n1+n2, n1) splits of the pooled mid-ranks, counted by dynamic
//     programming, so it stays exact with ties. Above that, the normal
//     approximation with the tie-corrected variance and a continuity
//     correction of ½ (R's wilcox.test(exact=FALSE)).
//   - Welch's t-test is reported beside it (Row.WelchP) and never decides:
//     it is the only test that can give a small p at n = 3, but only by
//     assuming normal noise, which three samples cannot check.
//   - Multiple comparisons: the p-values of every tested row of the
//     report, over metrics and points, are one family, adjusted by Holm's
//     step-down method (uniformly more powerful than Bonferroni, valid
//     under any dependence): a diff is read as a whole, so its chance of
//     any false verdict is what α bounds.
//   - Verdict: Better or Worse when the adjusted p < α, in the metric's
//     direction (Metric.Direction; when missing, tokS* is higher-is-better
//     and *Ms, *Gb lower-is-better); the direction of the change is the
//     test's (the U statistic), Changed for a metric with no direction,
//     Inconclusive ("~") otherwise. "~" is not evidence of no change.
//   - Geomean: the geometric mean of each side's centers over the rows that
//     have both, and the ratio of the two, as benchstat summarizes.
//
// # Honest about small samples
//
// An exact two-sided rank test with n1 and n2 values cannot give a p-value
// below 2/C(n1+n2, n1) ([stats.MinPValue]): 0.1 for 3 vs 3, so nothing is
// significant at α = 0.05 however large the change; 4 vs 4 gives 0.029.
// Under Holm over k points the smallest p is multiplied by k. When a row
// cannot reach α for this reason the report says so and how many per side
// could. For the other inconclusive rows one warning per table states the
// minimum detectable change at the current n (Row.MDE, at power 0.8):
// [stats.DetectableChange] for the rank test (the inverse of [stats.Repetitions], R's
// power.t.test divided by the efficiency 3/π), [stats.TDetectableChange] for
// Welch, [stats.PairedDetectableChange] for pairs. Options.Detect (--detect 2%)
// adds how many samples per side would detect that change. For the
// seed-000 case:
//
//	tokSOut tg64: n=3 vs 3 repetitions: the smallest p an exact rank test
//	can give is 0.100, above α=0.05: no change can be told from noise with
//	3 repetitions per side; 4 per side is the least that can (every B
//	sample is above every A sample, the strongest evidence 3 vs 3 can give;
//	Welch's t-test, which assumes normal noise, gives p=0.006)
//
// and for five runs a side: "with 5 runs per side, changes under ±9.1%
// cannot be told from noise here".
//
// # Outliers and machine state
//
// Outliers follow hyperfine: a modified z-score |x − median| / MAD above
// [stats.OutlierThreshold] (14.826), per side on the samples the test used,
// reported and kept. A run whose first repetition is such an outlier on
// the slow side counts as a warm-up (Summary.WarmupRuns), and so does a
// first run that is one among the runs (Summary.WarmupFirstRun). Runs that carry a
// machine state (Run.Machine) are judged with machine.State.Busy, and the
// busiest run of each side compared with machine.Compare.
//
// # Configuration diff
//
// A run's configuration is flattened into leaves with canonical JSON
// values, in three sections:
//
//   - spec: Run.Spec as a generic JSON tree, paths as written:
//     flags.nkvo, env.GGML_SYCL_DISABLE_OPT, bench.r, model.quant,
//     extraArgs. Keys that are not identifiers are quoted (env."A B").
//     Arrays of scalars are one leaf; arrays holding objects are diffed by
//     index (ot[0].dev). The top-level fields that document rather than
//     configure (description, notes, labels, tags) are left out.
//   - lock: what the lock resolved, as the record holds it:
//     lock.engine.{family,source,ref,commit,version,buildId,backend},
//     lock.engine.patches[i] ("path sha256:…"),
//     lock.model.{hf,revision,commit,path,quant},
//     lock.model.files."<path>".{sha256,size}.
//   - rig: rig.{gpu,gpuCount,gpuMemoryGB,driver,cpu,cpuCores,memoryGB,os,
//     kernel,arch}, rig.toolchain.<tool>. The hostname never takes part.
//
// Each [Change] reads "path: old → new", "(absent)" for a missing side:
// `flags.nkvo: 1 → 0`, `env.FOO: (absent) → "1"`.
//
// # Comparability guard
//
// Some dimensions are not meant to vary between two sides ([GuardFields]):
// the CPU model and core count; GPU presence, model, count and memory; the
// GPU driver; the engine's backend; its build id and binary hashes (only
// when both sides built the same engine commit and patches: a patch
// before and after builds other bytes on purpose); the model's real file
// type (GGUF general.file_type: "model file type F16 → Q8_0", rather than
// "hashes differ"), the model file hashes, the declared quantization; and
// the spec's quality trade-offs (a q8_0 KV cache on one side only). The
// distinct values of each are collected per side over the runs that
// count, a run that does not record a field counting as [NotRecorded], so
// that a field present on one side and absent on the other is a
// difference (4 GPUs against a CPU-only run: "GPU count 4 → 0"). A
// [Mismatch] is reported when the sides' values differ, or when one side
// pools runs with several values. Mismatches are warnings
// ([WarnIncomparable]); Options.Strict makes [Compare] return the report
// with an [*IncomparableError] (errors.Is(err, [ErrIncomparable])), which a
// `--strict` flag turns into a failure. Runs without model hashes get a
// [WarnUnverified] warning: their model bytes cannot be checked.
//
// # CI gate
//
// [Report.Regressions](percent) returns the rows that are significantly
// worse (Verdict Worse after Holm) by more than percent. A
// `--fail-on-regression[=PERCENT]` flag fails when it is not empty; the
// exit code belongs to the CLI (internal/cli/exit.go).
//
// # Output formats
//
// The renderers, their columns and the JSON's stable field names are
// described in internal/report/text.
//
// # Log
//
// [Log] orders an experiment's runs by start time (the runs of one round
// of an invocation by their points' values) and gives each its rig
// summary, engine commit, status and per-metric mean, 95% interval and
// spread, with a drift marker where something changed between
// consecutive runs: the lock section against the previous run, the rig
// against the previous run on the same host, the spec against the previous
// run of the same point, and the lock digest when it changed with nothing
// recorded to show for it; [Chart] is the tokSOut series per point that
// the text form draws as sparklines.
package compare
