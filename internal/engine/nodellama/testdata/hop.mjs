// hop.mjs: where a generated token's time goes in rigor-bench.mjs's
// default path (BENCHMARKS.md, "Which figure to quote"). Run it from a
// directory whose node_modules holds node-llama-cpp (rigor's engine cache):
//
//	node hop.mjs MODEL [TOKENS_PER_REPETITION] [REPETITIONS]
//
// It generates like the runner (one random token per decode, one thread, an
// empty KV cache per repetition) and splits each token's wall time into:
// prep (initBatch and addToBatch, the JavaScript the runner does per
// token), hand-off (decodeBatch's synchronous part: queueing the work on
// libuv's pool, which wakes a worker thread), wait (until the promise
// resolves: the worker runs llama_decode, then the main thread is woken),
// and llama.cpp's own eval time per token; the last line is the idle round
// trip of an empty call (rejected at once by llama_decode, so it is the
// hand-off and the wake-ups alone), and the CPU wait of the process's
// threads (Linux schedstat).
import fs from "node:fs";
import {getLlama, LlamaLogLevel} from "node-llama-cpp";

const [model, perRep = "16", reps = "200"] = process.argv.slice(2);
const N = Number(perRep), R = Number(reps);
let text = "", printouts = 0, waiters = [];
const logger = (level, message) => {
	if (!message.includes("llama_perf_context_print:")) return;
	text += message + "\n";
	if (/total time =/.test(message)) { printouts++; for (const w of waiters.splice(0)) w(); }
};
const llama = await getLlama({gpu: false, build: "never", logLevel: LlamaLogLevel.info, logger, maxThreads: 0, progressLogs: false});
const m = await llama.loadModel({modelPath: model, gpuLayers: 0});
const ctx = await m.createContext({contextSize: N + 16, batchSize: 512, threads: 1, sequences: 1, performanceTracking: true, flashAttention: false, ignoreMemorySafetyChecks: true});
const raw = ctx._ctx, sid = ctx.getSequence()._sequenceId;
const vocab = m.fileInfo.architectureMetadata?.vocab_size ?? 512;
const hr = () => process.hrtime.bigint();
const evalMs = async () => {
	const want = printouts + 1;
	text = "";
	raw.printTimings();
	while (printouts < want) await new Promise((r) => waiters.push(r));
	return Number(/[^t] eval time =\s*([0-9.]+) ms/.exec(text)[1]);
};
const wait = () => {
	let w = 0;
	for (const t of fs.readdirSync("/proc/self/task")) {
		try { w += Number(fs.readFileSync(`/proc/self/task/${t}/schedstat`, "utf8").split(" ")[1]); } catch {}
	}
	return w;
};
const one = new Uint32Array(1), logit = Uint32Array.of(0);
let prep = 0n, handoff = 0n, waited = 0n, engine = 0, cpuWait = 0;
for (let r = -1; r < R; r++) { // r = -1: a warm-up
	raw.removeTokenCellsFromSequence(sid, 0, -1);
	await evalMs();
	const w0 = wait();
	let p = 0n, h = 0n, a = 0n;
	for (let i = 0; i < N; i++) {
		const t0 = hr();
		one[0] = 3 + Math.floor(Math.random() * (vocab - 3));
		raw.initBatch(1);
		raw.addToBatch(sid, i, one, logit);
		const t1 = hr();
		const done = raw.decodeBatch();
		const t2 = hr();
		await done;
		const t3 = hr();
		p += t1 - t0; h += t2 - t1; a += t3 - t2;
	}
	const w1 = wait();
	const e = await evalMs();
	if (r >= 0) { prep += p; handoff += h; waited += a; engine += e; cpuWait += w1 - w0; }
}
const us = (ns) => (Number(ns) / 1e3 / (N * R)).toFixed(1);
const wall = prep + handoff + waited;
console.log(`per token over ${R}×${N}: wall ${us(wall)} µs = prep ${us(prep)} + hand-off ${us(handoff)} + wait ${us(waited)}; llama.cpp eval ${(engine * 1e3 / (N * R)).toFixed(1)} µs; ratio ${(Number(wall) / 1e6 / engine).toFixed(2)}; CPU wait of the threads ${us(BigInt(cpuWait))} µs`);
let empty = 0n;
for (let i = 0; i < 200; i++) {
	raw.initBatch(1); // nothing added: llama_decode refuses at once
	const t0 = hr();
	try { await raw.decodeBatch(); } catch {}
	empty += hr() - t0;
}
console.log(`an empty call's round trip: ${(Number(empty) / 1e3 / 200).toFixed(1)} µs`);
process.exit(0);
