// rigor-serve.mjs: rigor's OpenAI-compatible server over node-llama-cpp,
// the server of serve experiments on the node-llama-cpp family. It loads
// the model once, with one context sequence per slot (--parallel), and
// answers
//
//   GET  /health                503 while loading, then 200
//   GET  /v1/models             the model file's name
//   POST /v1/completions        streamed (server-sent events) or not
//   POST /v1/chat/completions   streamed or not (the user messages as text)
//
// Each request waits for a free slot, evaluates its prompt and generates
// up to max_tokens tokens greedily, one event per token, then a usage
// event and [DONE] when stream_options.include_usage asks for it (and
// always before [DONE] otherwise), as vLLM and llama-server do. With
// ignore_eos it does not stop at an end-of-generation token.
//
// Usage: node rigor-serve.mjs --model M [--host H] [--port P] [--threads T]
//   [--batch-size B] [--context-size C] [--gpu-layers L] [--parallel N]
import fs from "node:fs";
import http from "node:http";
import path from "node:path";

function fail(msg, code) {
	fs.writeSync(2, `error: ${msg}\n`);
	process.exit(code);
}

const o = {host: "127.0.0.1", port: 8080, threads: 0, batch: 512, ctx: 0, ngl: 0, parallel: 1, model: ""};
{
	const argv = process.argv.slice(2);
	const num = (a, v) => {
		const n = Number(v);
		if (!Number.isInteger(n) || n < 0) fail(`invalid parameter for argument: ${a} ${v}`, 2);
		return n;
	};
	for (let i = 0; i < argv.length; i++) {
		const a = argv[i], v = argv[i + 1];
		if (v === undefined) fail(`invalid argument: ${a} (it takes a value)`, 2);
		switch (a) {
		case "--model": case "-m": o.model = v; break;
		case "--host": o.host = v; break;
		case "--port": o.port = num(a, v); break;
		case "--threads": case "-t": o.threads = num(a, v); break;
		case "--batch-size": case "-b": o.batch = num(a, v); break;
		case "--context-size": case "-c": o.ctx = num(a, v); break;
		case "--gpu-layers": case "-ngl": o.ngl = num(a, v); break;
		case "--parallel": case "-np": o.parallel = Math.max(1, num(a, v)); break;
		default: fail(`invalid argument: ${a}`, 2);
		}
		i++;
	}
	if (!o.model) fail("invalid argument: --model is required", 2);
}

let ready = false;
let state = null; // {model, slots, waiters, name}

const json = (res, code, body) => {
	const b = JSON.stringify(body);
	res.writeHead(code, {"Content-Type": "application/json", "Content-Length": Buffer.byteLength(b)});
	res.end(b);
};
const errorBody = (code, message) => ({error: {code, message, type: code === 503 ? "unavailable_error" : "invalid_request_error"}});

async function slot() {
	if (state.slots.length > 0) return state.slots.pop();
	return new Promise((resolve) => state.waiters.push(resolve));
}
function release(seq) {
	const w = state.waiters.shift();
	if (w) w(seq);
	else state.slots.push(seq);
}

async function complete(req, res, body, chat) {
	const {model} = state;
	let text = "";
	if (chat) {
		if (!Array.isArray(body.messages)) return json(res, 400, errorBody(400, "'messages' is required"));
		text = body.messages.map((m) => (typeof m.content === "string" ? m.content : "")).join("\n");
	} else {
		if (typeof body.prompt !== "string") return json(res, 400, errorBody(400, "'prompt' must be a string"));
		text = body.prompt;
	}
	const max = Number.isInteger(body.max_tokens) ? body.max_tokens : Number.isInteger(body.max_completion_tokens) ? body.max_completion_tokens : 16;
	const tokens = model.tokenize(text);
	if (tokens.length === 0) tokens.push(model.tokens.bos ?? 1);
	const stream = body.stream === true;
	const object = chat ? "chat.completion.chunk" : "text_completion";
	const id = `cmpl-${Date.now().toString(36)}`;
	let closed = false;
	// The client went away before the answer ended (a request's own
	// "close" fires as soon as its body is read).
	res.on("close", () => { if (!res.writableEnded) closed = true; });
	const seq = await slot();
	let n = 0, out = "";
	try {
		await seq.clearHistory();
		if (stream) res.writeHead(200, {"Content-Type": "text/event-stream", "Cache-Control": "no-cache"});
		const send = (o) => res.write(`data: ${JSON.stringify(o)}\n\n`);
		// controlledEvaluate, not evaluate: evaluate ends the generation at
		// an end-of-generation token, which ignore_eos must not.
		const gen = (t) => [t, {generateNext: {token: true}}];
		let r = await seq.controlledEvaluate(tokens.map((t, i) => (i === tokens.length - 1 ? gen(t) : t)));
		let next = r[tokens.length - 1]?.next?.token;
		while (n < max && next != null && !closed) {
			const eog = next === model.tokens.eos || (typeof model.isEogToken === "function" && model.isEogToken(next));
			if (eog && body.ignore_eos !== true) break;
			n++;
			// A token that is part of a multi-byte character detokenizes to
			// nothing on its own: it is sent as U+FFFD, so that every token
			// is one event.
			const piece = model.detokenize([next]) || "\uFFFD";
			out += piece;
			if (stream) {
				send(chat ? {id, object, choices: [{index: 0, delta: {content: piece}, finish_reason: null}]}
					: {id, object, choices: [{index: 0, text: piece, finish_reason: null}]});
			}
			if (n >= max) break;
			r = await seq.controlledEvaluate([gen(next)]);
			next = r[0]?.next?.token;
		}
		const usage = {prompt_tokens: tokens.length, completion_tokens: n, total_tokens: tokens.length + n};
		const finish = n >= max ? "length" : "stop";
		if (stream) {
			send(chat ? {id, object, choices: [{index: 0, delta: {}, finish_reason: finish}]} : {id, object, choices: [{index: 0, text: "", finish_reason: finish}]});
			send({id, object, choices: [], usage});
			res.end("data: [DONE]\n\n");
		} else {
			json(res, 200, chat
				? {id, object: "chat.completion", choices: [{index: 0, message: {role: "assistant", content: out}, finish_reason: finish}], usage}
				: {id, object: "text_completion", choices: [{index: 0, text: out, finish_reason: finish}], usage});
		}
	} catch (e) {
		const msg = e && e.message ? e.message.split("\n")[0] : String(e);
		if (res.headersSent) res.end(`data: ${JSON.stringify(errorBody(500, msg))}\n\n`);
		else json(res, 500, errorBody(500, msg));
	} finally {
		release(seq);
	}
}

const server = http.createServer((req, res) => {
	const url = req.url.split("?")[0];
	if (req.method === "GET" && url === "/health") {
		return ready ? json(res, 200, {status: "ok"}) : json(res, 503, errorBody(503, "Loading model"));
	}
	if (!ready) return json(res, 503, errorBody(503, "Loading model"));
	if (req.method === "GET" && url === "/v1/models") {
		return json(res, 200, {object: "list", data: [{id: state.name, object: "model", owned_by: "rigor"}]});
	}
	if (req.method === "POST" && (url === "/v1/completions" || url === "/v1/chat/completions")) {
		let data = "";
		req.setEncoding("utf8");
		req.on("data", (c) => { data += c; });
		req.on("end", () => {
			let body;
			try {
				body = JSON.parse(data);
			} catch {
				return json(res, 400, errorBody(400, "the body is not JSON"));
			}
			complete(req, res, body, url === "/v1/chat/completions").catch((e) => {
				if (!res.headersSent) json(res, 500, errorBody(500, String(e)));
				else res.end();
			});
		});
		return;
	}
	json(res, 404, errorBody(404, "File Not Found"));
});

server.on("error", (e) => fail(`couldn't bind HTTP server socket, hostname: ${o.host}, port: ${o.port}: ${e.message}`, 1));
server.listen(o.port, o.host, async () => {
	fs.writeSync(2, `server is listening on http://${o.host}:${o.port}, loading the model\n`);
	if (!fs.existsSync(o.model)) fail(`failed to load model '${o.model}': no such file`, 1);
	let nlc;
	try {
		nlc = await import("node-llama-cpp");
	} catch (e) {
		fail(`cannot load node-llama-cpp: ${e && e.message ? e.message.split("\n")[0] : e}`, 1);
	}
	let loadError = "";
	const logger = (level, message) => {
		const m = /error loading model: (.*)/.exec(message);
		if (m) loadError = m[1].trim();
		if (level === "error" || level === "fatal" || level === "warn") fs.writeSync(2, `llama.cpp (${level}): ` + message + (message.endsWith("\n") ? "" : "\n"));
	};
	try {
		const llama = await nlc.getLlama({gpu: o.ngl > 0 ? "auto" : false, build: "never", logLevel: nlc.LlamaLogLevel.info, logger, maxThreads: 0, progressLogs: false});
		let model;
		try {
			model = await llama.loadModel({modelPath: o.model, gpuLayers: o.ngl});
		} catch (e) {
			const why = e && e.message ? e.message.split("\n")[0] : String(e);
			fail(`failed to load model '${o.model}': ${loadError && !why.includes(loadError) ? loadError : why}`, 1);
		}
		const contextSize = o.ctx > 0 ? o.ctx : Math.min(4096, model.trainContextSize ?? 4096) * o.parallel;
		const ctx = await model.createContext({contextSize, batchSize: o.batch, threads: o.threads || undefined, sequences: o.parallel,
			flashAttention: false, ignoreMemorySafetyChecks: true});
		const slots = [];
		for (let i = 0; i < o.parallel; i++) slots.push(ctx.getSequence());
		state = {model, slots, waiters: [], name: path.basename(o.model)};
		ready = true;
		fs.writeSync(2, `model loaded: ${o.parallel} slot(s), context ${contextSize}\n`);
	} catch (e) {
		fail(`failed to start: ${e && e.message ? e.message.split("\n")[0] : e}`, 1);
	}
});
for (const s of ["SIGTERM", "SIGINT"]) process.on(s, () => process.exit(0));
