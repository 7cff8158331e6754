// Package text renders compare's values for a terminal and for other
// programs: a diff ([compare.Report]) as aligned text, Markdown, CSV or
// JSON, and a history ([compare.History], `rigor log`) as text or JSON. It
// decides nothing: every figure, verdict and message is compare's; what
// this package adds is layout, precision and wording of tables. The HTML
// report (internal/report) uses its shared figures ([FormatCI],
// [SideLine], [RunLine]) so that every form shows the same numbers.
//
// # Diff
//
// [WriteText] writes an aligned table for a terminal: values with 4
// significant digits, the interval as ± half-width in percent of the
// center (benchstat's form), p-values with three decimals, and the
// warnings after the tables, wrapped to the terminal width. [WriteMarkdown]
// writes the same as GitHub-flavoured Markdown. [WriteCSV] writes the
// metric tables only, one line per row and a "geomean" line per table,
// with full precision, under the columns of [CSVHeader]: metric, name,
// test, unit, direction, point, center (mean|median), a_n, a_center,
// a_low, a_high, b_n, b_center, b_low, b_high, delta_pct, p, p_adjusted,
// welch_p, verdict (better|worse|inconclusive|changed|confounded|
// untested|none), needed_n, sample_unit (runs|repetitions), decided_by
// (paired-t-log|invocations-t, empty when untested), pairs, mde_pct ("inf" when no change can be significant),
// detect_n.
//
// [WriteJSON] writes one object whose field names are stable (version
// [JSONVersion]); numbers that do not exist are null:
//
//	version, center ("mean"|"median"), test ("paired-t-log"|
//	"invocations-t"|"mixed"|"none": the rows' decidedBy),
//	correction ("holm"), alpha, historyAlpha (the level of the
//	"invocations-t" rows; their p is scaled by alpha/historyAlpha before
//	Holm), confidence, power,
//	a, b: {label, runs, used, points, experiments, first, last},
//	config: [{section ("spec"|"lock"|"rig"), path, old, new, points}]
//	  (old/new are JSON values, omitted when absent),
//	mismatches: [{field, a, b, message}],
//	tables: [{metric, name, test, unit, direction,
//	  rows: [{point, a, b, deltaPercent, p, pAdjusted, exact, separated,
//	    welchP, verdict, neededPerSide, sampleUnit, decidedBy, pairs,
//	    signFlipP, mdePercent, detectPerSide, why (an untested row's
//	    reason), confound (the state of a confounded row), noiseDF}],
//	  geomean: {a, b, deltaPercent} | null}],
//	  where a and b are {n, runs, center, low, high, confidence, mean,
//	  median, stddev, min, max, samples, repetitions, outliers,
//	  warmupRuns, warmupFirstRun},
//	onlyA, onlyB: [point labels], notes: [strings],
//	warnings: [{kind, metric, point, message}],
//	untested: the line saying why rows are untested and what gives a
//	  verdict (omitted when every row was tested).
//
// # Log
//
// [WriteLogText] writes one line per run of a [compare.History] with its
// metrics and drift, a CI bar per run on one stated scale and a sparkline of tokSOut per point over time, on a scale
// never narrower than ±5% of its middle so that a wiggle of a fraction of a
// percent does not look like a cliff; [WriteLogJSON] writes the same as
// JSON.
package text
