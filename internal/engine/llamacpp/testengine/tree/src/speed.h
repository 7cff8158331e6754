/* speed.h: the test engine's speed knob, for tests that need a figure the
 * machine cannot move (rigor bisect's). Define TESTENGINE_TG_NS here, in a
 * commit, and llama-bench does no work: it reports each generated token as
 * taking TESTENGINE_TG_NS nanoseconds and each prompt token a tenth of
 * that, every repetition varied by noise with a standard deviation of
 * TESTENGINE_NOISE_PPM parts per million (uniform, from a generator seeded
 * by the clock and the pid). A commit that changes TESTENGINE_TG_NS makes
 * generation that much slower or faster, whatever the load.
 *
 * #define TESTENGINE_TG_NS 1000000
 * #define TESTENGINE_NOISE_PPM 5000
 */
