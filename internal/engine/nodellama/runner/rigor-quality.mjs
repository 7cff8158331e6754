// rigor-quality.mjs: rigor's quality runner for node-llama-cpp.
//
// It measures what llama.cpp's llama-perplexity measures, from the model's
// own logits (node-llama-cpp's controlledEvaluate with generateNext.logits):
// the corpus is tokenized as llama-perplexity tokenizes it (with the
// model's special tokens: BOS first when the model adds one, as
// common_tokenize(ctx, text, true) does), cut into chunks of --ctx tokens
// (the first of each replaced by BOS when the model adds one), and the
// tokens of the second half of each chunk are scored. The chunks are
// therefore upstream's, token for token.
//
// With --write-base FILE it writes the log-probabilities of every scored
// token over the whole vocabulary (float32, exact: a model scored against
// itself is 0 KL divergence) and prints llama-perplexity's "[1]x.xxxx,…"
// line and, on stderr, "Final estimate: PPL = … +/- …". With --base FILE
// it scores the model against those log-probabilities and prints
// llama-perplexity --kl-divergence's table and statistics blocks, in its
// format (the KL divergence statistics with 9 decimals instead of 6: a
// small model's Q8_0 diverges by about 1e-5), computed by the same
// formulas.
//
// Usage:
//
//	node rigor-quality.mjs --model M --ctx C --chunks K [--threads T]
//	    [--gpu-layers L] (--corpus F --write-base OUT | --base IN)
//
// The base file: "rigorlp1", then uint32 ctx, vocabulary size and chunk
// count, the chunks' tokens (int32), then per scored token the float32
// log-probabilities of the vocabulary.

import fs from "node:fs";

function fail(msg, code) {
	fs.writeSync(2, "error: " + msg + "\n");
	process.exit(code);
}

function parseArgs(argv) {
	const o = {model: null, ctx: 512, chunks: -1, threads: 0, ngl: 0, corpus: null, writeBase: null, base: null};
	const num = (a, v) => {
		if (!/^[0-9]+$/.test(String(v))) fail(`invalid parameter for argument: ${a}`, 2);
		return Number(v);
	};
	for (let i = 0; i < argv.length; i++) {
		const a = argv[i], v = argv[++i];
		switch (a) {
		case "--model": o.model = v; break;
		case "--ctx": o.ctx = num(a, v); break;
		case "--chunks": o.chunks = num(a, v); break;
		case "--threads": o.threads = num(a, v); break;
		case "--gpu-layers": o.ngl = num(a, v); break;
		case "--corpus": o.corpus = v; break;
		case "--write-base": o.writeBase = v; break;
		case "--base": o.base = v; break;
		default: fail(`unknown argument: ${a}`, 2);
		}
	}
	if (!o.model || !(o.ctx >= 16) || (o.writeBase === null) === (o.base === null) || (o.writeBase !== null && !o.corpus))
		fail("usage: rigor-quality.mjs --model M --ctx C --chunks K (--corpus F --write-base OUT | --base IN)", 2);
	return o;
}

// logSoftmax turns the logits map of one position into log-probabilities
// over the vocabulary (float64 sums, as llama-perplexity's).
function logSoftmax(logits, nVocab) {
	const out = new Float32Array(nVocab).fill(-Infinity);
	let max = -Infinity;
	for (const [t, l] of logits) if (l > max) max = l;
	let sum = 0;
	for (const [, l] of logits) sum += Math.exp(l - max);
	const lse = max + Math.log(sum);
	for (const [t, l] of logits) out[t] = l - lse;
	return out;
}

function argmax(a) {
	let best = 0;
	for (let i = 1; i < a.length; i++) if (a[i] > a[best]) best = i;
	return best;
}

async function main() {
	const o = parseArgs(process.argv.slice(2));
	const nlc = await import("node-llama-cpp");
	const llama = await nlc.getLlama({gpu: o.ngl > 0 ? "auto" : false, build: "never", logLevel: nlc.LlamaLogLevel.error, maxThreads: 0, progressLogs: false});
	const model = await llama.loadModel({modelPath: o.model, gpuLayers: o.ngl});
	const nVocab = model.fileInfo?.architectureMetadata?.vocab_size ?? model.fileInfo?.metadata?.tokenizer?.ggml?.tokens?.length ?? 0;
	if (!(nVocab > 0)) fail(`failed to load model '${o.model}': cannot tell its vocabulary size`, 1);
	const ctx = await model.createContext({contextSize: o.ctx, batchSize: o.ctx, threads: o.threads, sequences: 1, flashAttention: false, ignoreMemorySafetyChecks: true});
	const seq = ctx.getSequence();
	// llama-perplexity puts BOS first in each chunk only when the model
	// adds one (llama_vocab_get_add_bos), as node-llama-cpp says it does.
	const bos = model.tokens.shouldPrependBosToken ? model.tokens.bos : null;
	const first = Math.floor(o.ctx / 2), per = o.ctx - 1 - first;

	// evalChunk returns the log-probabilities at positions first..ctx-2.
	const evalChunk = async (toks) => {
		await seq.clearHistory();
		const input = Array.from(toks, (t, j) => j >= first && j < o.ctx - 1 ? [t, {generateNext: {logits: true}}] : t);
		if (bos != null) input[0] = bos;
		const res = await seq.controlledEvaluate(input);
		const out = [];
		for (let j = first; j < o.ctx - 1; j++) {
			const l = res[j]?.next?.logits;
			if (!l) fail(`no logits at position ${j}`, 1);
			out.push(logSoftmax(l, nVocab));
		}
		return out;
	};

	if (o.writeBase) {
		// model.tokenize adds no special tokens (node-llama-cpp tokenizes
		// with add_special false); llama-perplexity's common_tokenize(…,
		// true) puts BOS first, which shifts every chunk by one token.
		const tokens = model.tokenize(fs.readFileSync(o.corpus, "utf8"));
		if (bos != null) tokens.unshift(bos);
		if (model.tokens.shouldAppendEosToken && model.tokens.eos != null) tokens.push(model.tokens.eos);
		if (tokens.length < 2 * o.ctx) fail(`you need at least ${2 * o.ctx} tokens to evaluate perplexity with a context of ${o.ctx}; the corpus tokenizes to only ${tokens.length} tokens`, 1);
		let nChunk = Math.floor(tokens.length / o.ctx);
		if (o.chunks >= 0) nChunk = Math.min(nChunk, o.chunks);
		const fd = fs.openSync(o.writeBase, "w");
		const head = Buffer.alloc(20);
		head.write("rigorlp1", 0, "latin1");
		head.writeUInt32LE(o.ctx, 8); head.writeUInt32LE(nVocab, 12); head.writeUInt32LE(nChunk, 16);
		fs.writeSync(fd, head);
		fs.writeSync(fd, Buffer.from(Int32Array.from(tokens.slice(0, nChunk * o.ctx)).buffer));
		let nll = 0, nll2 = 0, count = 0;
		for (let i = 0; i < nChunk; i++) {
			const toks = tokens.slice(i * o.ctx, (i + 1) * o.ctx);
			const lps = await evalChunk(toks);
			for (let j = 0; j < per; j++) {
				const x = -lps[j][toks[first + j + 1]];
				nll += x; nll2 += x * x; count++;
				fs.writeSync(fd, Buffer.from(lps[j].buffer));
			}
			fs.writeSync(1, `[${i + 1}]${Math.exp(nll / count).toFixed(4)},`);
		}
		fs.writeSync(1, "\n");
		fs.closeSync(fd);
		nll /= count; nll2 /= count;
		const ppl = Math.exp(nll);
		const v = nll2 - nll * nll;
		if (v > 0) fs.writeSync(2, `Final estimate: PPL = ${ppl.toFixed(4)} +/- ${(Math.sqrt(v / (count - 1)) * ppl).toFixed(5)}\n`);
		else fs.writeSync(2, "Unexpected negative standard deviation of log(prob)\n");
		await model.dispose();
		process.exit(0);
	}

	const buf = fs.readFileSync(o.base);
	if (buf.toString("latin1", 0, 8) !== "rigorlp1") fail(`${o.base} does not look like a file containing log-probabilities`, 1);
	const bctx = buf.readUInt32LE(8), bVocab = buf.readUInt32LE(12), nChunk = buf.readUInt32LE(16);
	if (bVocab !== nVocab) fail(`inconsistent vocabulary (${bVocab} vs ${nVocab})`, 1);
	if (bctx !== o.ctx) fail(`${o.base} has been computed with ${bctx}, while the current context is ${o.ctx}`, 1);
	const tokens = new Int32Array(buf.buffer.slice(buf.byteOffset + 20, buf.byteOffset + 20 + 4 * nChunk * o.ctx));
	let off = 20 + 4 * nChunk * o.ctx;
	const s = {nll: 0, nll2: 0, b: 0, b2: 0, nb: 0, k: 0, k2: 0, p: 0, p2: 0, p4: 0, same: 0, count: 0};
	const klds = [], pdiffs = [];
	const meanUnc = (sum, sum2, n) => {
		const f = sum / n;
		let d = sum2 / n - f * f;
		d = d > 0 && n > 10 ? Math.sqrt(d / (n - 1)) : 0;
		return [f, d];
	};
	const cov = () => s.count < 10 ? 0 : (s.nb / s.count - (s.nll / s.count) * (s.b / s.count)) / (s.count - 1);
	const f = (x, w, p) => x.toFixed(p).padStart(w);
	fs.writeSync(1, "0.00 minutes\n");
	for (let i = 0; i < nChunk; i++) {
		const toks = tokens.slice(i * o.ctx, (i + 1) * o.ctx);
		const lps = await evalChunk(toks);
		for (let j = 0; j < per; j++) {
			const base = new Float32Array(buf.buffer.slice(buf.byteOffset + off, buf.byteOffset + off + 4 * nVocab));
			off += 4 * nVocab;
			const lp = lps[j], tok = toks[first + j + 1];
			const nll = -lp[tok], nllB = -base[tok];
			s.nll += nll; s.nll2 += nll * nll; s.b += nllB; s.b2 += nllB * nllB; s.nb += nll * nllB;
			let k = 0;
			for (let v = 0; v < nVocab; v++) {
				if (base[v] > -16) k += Math.exp(base[v]) * (base[v] - lp[v]);
			}
			s.k += k; s.k2 += k * k; s.count++;
			if (argmax(lp) === argmax(base)) s.same++;
			const dp = Math.exp(-nll) - Math.exp(-nllB);
			s.p += dp; s.p2 += dp * dp; s.p4 += dp * dp * dp * dp;
			klds.push(k); pdiffs.push(dp);
		}
		const [lm, lu] = meanUnc(s.nll, s.nll2, s.count), [bm, bu] = meanUnc(s.b, s.b2, s.count);
		const [km, ku] = meanUnc(s.k, s.k2, s.count), [pm, pu] = meanUnc(s.p2, s.p4, s.count);
		const top = s.same / s.count;
		fs.writeSync(1, "\nchunk             PPL               ln(PPL(Q)/PPL(base))          KL Divergence              Δp RMS            Same top p\n");
		fs.writeSync(1, `${String(i + 1).padStart(4)}    ${f(Math.exp(lm), 9, 4)} ± ${f(Math.exp(lm) * lu, 9, 4)}    ${f(lm - bm, 10, 5)} ± ${f(Math.sqrt(Math.max(0, lu * lu + bu * bu - 2 * cov())), 10, 5)}    ${f(km, 10, 5)} ± ${f(ku, 10, 5)}    ${f(100 * Math.sqrt(pm), 6, 3)} ± ${f(pm > 0 ? 100 * 0.5 / Math.sqrt(pm) * pu : NaN, 6, 3)} %    ${f(100 * top, 6, 3)} ± ${f(100 * Math.sqrt(top * (1 - top) / (s.count - 1)), 6, 3)} %\n`);
	}
	fs.writeSync(1, "\n");
	await model.dispose();
	if (s.count < 100) process.exit(0);
	klds.sort((a, b) => a - b); pdiffs.sort((a, b) => a - b);
	const pct = (a, fr) => {
		if (fr <= 0) return a[0];
		if (fr >= 1) return a[a.length - 1];
		let p = fr * (a.length - 1);
		const ip = Math.floor(p); p -= ip;
		return (1 - p) * a[ip] + p * a[Math.min(ip + 1, a.length - 1)];
	};
	const median = (a) => a.length % 2 === 0 ? 0.5 * (a[a.length / 2] + a[a.length / 2 - 1]) : a[(a.length - 1) / 2];
	const [lm, lu] = meanUnc(s.nll, s.nll2, s.count), [bm, bu] = meanUnc(s.b, s.b2, s.count);
	const ppl = Math.exp(lm), pplU = ppl * lu, pplB = Math.exp(bm), pplBU = pplB * bu;
	const c = cov();
	const lr = lm - bm, lrU = Math.sqrt(Math.max(0, lu * lu + bu * bu - 2 * c));
	const out = [];
	out.push("====== Perplexity statistics ======");
	out.push(`Mean PPL(Q)                   : ${f(ppl, 10, 6)} ± ${f(pplU, 10, 6)}`);
	out.push(`Mean PPL(base)                : ${f(pplB, 10, 6)} ± ${f(pplBU, 10, 6)}`);
	out.push(`Cor(ln(PPL(Q)), ln(PPL(base))): ${f(lu * bu > 0 ? 100 * c / (lu * bu) : NaN, 6, 2)}%`);
	out.push(`Mean ln(PPL(Q)/PPL(base))     : ${f(lr, 10, 6)} ± ${f(lrU, 10, 6)}`);
	out.push(`Mean PPL(Q)/PPL(base)         : ${f(Math.exp(lr), 10, 6)} ± ${f(Math.exp(lr) * lrU, 10, 6)}`);
	out.push(`Mean PPL(Q)-PPL(base)         : ${f(ppl - pplB, 10, 6)} ± ${f(Math.sqrt(Math.max(0, pplU * pplU + pplBU * pplBU - 2 * ppl * pplB * c)), 10, 6)}`);
	out.push("");
	out.push("====== KL divergence statistics ======");
	const [km, ku] = meanUnc(s.k, s.k2, s.count);
	out.push(`Mean    KLD: ${f(km, 10, 9)} ± ${f(ku, 10, 9)}`);
	out.push(`Maximum KLD: ${f(klds[klds.length - 1], 10, 9)}`);
	for (const [name, fr] of [["99.9%", 0.999], ["99.0%", 0.99], ["95.0%", 0.95], ["90.0%", 0.9]]) out.push(`${name}   KLD: ${f(pct(klds, fr), 10, 9)}`);
	out.push(`Median  KLD: ${f(median(klds), 10, 9)}`);
	for (const [name, fr] of [["10.0%", 0.1], [" 5.0%", 0.05], [" 1.0%", 0.01], [" 0.1%", 0.001]]) out.push(`${name}   KLD: ${f(pct(klds, fr), 10, 9)}`);
	out.push(`Minimum KLD: ${f(klds[0], 10, 9)}`);
	out.push("");
	out.push("====== Token probability statistics ======");
	const [dm, du] = meanUnc(s.p, s.p2, s.count);
	out.push(`Mean    Δp: ${f(100 * dm, 6, 3)} ± ${f(100 * du, 5, 3)} %`);
	out.push(`Maximum Δp: ${f(100 * pdiffs[pdiffs.length - 1], 6, 3)}%`);
	out.push(`Median  Δp: ${f(100 * median(pdiffs), 6, 3)}%`);
	out.push(`Minimum Δp: ${f(100 * pdiffs[0], 6, 3)}%`);
	const [mm, mu] = meanUnc(s.p2, s.p4, s.count);
	out.push(`RMS Δp    : ${f(100 * Math.sqrt(mm), 6, 3)} ± ${f(mm > 0 ? 100 * 0.5 / Math.sqrt(mm) * mu : NaN, 5, 3)} %`);
	const top = s.same / s.count;
	out.push(`Same top p: ${f(100 * top, 6, 3)} ± ${f(100 * Math.sqrt(top * (1 - top) / (s.count - 1)), 5, 3)} %`);
	fs.writeSync(1, out.join("\n") + "\n");
	process.exit(0);
}

main().catch((e) => fail(String(e && e.stack ? e.stack.split("\n")[0] : e), 1));
