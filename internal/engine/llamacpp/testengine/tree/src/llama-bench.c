/* llama-bench of the rigor test engine: parses llama-bench's flags, checks
 * the model file and the -rpc endpoints, does a little real CPU work per
 * token and prints rows in the JSON shape of llama.cpp (or, built with
 * TESTENGINE_IK, ik_llama.cpp). Behaviour switches for failure tests come
 * from RIGOR_TESTENGINE_* environment variables. */
#define _POSIX_C_SOURCE 200809L
#include <arpa/inet.h>
#include <math.h>
#include <netdb.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "build-info.h"
#include "speed.h"

#define MAXV 32

typedef struct { int n; char *v[MAXV]; } list;

static void add(list *l, const char *csv) {
	char *s = strdup(csv), *save = NULL;
	for (char *t = strtok_r(s, ",", &save); t && l->n < MAXV; t = strtok_r(NULL, ",", &save))
		l->v[l->n++] = t;
}

static const char *prog;

static void usage(FILE *f) {
	fprintf(f, "usage: %s [options]\n\noptions:\n", prog);
	fprintf(f, "  -h, --help\n");
	fprintf(f, "  -m, --model <filename>              (default: models/7B/ggml-model-q4_0.gguf)\n");
	fprintf(f, "  -p, --n-prompt <n>                  (default: 512)\n");
	fprintf(f, "  -n, --n-gen <n>                     (default: 128)\n");
	fprintf(f, "  -pg <pp,tg>                         (default: )\n");
#ifdef TESTENGINE_IK
	fprintf(f, "  -gp <pp,tg>                         (default: )\n");
#endif
	fprintf(f, "  -b, --batch-size <n>                (default: 2048)\n");
	fprintf(f, "  -ub, --ubatch-size <n>              (default: 512)\n");
	fprintf(f, "  -ctk, --cache-type-k <t>            (default: f16)\n");
	fprintf(f, "  -ctv, --cache-type-v <t>            (default: f16)\n");
	fprintf(f, "  -t, --threads <n>                   (default: 2)\n");
	fprintf(f, "  -ngl, --n-gpu-layers <n>            (default: 99)\n");
	fprintf(f, "  -rpc, --rpc <rpc_servers>           (default: )\n");
	fprintf(f, "  -fa, --flash-attn <0|1>             (default: 0)\n");
	fprintf(f, "  -nkvo, --no-kv-offload <0|1>        (default: 0)\n");
	fprintf(f, "  -r, --repetitions <n>               (default: 5)\n");
	fprintf(f, "  -o, --output <csv|json|jsonl|md|sql> (default: md)\n");
	fprintf(f, "  -v, --verbose                       (default: 0)\n");
}

static int invalid(const char *arg) {
	usage(stdout);
	fprintf(stderr, "error: invalid parameter for argument: %s\n", arg);
	return 1;
}

static int is_type(const char *t) {
	static const char *types[] = {"f32", "f16", "bf16", "q8_0", "q4_0", "q4_1", "iq4_nl", "q5_0", "q5_1", NULL};
	for (int i = 0; types[i]; i++)
		if (strcmp(t, types[i]) == 0) return 1;
	return 0;
}

/* work does real arithmetic proportional to the tokens and the ubatch, so
 * that timings are measured, plausible and vary from run to run.
 * RIGOR_TESTENGINE_SLOWER_PCT=P makes every token P% more work: a real
 * slowdown of P% for power tests (RIGOR_TESTENGINE_SLEEP sleeps before the
 * first row, outside every timing). */
static volatile double sink;
#ifdef TESTENGINE_TG_NS
#ifndef TESTENGINE_NOISE_PPM
#define TESTENGINE_NOISE_PPM 0
#endif
/* The speed knob (speed.h): simulated timings, no work. */
static unsigned long long rng_state;
static double uniform01(void) {
	if (!rng_state) {
		struct timespec t;
		clock_gettime(CLOCK_REALTIME, &t);
		rng_state = ((unsigned long long)t.tv_nsec << 20) ^ (unsigned long long)t.tv_sec ^ ((unsigned long long)getpid() << 40) ^ 0x9e3779b97f4a7c15ULL;
	}
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (double)(rng_state >> 11) / 9007199254740992.0;
}
static long long work(int pp, int tg, int ub) {
	(void)ub;
	/* uniform on [-√3, √3]: a standard deviation of 1 */
	double noise = 1.0 + (TESTENGINE_NOISE_PPM / 1e6) * 1.7320508075688772 * (2 * uniform01() - 1);
	double ns = ((double)pp * TESTENGINE_TG_NS / 10 + (double)tg * TESTENGINE_TG_NS) * noise;
	return ns > 1 ? (long long)ns : 1;
}
#else
static long long work(int pp, int tg, int ub) {
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	double x = 1.0;
	/* prompt tokens are batched (cheaper per token, more so with a larger
	 * ubatch), generated tokens are not */
	long iters = (long)pp * (10000 + 160000 / (ub > 0 ? ub : 1)) + (long)tg * 200000;
	const char *slower = getenv("RIGOR_TESTENGINE_SLOWER_PCT");
	if (slower && atof(slower) > 0) iters += (long)(iters * atof(slower) / 100);
	for (long i = 0; i < iters; i++) x = x * 1.0000001 + 1e-9;
	sink = x;
	clock_gettime(CLOCK_MONOTONIC, &b);
	long long ns = (b.tv_sec - a.tv_sec) * 1000000000LL + (b.tv_nsec - a.tv_nsec);
	return ns > 0 ? ns : 1;
}
#endif

static int connect_endpoint(const char *ep) {
	char host[256], *colon;
	snprintf(host, sizeof host, "%s", ep);
	colon = strrchr(host, ':');
	if (!colon) return -1;
	*colon = 0;
	const char *port = colon + 1;
	for (const char *p = port; *p; p++)
		if (*p < '0' || *p > '9') return -1;
	struct addrinfo hints = {0}, *res;
	hints.ai_socktype = SOCK_STREAM;
	if (getaddrinfo(host, port, &hints, &res) != 0) return -1;
	int fd = socket(res->ai_family, res->ai_socktype, res->ai_protocol);
	int rc = fd < 0 ? -1 : connect(fd, res->ai_addr, res->ai_addrlen);
	freeaddrinfo(res);
	const char *ab = getenv("RIGOR_TESTENGINE_RPC_ABORT");
	if (rc == 0 && ab && *ab == '1') {
		/* The worker dies; llama-bench, waiting on it, aborts after it and
		   its backtrace helper fails, as b4747 does. */
		char buf[64] = "hello";
		if (write(fd, buf, 5) != 5) {
		}
		while (read(fd, buf, sizeof buf) > 0) {
		}
		fprintf(stderr, "30\t../sysdeps/unix/sysv/linux/wait4.c: No such file or directory\n");
		abort();
	}
	if (fd >= 0) close(fd);
	return rc;
}

/* libllama, loaded from beside the program (bin/libllama.so). */
extern int testengine_llama_init(void);

int main(int argc, char **argv) {
	prog = argv[0];
	if (testengine_llama_init() != 0) {
		fprintf(stderr, "llama_init: failed to initialise libllama\n");
		return 1;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	list models = {0}, np = {0}, ng = {0}, pg = {0}, nb = {0}, ub = {0}, ctk = {0}, ctv = {0}, nt = {0}, ngl = {0}, fa = {0}, nkvo = {0}, rpc = {0};
	const char *out = "md";
	int reps = 5;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) { usage(stdout); return 0; }
		if (!strcmp(a, "-v") || !strcmp(a, "--verbose")) continue;
#ifndef TESTENGINE_IK
		if (!strcmp(a, "--progress")) continue;
#endif
		list *l = NULL;
		int isflag = 1;
		if (!strcmp(a, "-m") || !strcmp(a, "--model")) l = &models;
		else if (!strcmp(a, "-p") || !strcmp(a, "--n-prompt")) l = &np;
		else if (!strcmp(a, "-n") || !strcmp(a, "--n-gen")) l = &ng;
		else if (!strcmp(a, "-pg")) l = &pg;
#ifdef TESTENGINE_IK
		else if (!strcmp(a, "-gp")) l = &pg;
#endif
		else if (!strcmp(a, "-b") || !strcmp(a, "--batch-size")) l = &nb;
		else if (!strcmp(a, "-ub") || !strcmp(a, "--ubatch-size")) l = &ub;
		else if (!strcmp(a, "-ctk") || !strcmp(a, "--cache-type-k")) l = &ctk;
		else if (!strcmp(a, "-ctv") || !strcmp(a, "--cache-type-v")) l = &ctv;
		else if (!strcmp(a, "-t") || !strcmp(a, "--threads")) l = &nt;
		else if (!strcmp(a, "-ngl") || !strcmp(a, "--n-gpu-layers")) l = &ngl;
		else if (!strcmp(a, "-fa") || !strcmp(a, "--flash-attn")) l = &fa;
		else if (!strcmp(a, "-nkvo") || !strcmp(a, "--no-kv-offload")) l = &nkvo;
		else if (!strcmp(a, "-rpc") || !strcmp(a, "--rpc")) l = &rpc;
		else if (!strcmp(a, "-r") || !strcmp(a, "--repetitions") || !strcmp(a, "-o") || !strcmp(a, "--output")) isflag = 2;
		else isflag = 0;
		if (!isflag) return invalid(a);
		if (i + 1 >= argc) return invalid(a);
		const char *v = argv[++i];
		if (isflag == 2) {
			if (a[1] == 'r' || !strcmp(a, "--repetitions")) reps = atoi(v);
			else {
				out = v;
				if (strcmp(out, "json") && strcmp(out, "md")
#ifndef TESTENGINE_IK
				    && strcmp(out, "jsonl")
#endif
				)
					return invalid(a);
			}
			continue;
		}
		if (l == &rpc) { rpc.v[rpc.n++] = strdup(v); continue; }
		add(l, v);
		if (l == &ctk || l == &ctv)
			for (int k = 0; k < l->n; k++)
				if (!is_type(l->v[k])) return invalid(a);
	}
	if (!models.n) add(&models, "models/7B/ggml-model-q4_0.gguf");
	if (!np.n) add(&np, "512");
	if (!ng.n) add(&ng, "128");
	if (!nb.n) add(&nb, "2048");
	if (!ub.n) add(&ub, "512");
	if (!ctk.n) add(&ctk, "f16");
	if (!ctv.n) add(&ctv, "f16");
	if (!nt.n) add(&nt, "2");
#ifdef TESTENGINE_IK
	if (!ngl.n) add(&ngl, "999");
#else
	if (!ngl.n) add(&ngl, "99");
#endif
	if (!fa.n) add(&fa, "0");
	if (!nkvo.n) add(&nkvo, "0");
	if (reps < 1) reps = 1;
	int json = !strcmp(out, "json"), jsonl = !strcmp(out, "jsonl");

	if (json) printf("[\n");
	const char *s = getenv("RIGOR_TESTENGINE_SLEEP");
	if (s && atof(s) > 0) {
		struct timespec d = {(time_t)atof(s), (long)((atof(s) - (long)atof(s)) * 1e9)};
		nanosleep(&d, NULL);
	}
	/* Like llama.cpp's GGML_ASSERT, the binary holds its source path: a
	   build that does not map it away differs with the build directory. */
	if (getenv("RIGOR_TESTENGINE_WHERE")) fprintf(stderr, "%s:%d\n", __FILE__, __LINE__);
	int crash_after = getenv("RIGOR_TESTENGINE_CRASH_AFTER_ROWS") ? atoi(getenv("RIGOR_TESTENGINE_CRASH_AFTER_ROWS")) : -1;
	int rows = 0;
	if (!json && !jsonl) {
		printf("| model | size | params | backend | threads | n_ubatch | test | t/s |\n");
		printf("| --- | ---: | ---: | --- | ---: | ---: | ---: | ---: |\n");
	}
	for (int mi = 0; mi < models.n; mi++) {
		const char *m = models.v[mi];
		FILE *f = fopen(m, "rb");
		if (!f) {
#ifdef TESTENGINE_IK
			fprintf(stderr, "gguf_init_from_file: failed to open '%s': 'No such file or directory'\n", m);
#else
			fprintf(stderr, "gguf_init_from_file: failed to open GGUF file '%s'\n", m);
#endif
			fprintf(stderr, "main: error: failed to load model '%s'\n", m);
			return 1;
		}
		char magic[5] = {0};
		size_t got = fread(magic, 1, 4, f);
		fseek(f, 0, SEEK_END);
		long size = ftell(f);
		fclose(f);
		if (got != 4 || memcmp(magic, "GGUF", 4)) {
			fprintf(stderr, "gguf_init_from_file_impl: invalid magic characters: '%s', expected 'GGUF'\n", magic);
			fprintf(stderr, "main: error: failed to load model '%s'\n", m);
			return 1;
		}
		for (int r = 0; r < rpc.n; r++) {
			char *spec = strdup(rpc.v[r]), *save = NULL;
			for (char *ep = strtok_r(spec, ",", &save); ep; ep = strtok_r(NULL, ",", &save)) {
#ifdef TESTENGINE_IK
				char *bar = strchr(ep, '|');
				if (bar) *bar = 0;
#endif
				if (connect_endpoint(ep) != 0) {
					fprintf(stderr, "Failed to connect to %s\n", ep);
#ifdef TESTENGINE_IK
					signal(SIGSEGV, SIG_DFL);
					raise(SIGSEGV);
#endif
					fprintf(stderr, "main: error: failed to load model '%s'\n", m);
					return 1;
				}
			}
		}
		if (getenv("RIGOR_TESTENGINE_FAIL_CTX") && *getenv("RIGOR_TESTENGINE_FAIL_CTX") == '1') {
			fprintf(stderr, "llama_init_from_model: failed to allocate compute buffers\n");
			fprintf(stderr, "main: error: failed to create context with model '%s'\n", m);
			return 1;
		}
		/* tests: each -p, each -n, each -pg pair, in that order */
		int tp[3 * MAXV], tn[3 * MAXV], ntests = 0;
		for (int k = 0; k < np.n; k++) if (atoi(np.v[k]) > 0) { tp[ntests] = atoi(np.v[k]); tn[ntests++] = 0; }
		for (int k = 0; k < ng.n; k++) if (atoi(ng.v[k]) > 0) { tp[ntests] = 0; tn[ntests++] = atoi(ng.v[k]); }
		for (int k = 0; k + 1 < pg.n; k += 2) { tp[ntests] = atoi(pg.v[k]); tn[ntests++] = atoi(pg.v[k + 1]); }
		for (int i1 = 0; i1 < ngl.n; i1++) for (int i2 = 0; i2 < nb.n; i2++) for (int i3 = 0; i3 < ub.n; i3++)
		for (int i4 = 0; i4 < ctk.n; i4++) for (int i5 = 0; i5 < ctv.n; i5++) for (int i6 = 0; i6 < nkvo.n; i6++)
		for (int i7 = 0; i7 < fa.n; i7++) for (int i8 = 0; i8 < nt.n; i8++) {
			for (int ti = 0; ti < ntests; ti++) {
				int npr = tp[ti], nge = tn[ti];
				int ubv = atoi(ub.v[i3]);
				long long ns[256];
				double ts[256], sum = 0, tsum = 0;
				int n = reps > 256 ? 256 : reps;
				char when[32];
				time_t now = time(NULL);
				strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
				for (int k = 0; k < n; k++) {
					ns[k] = work(npr, nge, ubv);
					ts[k] = (npr + nge) * 1e9 / (double)ns[k];
					sum += ns[k]; tsum += ts[k];
				}
				double avg = sum / n, tavg = tsum / n, sd = 0, tsd = 0;
				for (int k = 0; k < n; k++) { sd += (ns[k] - avg) * (ns[k] - avg); tsd += (ts[k] - tavg) * (ts[k] - tavg); }
				sd = n > 1 ? sqrt(sd / (n - 1)) : 0;
				tsd = n > 1 ? sqrt(tsd / (n - 1)) : 0;
				char test[64];
				if (npr && nge) snprintf(test, sizeof test, "pp%d+tg%d", npr, nge);
				else if (npr) snprintf(test, sizeof test, "pp%d", npr);
				else snprintf(test, sizeof test, "tg%d", nge);
				int fav = !strcmp(fa.v[i7], "1") || !strcmp(fa.v[i7], "on");
				int nkv = !strcmp(nkvo.v[i6], "1");
				if (!json && !jsonl) {
					printf("| llama ?B F16 | %ld B | %ld | %s | %s | %d | %s | %.2f ± %.2f |\n", size, size / 2,
					       rpc.n ? "RPC" : "CPU", nt.v[i8], ubv, test, tavg, tsd);
					continue;
				}
				const char *ind = json ? "    " : "", *nl = json ? "\n" : " ";
				if (json && rows > 0) printf(",\n");
				printf("%s{%s", json ? "  " : "", nl);
				printf("%s\"build_commit\": \"%s\",%s%s\"build_number\": %d,%s", ind, LLAMA_COMMIT, nl, ind, LLAMA_BUILD_NUMBER, nl);
#ifdef TESTENGINE_IK
				printf("%s\"cuda\": false,%s%s\"vulkan\": false,%s%s\"metal\": false,%s%s\"sycl\": false,%s", ind, nl, ind, nl, ind, nl, ind, nl);
				printf("%s\"rpc\": \"%d\",%s%s\"gpu_blas\": false,%s%s\"blas\": false,%s", ind, rpc.n ? 1 : 0, nl, ind, nl, ind, nl);
				printf("%s\"cpu_info\": \"Test CPU\",%s%s\"gpu_info\": \"\",%s", ind, nl, ind, nl);
#else
				printf("%s\"cpu_info\": \"Test CPU\",%s%s\"gpu_info\": \"\",%s", ind, nl, ind, nl);
				printf("%s\"backends\": \"%s\",%s", ind, rpc.n ? "RPC" : "CPU", nl);
#endif
				printf("%s\"model_filename\": \"%s\",%s%s\"model_type\": \"llama ?B F16\",%s", ind, m, nl, ind, nl);
				printf("%s\"model_size\": %ld,%s%s\"model_n_params\": %ld,%s", ind, size, nl, ind, size / 2, nl);
				printf("%s\"n_batch\": %d,%s%s\"n_ubatch\": %d,%s%s\"n_threads\": %d,%s", ind, atoi(nb.v[i2]), nl, ind, ubv, nl, ind, atoi(nt.v[i8]), nl);
#ifndef TESTENGINE_IK
				printf("%s\"cpu_mask\": \"0x0\",%s%s\"cpu_strict\": false,%s%s\"poll\": 50,%s", ind, nl, ind, nl, ind, nl);
#endif
				printf("%s\"type_k\": \"%s\",%s%s\"type_v\": \"%s\",%s", ind, ctk.v[i4], nl, ind, ctv.v[i5], nl);
				printf("%s\"n_gpu_layers\": %d,%s%s\"split_mode\": \"layer\",%s%s\"main_gpu\": 0,%s", ind, atoi(ngl.v[i1]), nl, ind, nl, ind, nl);
				printf("%s\"no_kv_offload\": %s,%s%s\"flash_attn\": %s,%s", ind, nkv ? "true" : "false", nl, ind, fav ? "true" : "false", nl);
#ifdef TESTENGINE_IK
				printf("%s\"mla_attn\": 0,%s%s\"attn_max_batch\": 0,%s%s\"ser\": \"-1,0\",%s%s\"reuse\": false,%s", ind, nl, ind, nl, ind, nl, ind, nl);
#endif
				printf("%s\"tensor_split\": \"0.00\",%s%s\"use_mmap\": true,%s%s\"embeddings\": false,%s", ind, nl, ind, nl, ind, nl);
#ifdef TESTENGINE_IK
				printf("%s\"repack\": false,%s%s\"fused_moe\": false,%s%s\"override_tensor\": \"\",%s", ind, nl, ind, nl, ind, nl);
#endif
				printf("%s\"n_prompt\": %d,%s%s\"n_gen\": %d,%s%s\"test_time\": \"%s\",%s", ind, npr, nl, ind, nge, nl, ind, when, nl);
				printf("%s\"avg_ns\": %.0f,%s%s\"stddev_ns\": %.0f,%s", ind, avg, nl, ind, sd, nl);
				printf("%s\"avg_ts\": %.6f,%s%s\"stddev_ts\": %.6f,%s", ind, tavg, nl, ind, tsd, nl);
#ifdef TESTENGINE_IK
				printf("%s\"test\": \"%s\",%s", ind, test, nl);
#endif
				printf("%s\"samples_ns\": [ ", ind);
				for (int k = 0; k < n; k++) printf("%s%lld", k ? ", " : "", ns[k]);
				printf(" ],%s%s\"samples_ts\": [ ", nl, ind);
				for (int k = 0; k < n; k++) printf("%s%.1f", k ? ", " : "", ts[k]);
				printf(" ]%s%s}", nl, json ? "  " : "");
				if (jsonl) printf("\n");
				fflush(stdout);
				rows++;
				const char *term = getenv("RIGOR_TESTENGINE_TERM_AFTER_ROWS");
				if (term && rows >= atoi(term)) {
					/* As if a user or a scheduler killed it. */
					kill(getpid(), SIGTERM);
					pause();
				}
				if (crash_after >= 0 && rows >= crash_after) {
					fprintf(stderr, "double free or corruption (!prev)\n");
					abort();
				}
			}
		}
	}
	if (json) printf("%s]\n", rows ? "\n" : "");
	return 0;
}
