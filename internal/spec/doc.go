// Package spec reads a rigor module's experiments: CUE files under
// experiments/ that unify with the schema (package schema, embedded in the
// binary and overlaid on the module's copy, so the binary's schema always
// wins).
//
// The steps, for [Load]:
//
//  1. Find the module root (cue.mod/) and the experiment packages, one per
//     directory under experiments/.
//  2. Build the embedded schema and read its family table once (#Families:
//     [Family], [Families], [LookupFamily]), with the flag tables of each
//     family: every typed flag with its spelling, whether the bench tool
//     sweeps it itself, and the output field that reports it (the
//     @flag(...) attributes; [FlagTable], [BuiltinFlagTable]).
//  3. Evaluate each package, unify each experiment with schema.#Experiment
//     when the file did not, validate it concretely and decode it into a
//     [Spec]. Every problem becomes a positioned [Problem] with a sentence
//     a user understands and, where useful, hints; one broken experiment
//     never hides the others.
//  4. Expand sweeps into [Point]s (the cartesian product of the swept
//     values), render typed flags as argv words ([Arg]), and compute each
//     point's canonical JSON and digest, which lockfiles and records carry.
//
// Experiment ids are the package directory plus the field name
// ("minimax-m27-b70/baseline"); point ids add their axis values
// ("minimax-m27-b70/ubSweep[ub=16]").
package spec
