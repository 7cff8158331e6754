/* llama-server of the rigor test engine: an OpenAI-compatible HTTP server
 * that streams tokens on a known schedule, so that a load generator's
 * TTFT and inter-token latency can be checked against it.
 *
 * It parses llama-server's flags (rejecting unknown ones as the real one
 * does), checks the model file, listens on --host/--port, and serves each
 * connection on its own thread:
 *   GET  /health                 200 {"status":"ok"} (503 while "loading")
 *   GET  /v1/models              the model's file name as its id
 *   GET  /props                  build_info with the build commit
 *   POST /v1/completions         streamed (SSE) or not
 *   POST /v1/chat/completions    streamed (SSE) or not
 * A streamed answer sends max_tokens chunks: the first TTFT ms after the
 * request was read (a chat's role-only delta just before it), token k at
 * TTFT + k*ITL ms (absolute times, so gaps do not drift), then a usage
 * chunk with empty choices and [DONE].
 *
 * Environment:
 *   RIGOR_TESTENGINE_SERVER_TTFT_MS  (default 20)
 *   RIGOR_TESTENGINE_SERVER_ITL_MS   (default 5)
 *   RIGOR_TESTENGINE_SERVER_LOAD_MS  /health answers 503 this long (default 0)
 *   RIGOR_TESTENGINE_SERVER_FAULT    429, 500, malformed, nodone, hang, die
 *   RIGOR_TESTENGINE_SERVER_FAULT_EVERY  the fault hits requests N, 2N, …
 *                                    (default 1: every request)
 * "die" makes the server exit mid-stream, after two tokens of the Nth
 * request. */
#define _GNU_SOURCE
#include <errno.h>
#include <netdb.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "build-info.h"

static long ttft_ms = 20, itl_ms = 5, load_ms = 0, fault_every = 1;
static const char *fault = "";
static const char *model_id = "model";
static struct timespec started;
static long counter = 0;

static long envl(const char *k, long def) {
	const char *v = getenv(k);
	return v && *v ? atol(v) : def;
}

static void usage(const char *prog) {
	printf("usage: %s [options]\n\n", prog);
	printf("  -m,    --model FNAME       model path\n");
	printf("         --host HOST         ip address to listen (default: 127.0.0.1)\n");
	printf("         --port PORT         port to listen (default: 8080)\n");
	printf("  -c,    --ctx-size N        size of the prompt context\n");
	printf("  -np,   --parallel N        number of slots\n");
}

static int write_all(int fd, const char *buf, size_t n) {
	while (n > 0) {
		ssize_t w = send(fd, buf, n, MSG_NOSIGNAL);
		if (w <= 0) {
			if (w < 0 && errno == EINTR) continue;
			return -1;
		}
		buf += w;
		n -= (size_t)w;
	}
	return 0;
}

static int sendf(int fd, const char *fmt, ...) {
	char buf[4096];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	return write_all(fd, buf, (size_t)n);
}

static void respond(int fd, int code, const char *reason, const char *body) {
	sendf(fd, "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n%s",
	      code, reason, strlen(body), body);
}

static long json_int(const char *body, const char *key, long def) {
	char pat[64];
	snprintf(pat, sizeof pat, "\"%s\"", key);
	const char *p = strstr(body, pat);
	if (!p) return def;
	p = strchr(p + strlen(pat), ':');
	if (!p) return def;
	return atol(p + 1);
}

static int json_true(const char *body, const char *key) {
	char pat[64];
	snprintf(pat, sizeof pat, "\"%s\"", key);
	const char *p = strstr(body, pat);
	if (!p) return 0;
	p = strchr(p + strlen(pat), ':');
	if (!p) return 0;
	p++;
	while (*p == ' ') p++;
	return strncmp(p, "true", 4) == 0;
}

static void at(const struct timespec *t0, long ms) {
	struct timespec t = *t0;
	t.tv_sec += ms / 1000;
	t.tv_nsec += (ms % 1000) * 1000000L;
	if (t.tv_nsec >= 1000000000L) {
		t.tv_sec++;
		t.tv_nsec -= 1000000000L;
	}
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL) == EINTR) {
	}
}

static void complete(int fd, const char *body, int chat) {
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	long n = __sync_add_and_fetch(&counter, 1);
	int hit = *fault && fault_every > 0 && n % fault_every == 0;
	if (hit && !strcmp(fault, "429")) {
		respond(fd, 429, "Too Many Requests", "{\"error\":{\"code\":429,\"message\":\"server busy\",\"type\":\"unavailable_error\"}}");
		return;
	}
	if (hit && !strcmp(fault, "500")) {
		respond(fd, 500, "Internal Server Error", "{\"error\":{\"code\":500,\"message\":\"failed to decode the batch\",\"type\":\"server_error\"}}");
		return;
	}
	long max = json_int(body, "max_tokens", 16);
	long prompt = 1;
	const char *p = strstr(body, chat ? "\"content\"" : "\"prompt\"");
	if (p) {
		/* count the words of the prompt string */
		p = strchr(p, ':');
		if (p) p = strchr(p, '"');
		if (p) {
			prompt = 0;
			int inword = 0;
			for (p++; *p && *p != '"'; p++) {
				if (*p == ' ') inword = 0;
				else if (!inword) { inword = 1; prompt++; }
			}
		}
	}
	const char *obj = chat ? "chat.completion.chunk" : "text_completion";
	if (!json_true(body, "stream")) {
		at(&t0, ttft_ms + (max - 1) * itl_ms);
		char b[512];
		if (chat)
			snprintf(b, sizeof b, "{\"object\":\"chat.completion\",\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":\"tok\"},\"finish_reason\":\"length\"}],\"usage\":{\"prompt_tokens\":%ld,\"completion_tokens\":%ld}}", prompt, max);
		else
			snprintf(b, sizeof b, "{\"object\":\"text_completion\",\"choices\":[{\"index\":0,\"text\":\"tok\",\"finish_reason\":\"length\"}],\"usage\":{\"prompt_tokens\":%ld,\"completion_tokens\":%ld}}", prompt, max);
		respond(fd, 200, "OK", b);
		return;
	}
	if (sendf(fd, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nConnection: close\r\n\r\n")) return;
	for (long k = 0; k < max; k++) {
		at(&t0, ttft_ms + k * itl_ms);
		/* a chat's role-only delta comes with the first token, as
		 * llama.cpp's server sends it */
		if (chat && k == 0 && sendf(fd, "data: {\"object\":\"%s\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":null}}]}\n\n", obj)) return;
		if (hit && k == 2) {
			if (!strcmp(fault, "malformed")) {
				sendf(fd, "data: {\"choices\":[{\"text\": tok\n\n");
				continue;
			}
			if (!strcmp(fault, "hang")) {
				for (;;) pause();
			}
			if (!strcmp(fault, "die")) {
				fprintf(stderr, "GGML_ASSERT(slot.n_past < n_ctx) failed\n");
				_exit(134);
			}
		}
		int r;
		if (chat)
			r = sendf(fd, "data: {\"object\":\"%s\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\" tok%ld\"}}]}\n\n", obj, k);
		else
			r = sendf(fd, "data: {\"object\":\"%s\",\"choices\":[{\"index\":0,\"text\":\" tok%ld\",\"finish_reason\":null}]}\n\n", obj, k);
		if (r) return;
	}
	if (hit && !strcmp(fault, "nodone")) return;
	sendf(fd, "data: {\"object\":\"%s\",\"choices\":[],\"usage\":{\"prompt_tokens\":%ld,\"completion_tokens\":%ld,\"total_tokens\":%ld}}\n\n",
	      obj, prompt, max, prompt + max);
	sendf(fd, "data: [DONE]\n\n");
}

static void *serve(void *arg) {
	int fd = (int)(long)arg;
	size_t cap = 1 << 16, len = 0;
	char *buf = malloc(cap + 1);
	char *hdr_end = NULL;
	while (!hdr_end) {
		if (len == cap) goto out;
		ssize_t r = recv(fd, buf + len, cap - len, 0);
		if (r <= 0) goto out;
		len += (size_t)r;
		buf[len] = 0;
		hdr_end = strstr(buf, "\r\n\r\n");
	}
	size_t hlen = (size_t)(hdr_end - buf) + 4;
	long clen = 0;
	char *cl = strcasestr(buf, "\r\nContent-Length:");
	if (cl && cl < hdr_end) clen = atol(cl + 17);
	if (hlen + (size_t)clen > cap) {
		cap = hlen + (size_t)clen;
		buf = realloc(buf, cap + 1);
	}
	while (len < hlen + (size_t)clen) {
		ssize_t r = recv(fd, buf + len, cap - len, 0);
		if (r <= 0) goto out;
		len += (size_t)r;
	}
	buf[len] = 0;
	char method[8] = {0}, path[256] = {0};
	sscanf(buf, "%7s %255s", method, path);
	const char *body = buf + hlen;
	if (!strcmp(method, "GET") && !strcmp(path, "/health")) {
		struct timespec now;
		clock_gettime(CLOCK_MONOTONIC, &now);
		long ms = (now.tv_sec - started.tv_sec) * 1000 + (now.tv_nsec - started.tv_nsec) / 1000000;
		if (ms < load_ms)
			respond(fd, 503, "Service Unavailable", "{\"error\":{\"code\":503,\"message\":\"Loading model\",\"type\":\"unavailable_error\"}}");
		else
			respond(fd, 200, "OK", "{\"status\":\"ok\"}");
	} else if (!strcmp(method, "GET") && !strcmp(path, "/v1/models")) {
		char b[512];
		snprintf(b, sizeof b, "{\"object\":\"list\",\"data\":[{\"id\":\"%s\",\"object\":\"model\",\"owned_by\":\"llamacpp\"}]}", model_id);
		respond(fd, 200, "OK", b);
	} else if (!strcmp(method, "GET") && !strcmp(path, "/props")) {
		char b[512];
		snprintf(b, sizeof b, "{\"build_info\":\"b%d-%s\",\"total_slots\":1}", LLAMA_BUILD_NUMBER, LLAMA_COMMIT);
		respond(fd, 200, "OK", b);
	} else if (!strcmp(method, "POST") && !strcmp(path, "/v1/completions")) {
		complete(fd, body, 0);
	} else if (!strcmp(method, "POST") && !strcmp(path, "/v1/chat/completions")) {
		complete(fd, body, 1);
	} else {
		respond(fd, 404, "Not Found", "{\"error\":{\"code\":404,\"message\":\"File Not Found\",\"type\":\"not_found_error\"}}");
	}
out:
	free(buf);
	close(fd);
	return NULL;
}

int main(int argc, char **argv) {
	setvbuf(stdout, NULL, _IOLBF, 0);
	setvbuf(stderr, NULL, _IOLBF, 0);
	const char *host = "127.0.0.1", *port = "8080", *model = NULL;
	static const char *valued[] = {"-m", "--model", "--host", "--port", "-c", "--ctx-size", "-np", "--parallel", "-t",
	                               "-tb", "-b", "-ub", "-ctk", "-ctv", "-sm", "-ts", "-mg", "-dev", "-ot", "-ncmoe",
	                               "--cache-reuse", "-ngl", "-a", "--alias", "--rpc", "-mla", "-amb", "-ser",
#ifndef TESTENGINE_IK
	                               "-fa",
#endif
	                               NULL};
	static const char *switches[] = {"-nkvo", "--no-cont-batching", "-kvu", "--no-mmap", "--mlock", "-rtr", "-fmoe",
#ifdef TESTENGINE_IK
	                                 "-fa",
#endif
	                                 NULL};
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) { usage(argv[0]); return 0; }
		int sw = 0, val = 0;
		for (int k = 0; switches[k]; k++) sw |= !strcmp(a, switches[k]);
		for (int k = 0; valued[k]; k++) val |= !strcmp(a, valued[k]);
		if (sw) continue;
		if (!val || i + 1 >= argc) {
			fprintf(stderr, "error: invalid argument: %s\n", a);
			return 1;
		}
		const char *v = argv[++i];
		if (!strcmp(a, "-m") || !strcmp(a, "--model")) model = v;
		if (!strcmp(a, "--host")) host = v;
		if (!strcmp(a, "--port")) port = v;
	}
	ttft_ms = envl("RIGOR_TESTENGINE_SERVER_TTFT_MS", 20);
	itl_ms = envl("RIGOR_TESTENGINE_SERVER_ITL_MS", 5);
	load_ms = envl("RIGOR_TESTENGINE_SERVER_LOAD_MS", 0);
	fault_every = envl("RIGOR_TESTENGINE_SERVER_FAULT_EVERY", 1);
	if (getenv("RIGOR_TESTENGINE_SERVER_FAULT")) fault = getenv("RIGOR_TESTENGINE_SERVER_FAULT");
	fprintf(stderr, "build: %d (%s)\n", LLAMA_BUILD_NUMBER, LLAMA_COMMIT);
	struct stat st;
	if (!model || stat(model, &st) != 0) {
		fprintf(stderr, "llama_model_load: error loading model: failed to open %s\n", model ? model : "(none)");
		fprintf(stderr, "srv    load_model: failed to load model, '%s'\n", model ? model : "");
		return 1;
	}
	const char *slash = strrchr(model, '/');
	model_id = slash ? slash + 1 : model;
	struct addrinfo hints = {0}, *res;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE;
	if (getaddrinfo(host, port, &hints, &res) != 0) {
		fprintf(stderr, "couldn't resolve %s:%s\n", host, port);
		return 1;
	}
	int fd = socket(res->ai_family, res->ai_socktype, res->ai_protocol), one = 1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (fd < 0 || bind(fd, res->ai_addr, res->ai_addrlen) != 0 || listen(fd, 256) != 0) {
		fprintf(stderr, "srv    start: couldn't bind HTTP server socket, hostname: %s, port: %s\n", host, port);
		return 1;
	}
	freeaddrinfo(res);
	clock_gettime(CLOCK_MONOTONIC, &started);
	fprintf(stderr, "main: server is listening on http://%s:%s - starting the main loop\n", host, port);
	signal(SIGPIPE, SIG_IGN);
	for (;;) {
		int c = accept(fd, NULL, NULL);
		if (c < 0) {
			if (errno == EINTR) continue;
			return 1;
		}
		pthread_t t;
		pthread_attr_t attr;
		pthread_attr_init(&attr);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		pthread_attr_setstacksize(&attr, 256 * 1024);
		if (pthread_create(&t, &attr, serve, (void *)(long)c) != 0) close(c);
		pthread_attr_destroy(&attr);
	}
}
