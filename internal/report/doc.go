// Package report turns recorded runs into a static HTML site and plots:
// the substance of `rigor report`, `rigor diff --format html` and the
// --plot flags of diff and log. It returns pages and figures; it never
// prints.
//
// # The site, step by step
//
//  1. [Build] groups the runs by experiment and, for each, takes its
//     history from [compare.Log] (the per-run statistics and the drift
//     markers `rigor log` shows).
//  2. An experiment page plots each metric over time: one series per
//     point, each run's mean with its 95% Student-t interval (the
//     history's [compare.MetricStat], as `rigor log` shows it), a dashed
//     line where the
//     lock, the rig or the spec drifted, a red cross for a run that
//     failed. With two engine commits or more, each key metric by
//     commit: the commit's ok runs pooled, mean and interval. Then the
//     tables of commits and runs, which are the plots' text alternative.
//     An experiment whose points measured quality (quality.measure) has,
//     first on its page, a speed-vs-quality scatter ([compare.SpeedQualityOf]):
//     each point's latest ok run, of it and of its package's experiments
//     measured against the same baseline, the mean KL divergence on a log
//     axis (the baseline's 0 at its left edge) against the primary output
//     rate with its interval, the Pareto front as a line, and its table.
//  3. A sweep page (experiments with swept values) plots each metric
//     against each swept field, one line per combination of the other
//     fields, from the latest ok run of each point ([results.LatestPerPoint],
//     the runs `rigor diff` compares by default), with its table.
//  4. A diff page (experiments with two ok runs of a point) compares the
//     previous ok run of each point with the latest through
//     [compare.Compare]: the configuration diff beside the metric tables,
//     and a strip plot of both sides' samples per metric. `rigor diff A B
//     --format html` writes the same page for any two sides ([DiffPage]).
//  5. The index lists the experiments: the last run and its status, the
//     headline metric (tokSOut first, as `rigor log` orders them) with its
//     interval, and the drift markers.
//
// # Pages
//
// Every page is one self-contained HTML file: the style sheet inline, the
// plots inline as SVG drawn by gonum's plot package, no script, no font or
// anything else fetched, so a report opens from a file, a zip or a pull
// request's artifacts with no network and no server. Each plot is an
// <svg role="img"> with a <title> and a <desc>, and its data is in a table
// on the same page. Axes carry the unit and which direction is better.
// Nothing depends on the time the report was built: the same records give
// the same bytes.
package report
