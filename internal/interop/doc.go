// Package interop converts between rigor's run records and the formats the
// community already keeps results in.
//
// Import turns one file into run records in four steps:
//
//  1. Detect the format (or take the one given): seed 000's summary format
//     ("seed-summary"), a LocalMaxxing speed-test JSON ("localmaxxing"), a
//     local-ai-registry v1 record ("registry-v1", bare or wrapped in the
//     registry API's {"data": …}), or llama-bench -o json/jsonl output
//     ("llama-bench-json").
//  2. Decode and validate the whole file: a malformed, truncated or
//     unknown-version file is an error naming the file and what is wrong,
//     before any record exists.
//  3. Link each run to an experiment point: by --experiment, else by the
//     experiments' labels (which hold the source's own run labels), else
//     (LocalMaxxing) by the one experiment with the same model, engine and
//     quantization. An id that does not exist is a [*spec.NoMatchError]
//     with the nearest ids. What the source says is checked against the
//     linked point where both say it (a seed's -nkvo against flags.nkvo).
//  4. Build records that keep every figure and raw sample, with
//     Provenance{Kind: "import"} and the file's sha256, and list in
//     Unverified what the source cannot prove (a short commit, a branch
//     name for a revision, a model path without a hash).
//
// Export goes the other way, from records to a LocalMaxxing submission, a
// local-ai-registry v1 speed sweep, or a markdown, CSV or JSON table. An
// export never invents a value: a field rigor does not know is left out,
// and a required one that is missing is an error naming it.
//
// Everything here is a pure function of its inputs; the CLI reads the
// files, finds the experiments and writes the records.
package interop
