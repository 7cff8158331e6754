// Package stats is the statistics behind `rigor diff` and `rigor log`,
// free of any record type: centers and their intervals ([Mean], [MeanCI],
// [Median], [MedianCI], [GeoMean]), the tests ([MannWhitney], [Welch],
// [PairedLogT] with its exact [SignFlipP]), the Holm correction ([Holm]),
// outliers by hyperfine's modified z-score ([ModifiedZ], [Outliers],
// [OutlierThreshold]) and power: how many samples detect a change
// ([Repetitions], [TRepetitions], [PairedRepetitions]) and the smallest
// change n samples can detect ([DetectableChange], [TDetectableChange],
// [PairedDetectableChange]), with the t and normal distributions they
// need ([TSF], [TQuantile]).
//
// Every function takes plain float64 slices and returns values, so that
// each can be checked against independently computed figures:
// stats_test.go names the source of every expected number (R, hand
// enumeration, closed forms). Package compare decides what the samples
// are (runs, repetitions, pairs by round) and what a result means; this
// package only computes. It is to rigor what benchmath is to benchstat
// (golang.org/x/perf).
package stats
