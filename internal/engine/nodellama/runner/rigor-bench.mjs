// rigor-bench.mjs: rigor's bench runner for node-llama-cpp.
//
// It measures like llama-bench: for each combination of the swept settings
// and each test (pp<p>, tg<n>, pp<p>+tg<n>, each at every depth), it runs
// the warm-ups, then r repetitions, each on an empty KV cache, and prints
// one llama-bench JSON row per test: a JSON array, flushed one object at a
// time, so a crash leaves the rows already measured.
//
// What is timed is the evaluation of the tokens and nothing else, the way
// llama-bench does it: random tokens, one decode per batch of at most
// --batch-size tokens with the last token's logits computed, one decode per
// generated token, no sampling. By default (--api addon) it calls the native
// context that node-llama-cpp ships (initBatch/addToBatch/decodeBatch), so
// each decode costs one hop to the worker thread and no scheduling in
// JavaScript. --api public goes through the context sequence's public
// methods (evaluateWithoutGeneratingNewTokens for prompts, controlledEvaluate
// with greedy sampling for generation), to show what the JavaScript layer
// adds.
//
// Beside the runner's own samples, each row carries llama.cpp's own
// performance counters for every repetition (performanceTracking, read
// through printTimings): engine_samples_ns, engine_samples_ts,
// engine_avg_ts, engine_stddev_ts. The gap between avg_ts and engine_avg_ts
// is the time spent outside llama_decode, and each row says where it went:
// eval_calls (the calls to node-llama-cpp per repetition, each a trip to
// its worker thread and back), idle_call_ns (what one such call costs with
// an empty batch, measured before the test), outside_samples_ns (wall minus the engine's
// time, per repetition) and, where Linux's per-thread scheduler statistics
// are readable, sched_wait_samples_ns and sched_run_samples_ns (the time
// the runner's threads waited for a CPU, and ran, within the timed window).
//
// Nothing but the evaluation is in the timed window: the model and the
// context are made once per combination, the warm-ups run before, the
// tokens are drawn before, and the counters are reset and read outside it
// (their printout comes back through the logger on a later turn of the
// event loop, which the runner waits for after the window, not before it).
//
// Usage (every value but --model and --api may be a comma list; the lists
// are combined like llama-bench's):
//
//	node rigor-bench.mjs --model M [-p 512] [-n 128] [-r 5] [-pg P,N]... [-d 0]
//	    [--threads T] [--batch-size 512] [--context-size C] [--gpu-layers 0]
//	    [--warmup 1] [--api addon|public]
//
// Errors go to stderr as one last line "error: …" and the exit status is
// non-zero: 2 for bad arguments, 1 otherwise.

import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import {fileURLToPath} from "node:url";

class UsageError extends Error {}

function fail(msg, code) {
	fs.writeSync(2, "error: " + msg + "\n");
	process.exit(code);
}

function parseIntList(flag, value, min) {
	if (value === undefined) throw new UsageError(`invalid parameter for argument: ${flag} (missing value)`);
	const out = [];
	for (const part of String(value).split(",")) {
		if (!/^-?[0-9]+$/.test(part.trim())) throw new UsageError(`invalid parameter for argument: ${flag} (${JSON.stringify(value)} is not a list of integers)`);
		const n = Number(part.trim());
		if (!Number.isSafeInteger(n) || n < min) throw new UsageError(`invalid parameter for argument: ${flag} (${n} is below ${min})`);
		out.push(n);
	}
	return out;
}

// parseArgs reads the command line; defaults are llama-bench's where it has
// them, node-llama-cpp's otherwise.
export function parseArgs(argv) {
	const o = {model: null, p: [512], n: [128], r: 5, pg: [], d: [0], threads: [0], batch: [512], ctx: [0], ngl: [0], warmup: 1, api: "addon"};
	for (let i = 0; i < argv.length; i++) {
		const a = argv[i];
		const v = () => argv[++i];
		switch (a) {
		case "--model": case "-m": o.model = v(); if (!o.model) throw new UsageError("invalid parameter for argument: --model (missing value)"); break;
		case "-p": case "--n-prompt": o.p = parseIntList(a, v(), 0); break;
		case "-n": case "--n-gen": o.n = parseIntList(a, v(), 0); break;
		case "-r": case "--repetitions": { const r = parseIntList(a, v(), 1); if (r.length !== 1) throw new UsageError(`invalid parameter for argument: ${a} (one value)`); o.r = r[0]; break; }
		case "-pg": { const pair = parseIntList(a, v(), 0); if (pair.length !== 2) throw new UsageError(`invalid parameter for argument: ${a} (want pp,tg)`); o.pg.push(pair); break; }
		case "-d": case "--n-depth": o.d = parseIntList(a, v(), 0); break;
		case "-t": case "--threads": o.threads = parseIntList(a, v(), 0); break;
		case "-b": case "--batch-size": o.batch = parseIntList(a, v(), 1); break;
		case "-c": case "--context-size": o.ctx = parseIntList(a, v(), 0); break;
		case "-ngl": case "--gpu-layers": o.ngl = parseIntList(a, v(), 0); break;
		case "--warmup": { const w = parseIntList(a, v(), 0); if (w.length !== 1) throw new UsageError(`invalid parameter for argument: ${a} (one value)`); o.warmup = w[0]; break; }
		case "--api": o.api = v(); if (o.api !== "addon" && o.api !== "public") throw new UsageError(`invalid parameter for argument: --api (want addon or public)`); break;
		default: throw new UsageError(`unknown argument: ${a}`);
		}
	}
	if (!o.model) throw new UsageError("invalid parameter for argument: --model (required)");
	return o;
}

// tests lists the tests in llama-bench's order: pp, then tg, then pg, each
// at every depth.
export function tests(o) {
	const out = [];
	for (const d of o.d) {
		for (const p of o.p) if (p > 0) out.push({p, n: 0, d});
		for (const n of o.n) if (n > 0) out.push({p: 0, n, d});
		for (const [p, n] of o.pg) if (p > 0 || n > 0) out.push({p, n, d});
	}
	return out;
}

// label spells a test as llama-bench's markdown does.
export function label(t) {
	let s = t.n === 0 ? `pp${t.p}` : t.p === 0 ? `tg${t.n}` : `pp${t.p}+tg${t.n}`;
	if (t.d > 0) s += ` @ d${t.d}`;
	return s;
}

function combos(o) {
	const out = [];
	for (const ngl of o.ngl) for (const threads of o.threads) for (const batch of o.batch) for (const ctx of o.ctx) out.push({ngl, threads, batch, ctx});
	return out;
}

function mean(a) { return a.length ? a.reduce((x, y) => x + y, 0) / a.length : 0; }
function stdev(a) {
	if (a.length < 2) return 0;
	const m = mean(a);
	return Math.sqrt(a.reduce((s, x) => s + (x - m) * (x - m), 0) / (a.length - 1));
}

// perfLine marks llama_perf_context_print's lines; "load time" starts a
// printout and "total time" ends what the runner reads of it.
const perfLine = "llama_perf_context_print:";
const perfStart = /load time =/;
const perfEnd = /total time =/;

// emptyDecode matches llama.cpp's two complaints about an empty batch,
// which handOff makes on purpose.
const emptyDecode = /\bn_tokens == 0\b|failed to decode, ret = -1\b/;
let muted = 0; // complaints still to come from handOff's calls

// perfRE read llama_perf_context_print's lines.
const promptRE = /prompt eval time =\s*([0-9.]+) ms \/\s*([0-9]+) tokens/;
const evalRE = /(?:^|[^t] )eval time =\s*([0-9.]+) ms \/\s*([0-9]+) runs/m;

// parsePerf reads the prompt and generation counters out of printTimings'
// text. llama.cpp prints at least 1 token/run even when none ran.
export function parsePerf(text) {
	const t = text.replace(/llama_perf_context_print:/g, "\n");
	const pe = promptRE.exec(t), ev = evalRE.exec(t);
	if (!pe || !ev) return null;
	return {promptMs: Number(pe[1]), promptTokens: Number(pe[2]), evalMs: Number(ev[1]), evalRuns: Number(ev[2])};
}

async function main() {
	let o;
	try {
		o = parseArgs(process.argv.slice(2));
	} catch (e) {
		if (e instanceof UsageError) fail(e.message, 2);
		throw e;
	}
	const here = path.dirname(fileURLToPath(import.meta.url));
	let nlc;
	try {
		nlc = await import("node-llama-cpp");
	} catch (e) {
		fail(`cannot load node-llama-cpp next to ${here}: ${e && e.message ? e.message.split("\n")[0] : e}`, 1);
	}
	let version = "";
	try {
		version = JSON.parse(fs.readFileSync(path.join(here, "node_modules", "node-llama-cpp", "package.json"), "utf8")).version;
	} catch {}
	if (!fs.existsSync(o.model)) fail(`failed to load model '${o.model}': no such file`, 1);

	// printouts are llama.cpp's counter printouts, in the order printed;
	// node-llama-cpp hands them to the logger asynchronously.
	const printouts = [];
	let printing = null, printWaiters = [];
	let loadError = ""; // llama.cpp's own reason for refusing a model
	const logger = (level, message) => {
		if (muted > 0 && emptyDecode.test(message)) { muted--; return; } // handOff's own calls
		if (message.includes(perfLine)) {
			if (perfStart.test(message)) printing = "";
			if (printing === null) return; // after "total time"
			printing += message + "\n";
			if (perfEnd.test(message)) {
				printouts.push(printing);
				printing = null;
				for (const w of printWaiters.splice(0)) w();
			}
			return;
		}
		const m = /error loading model: (.*)/.exec(message);
		if (m) loadError = m[1].trim();
		// Warnings are marked so that rigor does not take them for the
		// cause of a failure.
		if (level === "error" || level === "fatal" || level === "warn") fs.writeSync(2, `llama.cpp (${level}): ` + message + (message.endsWith("\n") ? "" : "\n"));
	};
	const gpu = o.ngl.some((n) => n > 0) ? "auto" : false;
	let llama;
	try {
		llama = await loadLlama(nlc, gpu, logger);
	} catch (e) {
		fail(`cannot start llama.cpp (gpu: ${gpu}): ${e && e.message ? e.message.split("\n")[0] : e}`, 1);
	}
	const release = llama.llamaCppRelease?.release ?? "";
	const backends = llama.gpu ? String(llama.gpu).toUpperCase() : "CPU";
	const cpuInfo = os.cpus()[0]?.model?.trim() ?? "";
	const build = buildFacts(llama);

	let first = true;
	const emit = (row) => {
		fs.writeSync(1, (first ? "[\n" : ",\n") + "  " + JSON.stringify(row));
		first = false;
	};

	let model = null, modelNgl = -1;
	for (const c of combos(o)) {
		if (model === null || modelNgl !== c.ngl) {
			if (model) await model.dispose();
			try {
				model = await llama.loadModel({modelPath: o.model, gpuLayers: c.ngl});
			} catch (e) {
				const why = e && e.message ? e.message.split("\n")[0] : String(e);
				fail(`failed to load model '${o.model}': ${loadError && !why.includes(loadError) ? loadError : why}`, 1);
			}
			modelNgl = c.ngl;
		}
		const list = tests(o);
		const need = Math.max(16, ...list.map((t) => t.d + t.p + t.n + 1));
		const contextSize = c.ctx > 0 ? c.ctx : need;
		if (contextSize < need) fail(`invalid parameter for argument: --context-size (${contextSize} is smaller than the longest test, ${need} tokens)`, 2);
		let ctx;
		try {
			ctx = await model.createContext({contextSize, batchSize: c.batch, threads: c.threads, sequences: 1, performanceTracking: true, flashAttention: false, ignoreMemorySafetyChecks: true});
		} catch (e) {
			fail(`failed to create a context of ${contextSize} tokens: ${e && e.message ? e.message.split("\n")[0] : e}`, 1);
		}
		const seq = ctx.getSequence();
		const raw = ctx._ctx, seqId = seq._sequenceId;
		if (o.api === "addon" && !(raw && typeof raw.initBatch === "function" && typeof raw.addToBatch === "function" &&
			typeof raw.decodeBatch === "function" && typeof raw.removeTokenCellsFromSequence === "function" && Number.isInteger(seqId))) {
			fail(`node-llama-cpp ${version} has no native context API this runner knows; use --api public`, 1);
		}
		const vocab = model.fileInfo?.architectureMetadata?.vocab_size ?? model.fileInfo?.metadata?.tokenizer?.ggml?.tokens?.length ?? 0;
		if (!(vocab > 3)) fail(`failed to load model '${o.model}': cannot tell its vocabulary size`, 1);
		const rand = () => 3 + Math.floor(Math.random() * (vocab - 3));
		const batch = ctx.batchSize;

		// printTimings prints llama.cpp's counters and resets them, at
		// once; it returns the printout's number, for perfOf.
		let printed = printouts.length; // every printout so far was waited for
		const printTimings = () => {
			if (raw && typeof raw.printTimings === "function") raw.printTimings();
			else ctx.printTimings(); // prints synchronously, then waits a tick
			return printed++;
		};
		// perfOf waits for printout i (at most 5 s, as the logger may never
		// get it) and reads it.
		const perfOf = async (i) => {
			const deadline = Date.now() + 5000;
			while (printouts.length <= i && Date.now() < deadline) {
				let timer;
				await new Promise((resolve) => { printWaiters.push(resolve); timer = setTimeout(resolve, 100); });
				clearTimeout(timer);
			}
			const text = printouts[i];
			if (text === undefined) return null;
			printouts[i] = ""; // read once
			return parsePerf(text);
		};
		let evaluated = true; // anything evaluated since the counters were last reset
		const lastLogit = []; // lastLogit[i]: the logit index array [i], made once
		// The two ways to evaluate: the native context, or the public sequence API.
		const api = o.api === "addon" ? {
			async clear() { raw.removeTokenCellsFromSequence(seqId, 0, -1); },
			// tokens: drawn by draw(), outside the timed window.
			draw(n) { return Uint32Array.from({length: n}, rand); },
			async prompt(tokens, pos) {
				evaluated = true;
				for (let i = 0; i < tokens.length; i += batch) {
					const chunk = tokens.subarray(i, i + batch);
					raw.initBatch(chunk.length);
					raw.addToBatch(seqId, pos + i, chunk, lastLogit[chunk.length - 1] ??= Uint32Array.of(chunk.length - 1));
					await raw.decodeBatch();
				}
			},
			async gen(n, pos) {
				evaluated = true;
				const one = new Uint32Array(1), logit = Uint32Array.of(0);
				for (let i = 0; i < n; i++) {
					one[0] = rand();
					raw.initBatch(1);
					raw.addToBatch(seqId, pos + i, one, logit);
					await raw.decodeBatch();
				}
			},
		} : {
			async clear() { await seq.clearHistory(); },
			draw(n) { return Array.from({length: n}, rand); },
			async prompt(tokens) { evaluated = true; await seq.evaluateWithoutGeneratingNewTokens(tokens); },
			async gen(n) {
				evaluated = true;
				for (let i = 0; i < n; i++) await seq.controlledEvaluate([[rand(), {generateNext: {token: true}}]]);
			},
		};
		const once = async (t) => {
			await api.clear();
			if (t.d > 0) await api.prompt(api.draw(t.d), 0);
			const prompt = api.draw(t.p);
			// The counters must start at zero: reset them when anything ran
			// since the last printout, and wait for that printout here,
			// outside the timed window.
			if (evaluated) { await perfOf(printTimings()); evaluated = false; }
			const s0 = schedStats();
			const t0 = process.hrtime.bigint();
			if (t.p > 0) await api.prompt(prompt, t.d);
			if (t.n > 0) await api.gen(t.n, t.d + t.p);
			const ns = Number(process.hrtime.bigint() - t0);
			const s1 = schedStats();
			const perf = await perfOf(printTimings());
			evaluated = false;
			// The counters were reset just before, so their sum is the time
			// llama_decode spent on this repetition: llama.cpp books a
			// one-token batch as "eval" and a longer one as "prompt eval",
			// and prints 0.00 ms for the kind that did not run.
			// A printout that counted other tokens than this repetition's
			// is not this repetition's: its sample is left out.
			const counted = perf ? (perf.promptMs > 0 || perf.promptTokens > 1 ? perf.promptTokens : 0) + (perf.evalMs > 0 || perf.evalRuns > 1 ? perf.evalRuns : 0) : -1;
			return {ns, engineMs: counted === t.p + t.n ? perf.promptMs + perf.evalMs : null, sched: schedDelta(s0, s1)};
		};
		// handOff is what one evaluation call costs with no work in it: a
		// call with an empty batch, which llama_decode refuses at once, so
		// the hand-off to node-llama-cpp's worker thread and back alone
		// (the median of 15, before each test's warm-ups).
		const handOff = async () => {
			if (o.api !== "addon") return null;
			const ns = [];
			for (let i = 0; i < 15; i++) {
				raw.initBatch(1); // and nothing added
				muted += 2;
				const t0 = process.hrtime.bigint();
				try { await raw.decodeBatch(); } catch {}
				ns.push(Number(process.hrtime.bigint() - t0));
			}
			return ns.sort((a, b) => a - b)[7];
		};
		for (const t of list) {
			const idleCall = await handOff();
			for (let w = 0; w < o.warmup; w++) await once(t);
			const samplesNs = [], samplesTs = [], engineNs = [], engineTs = [], outsideNs = [], waitNs = [], runNs = [];
			const tokens = t.p + t.n;
			for (let r = 0; r < o.r; r++) {
				const {ns, engineMs, sched} = await once(t);
				samplesNs.push(ns);
				samplesTs.push(tokens * 1e9 / ns);
				if (engineMs !== null && engineMs > 0) {
					engineNs.push(Math.round(engineMs * 1e6));
					engineTs.push(tokens * 1e3 / engineMs);
					outsideNs.push(Math.max(0, ns - Math.round(engineMs * 1e6)));
				}
				if (sched) { waitNs.push(sched.wait); runNs.push(sched.run); }
			}
			// Where the time outside llama_decode went (see the header).
			const why = {outside_samples_ns: outsideNs};
			if (o.api === "addon") { why.eval_calls = Math.ceil(t.p / batch) + t.n; why.idle_call_ns = idleCall; }
			if (waitNs.length === o.r) { why.sched_wait_samples_ns = waitNs; why.sched_run_samples_ns = runNs; }
			emit({
				build_commit: release,
				build_number: 0,
				cpu_info: cpuInfo,
				gpu_info: "",
				backends,
				model_filename: o.model,
				model_type: model.typeDescription,
				model_size: model.size,
				model_n_params: typeof model._model?.getTotalParameters === "function" ? model._model.getTotalParameters() : 0,
				n_batch: batch,
				n_ubatch: batch,
				n_threads: ctx.currentThreads,
				type_k: "f16",
				type_v: "f16",
				n_gpu_layers: model.gpuLayers,
				flash_attn: false,
				n_ctx: ctx.contextSize,
				n_prompt: t.p,
				n_gen: t.n,
				n_depth: t.d,
				test: label(t),
				test_time: new Date().toISOString().replace(/\.[0-9]+Z$/, "Z"),
				avg_ns: Math.round(mean(samplesNs)),
				stddev_ns: Math.round(stdev(samplesNs)),
				avg_ts: mean(samplesTs),
				stddev_ts: stdev(samplesTs),
				samples_ns: samplesNs,
				samples_ts: samplesTs,
				engine_avg_ns: Math.round(mean(engineNs)),
				engine_avg_ts: mean(engineTs),
				engine_stddev_ts: stdev(engineTs),
				engine_samples_ns: engineNs,
				engine_samples_ts: engineTs,
				runner: "rigor-bench.mjs",
				runner_api: o.api,
				node_llama_cpp_version: version,
				node_version: process.version,
				warmup: o.warmup,
				...why,
				...build,
			});
		}
		await ctx.dispose();
	}
	fs.writeSync(1, first ? "[]\n" : "\n]\n");
	if (model) await model.dispose();
	process.exit(0);
}

// loadLlama starts llama.cpp through node-llama-cpp: the one place that
// says which binary to load (never a build: rigor installs the engine).
async function loadLlama(nlc, gpu, logger) {
	return nlc.getLlama({gpu, build: "never", logLevel: nlc.LlamaLogLevel.info, logger, maxThreads: 0, progressLogs: false});
}

// schedStats reads the scheduler's statistics of every thread of this
// process (Linux: /proc/self/task/*/schedstat, nanoseconds on a CPU and
// waiting for one); null where they are not readable.
function schedStats() {
	let tids;
	try { tids = fs.readdirSync("/proc/self/task"); } catch { return null; }
	const out = new Map();
	for (const tid of tids) {
		try {
			const f = fs.readFileSync(`/proc/self/task/${tid}/schedstat`, "utf8").split(" ");
			const run = Number(f[0]), wait = Number(f[1]);
			if (Number.isFinite(run) && Number.isFinite(wait)) out.set(tid, [run, wait]);
		} catch {} // the thread ended
	}
	return out.size > 0 ? out : null;
}

// schedDelta is what the threads did between two schedStats: time on a
// CPU (run) and time runnable but waiting for a CPU (wait), summed over
// threads (a thread born in between counts from zero).
function schedDelta(a, b) {
	if (!a || !b) return null;
	let run = 0, wait = 0;
	for (const [tid, [r, w]] of b) {
		const [r0, w0] = a.get(tid) ?? [0, 0];
		run += Math.max(0, r - r0);
		wait += Math.max(0, w - w0);
	}
	return {run, wait};
}

// buildFacts says which binary runs: node-llama-cpp's buildType
// ("prebuilt": the portable binaries shipped with the package;
// "localBuild": compiled on this machine), llama.cpp's system info (the CPU
// features the binary uses), and, where the process's memory map is
// readable (Linux), the native addon and the CPU backend library ggml
// chose, relative to node_modules.
function buildFacts(llama) {
	const out = {build_type: String(llama.buildType ?? ""), system_info: ""};
	try { out.system_info = String(llama.systemInfo ?? "").trim(); } catch {}
	try {
		const libs = new Set(fs.readFileSync("/proc/self/maps", "utf8").split("\n").map((l) => l.split(/\s+/).slice(5).join(" ")).filter((p) => p.startsWith("/")));
		const rel = (p) => { const i = p.lastIndexOf("/node_modules/"); return i >= 0 ? p.slice(i + "/node_modules/".length) : path.basename(p); };
		for (const p of libs) {
			if (p.endsWith(".node") && p.includes("llama")) out.native_addon = rel(p);
			if (/\/libggml-cpu[^/]*\.(so|dylib|dll)$/.test(p)) out.cpu_variant = path.basename(p);
		}
	} catch {}
	return out;
}

// Real paths: node resolves the module's own path through symlinks (a cache
// directory reached through a link), argv[1] keeps them.
const realPath = (p) => { try { return fs.realpathSync(p); } catch { return p; } };
if (process.argv[1] && realPath(path.resolve(process.argv[1])) === realPath(fileURLToPath(import.meta.url))) {
	main().catch((e) => fail(String(e && e.stack ? e.stack.split("\n")[0] : e), 1));
}
