/* llama-perplexity of the rigor test engine. It parses the flags rigor
 * passes (-m, -f, -c, --chunks, -b, -t, -ngl, -ctk, -ctv, -fa,
 * --kl-divergence-base, --kl-divergence), tokenizes the corpus bytewise
 * (BOS and 256 byte tokens after 3 special ones: 259 tokens), and computes
 * next-token distributions from a fixed function of the context, perturbed
 * by noise seeded from the model file's bytes and by the K and V cache
 * types. The statistics are computed for real from these logits, as
 * upstream computes them, and printed in upstream's format
 * (tools/perplexity/perplexity.cpp): "[1]x.xxxx,[2]…" on stdout and
 * "Final estimate: PPL = … +/- …" on stderr when writing the base logits
 * (--kl-divergence-base FILE without --kl-divergence), or the per-chunk
 * table and the "====== … statistics ======" blocks on stdout with
 * --kl-divergence. The base file has upstream's layout: "_logits_", n_ctx,
 * n_vocab, n_chunk, the tokens, then per scored token a scale, a minimum
 * log-probability and n_vocab uint16 log-probabilities. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "build-info.h"

#define N_VOCAB 259
#define BOS 1

static int cmpf(const void *a, const void *b);

static uint64_t mix(uint64_t x) {
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

/* unit is a number in [-1, 1) from a hash. */
static float unit(uint64_t h) { return (float)((double)(mix(h) >> 11) / 9007199254740992.0 * 2.0 - 1.0); }

static float kv_noise(const char *t) {
	if (!t || !strcmp(t, "f16") || !strcmp(t, "f32") || !strcmp(t, "bf16")) return 0.0f;
	if (!strcmp(t, "q8_0")) return 0.04f;
	if (!strncmp(t, "q5", 2)) return 0.12f;
	if (!strncmp(t, "q4", 2) || !strcmp(t, "iq4_nl")) return 0.25f;
	return 0.2f;
}

static uint64_t model_seed;
static float model_amp = 0.5f, kv_amp;

/* logits of the token after cur (prev before it) at position pos. */
static void logits_at(int prev, int cur, int pos, float *out) {
	for (int v = 0; v < N_VOCAB; v++) {
		float l = 1.2f * sinf(0.37f * v + 0.11f * cur) + 0.6f * cosf(0.05f * v * (1 + prev % 7));
		if (v == cur || v == ' ' + 3 || v == 'e' + 3) l += 2.0f;
		if (v >= 'a' + 3 && v <= 'z' + 3) l += 1.0f;
		l += model_amp * unit(model_seed ^ ((uint64_t)cur << 20) ^ ((uint64_t)prev << 40) ^ (uint64_t)v);
		if (kv_amp > 0) l += kv_amp * unit(0x6b76ULL ^ ((uint64_t)pos << 24) ^ ((uint64_t)cur << 44) ^ (uint64_t)v);
		out[v] = l;
	}
}

static int usage_error(const char *a) {
	fprintf(stderr, "error: invalid argument: %s\n", a);
	return 1;
}

int main(int argc, char **argv) {
	const char *model = "models/7B/ggml-model-f16.gguf", *file = NULL, *base = NULL, *ctk = "f16", *ctv = "f16";
	int n_ctx = 512, n_chunks = -1, kld_mode = 0;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		int has = i + 1 < argc;
		if (!strcmp(a, "--kl-divergence")) { kld_mode = 1; continue; }
		if (!has) return usage_error(a);
		const char *v = argv[++i];
		if (!strcmp(a, "-m") || !strcmp(a, "--model")) model = v;
		else if (!strcmp(a, "-f") || !strcmp(a, "--file")) file = v;
		else if (!strcmp(a, "-c") || !strcmp(a, "--ctx-size")) n_ctx = atoi(v);
		else if (!strcmp(a, "--chunks")) n_chunks = atoi(v);
		else if (!strcmp(a, "--kl-divergence-base")) base = v;
		else if (!strcmp(a, "-ctk") || !strcmp(a, "--cache-type-k")) ctk = v;
		else if (!strcmp(a, "-ctv") || !strcmp(a, "--cache-type-v")) ctv = v;
		else if (!strcmp(a, "-b") || !strcmp(a, "-ub") || !strcmp(a, "-t") || !strcmp(a, "-ngl") || !strcmp(a, "-fa")) continue;
		else return usage_error(a);
	}
	fprintf(stderr, "build: %d (%s) with %s for %s\n", LLAMA_BUILD_NUMBER, LLAMA_COMMIT, "cc", "testengine");
	if (n_ctx <= 0) {
		fprintf(stderr, "main: perplexity tool requires '--ctx-size' > 0\n");
		return 1;
	}
	FILE *mf = fopen(model, "rb");
	char magic[5] = {0};
	if (!mf || fread(magic, 1, 4, mf) != 4 || memcmp(magic, "GGUF", 4)) {
		fprintf(stderr, "gguf_init_from_file: failed to open GGUF file '%s'\n", model);
		fprintf(stderr, "main: unable to load model\n");
		if (mf) fclose(mf);
		return 1;
	}
	model_seed = 1469598103934665603ULL;
	rewind(mf);
	for (int c; (c = fgetc(mf)) != EOF;) model_seed = (model_seed ^ (uint64_t)c) * 1099511628211ULL;
	fclose(mf);
	kv_amp = kv_noise(ctk) + kv_noise(ctv);
	const int nv = 2 * ((N_VOCAB + 1) / 2) + 4;
	float lg[N_VOCAB];

	if (!kld_mode) {
		if (!file) {
			fprintf(stderr, "perplexity: no input file (-f)\n");
			return 1;
		}
		FILE *in = fopen(file, "rb");
		if (!in) {
			fprintf(stderr, "error: failed to open file '%s'\n", file);
			return 1;
		}
		int cap = 1 << 16, n = 1;
		int *tok = malloc(sizeof(int) * cap);
		tok[0] = BOS;
		for (int c; (c = fgetc(in)) != EOF;) {
			if (n == cap) tok = realloc(tok, sizeof(int) * (cap *= 2));
			tok[n++] = 3 + c;
		}
		fclose(in);
		fprintf(stderr, "perplexity: tokenizing the input ..\n");
		if (n < 2 * n_ctx) {
			fprintf(stderr, "perplexity: you need at least %d tokens to evaluate perplexity with a context of %d\n", 2 * n_ctx, n_ctx);
			fprintf(stderr, "perplexity: the data file you provided tokenizes to only %d tokens\n", n);
			return 1;
		}
		int n_chunk = n / n_ctx;
		if (n_chunks >= 0 && n_chunks < n_chunk) n_chunk = n_chunks;
		FILE *out = NULL;
		if (base) {
			out = fopen(base, "wb");
			if (!out) {
				fprintf(stderr, "perplexity: failed to open %s for writing\n", base);
				return 1;
			}
			fprintf(stderr, "perplexity: saving all logits to %s\n", base);
			uint32_t c32 = (uint32_t)n_ctx;
			int32_t voc = N_VOCAB, nch = n_chunk;
			fwrite("_logits_", 1, 8, out);
			fwrite(&c32, 4, 1, out);
			fwrite(&voc, 4, 1, out);
			fwrite(&nch, 4, 1, out);
			fwrite(tok, sizeof(int), (size_t)n_chunk * n_ctx, out);
		}
		fprintf(stderr, "perplexity: calculating perplexity over %d chunks, n_ctx=%d, batch_size=%d, n_seq=%d\n", n_chunk, n_ctx, n_ctx, 1);
		uint16_t *lp = calloc(nv, sizeof(uint16_t));
		double nll = 0, nll2 = 0;
		int count = 0, first = n_ctx / 2;
		for (int i = 0; i < n_chunk; i++) {
			int start = i * n_ctx;
			for (int j = first; j < n_ctx - 1; j++) {
				logits_at(tok[start + j - 1], tok[start + j], j, lg);
				int next = tok[start + j + 1];
				float mx = lg[0], mn = lg[0];
				for (int v = 1; v < N_VOCAB; v++) { if (lg[v] > mx) mx = lg[v]; if (lg[v] < mn) mn = lg[v]; }
				if (mn < mx - 16) mn = mx - 16;
				double se = 0;
				for (int v = 0; v < N_VOCAB; v++) se += expf(lg[v] - mx);
				float lse = (float)log(se);
				double x = mx + lse - lg[next];
				nll += x;
				nll2 += x * x;
				count++;
				if (out) {
					float d[2] = {(mx - mn) / 65535.f, mn - mx - lse};
					memcpy(lp, d, sizeof d);
					for (int v = 0; v < N_VOCAB; v++)
						lp[4 + v] = d[0] > 0 && lg[v] > mn ? (uint16_t)lroundf((lg[v] - mn) / d[0]) : 0;
					fwrite(lp, sizeof(uint16_t), nv, out);
				}
			}
			printf("[%d]%.4lf,", i + 1, exp(nll / count));
			fflush(stdout);
		}
		printf("\n");
		if (out && fclose(out) != 0) {
			fprintf(stderr, "perplexity: failed to write %s\n", base);
			return 1;
		}
		nll2 /= count;
		nll /= count;
		double ppl = exp(nll);
		nll2 -= nll * nll;
		if (nll2 > 0) {
			nll2 = sqrt(nll2 / (count - 1));
			fprintf(stderr, "Final estimate: PPL = %.4lf +/- %.5lf\n", ppl, nll2 * ppl);
		} else {
			fprintf(stderr, "Unexpected negative standard deviation of log(prob)\n");
		}
		return 0;
	}

	/* --kl-divergence: score against the base file. */
	if (!base) {
		fprintf(stderr, "kl_divergence: you must provide a name of a file containing the log probabilities of the base model\n");
		return 1;
	}
	FILE *in = fopen(base, "rb");
	if (!in) {
		fprintf(stderr, "kl_divergence: failed to open %s\n", base);
		return 1;
	}
	char check[9] = {0};
	if (fread(check, 1, 8, in) != 8 || strncmp(check, "_logits_", 8)) {
		fprintf(stderr, "kl_divergence: %s does not look like a file containing log-probabilities\n", base);
		return 1;
	}
	uint32_t fctx;
	int32_t voc, n_chunk;
	if (fread(&fctx, 4, 1, in) != 1 || fread(&voc, 4, 1, in) != 1 || fread(&n_chunk, 4, 1, in) != 1) {
		fprintf(stderr, "kl_divergence: failed reading n_vocab, n_chunk from %s\n", base);
		return 1;
	}
	if ((int)fctx > n_ctx)
		fprintf(stderr, "kl_divergence: %s has been computed with %u, while the current context is %d. Increase it with -c and retry\n", base, fctx, n_ctx);
	if (voc != N_VOCAB) {
		fprintf(stderr, "kl_divergence: inconsistent vocabulary (%d vs %d)\n", voc, N_VOCAB);
		return 1;
	}
	n_ctx = (int)fctx;
	int *tok = malloc(sizeof(int) * (size_t)n_ctx * n_chunk);
	if (fread(tok, sizeof(int), (size_t)n_ctx * n_chunk, in) != (size_t)n_ctx * n_chunk) {
		fprintf(stderr, "kl_divergence: failed reading evaluation tokens from %s\n", base);
		return 1;
	}
	int first = n_ctx / 2, per = n_ctx - 1 - first;
	uint16_t *lp = malloc(sizeof(uint16_t) * (size_t)nv * per);
	float *kv = malloc(sizeof(float) * (size_t)per * n_chunk), *pd = malloc(sizeof(float) * (size_t)per * n_chunk);
	double s_nll = 0, s_nll2 = 0, s_b = 0, s_b2 = 0, s_nb = 0, s_k = 0, s_k2 = 0, s_p = 0, s_p2 = 0, s_p4 = 0;
	size_t same = 0, count = 0;
	for (int i = 0; i < n_chunk; i++) {
		if (fread(lp, sizeof(uint16_t), (size_t)nv * per, in) != (size_t)nv * per) {
			fprintf(stderr, "kl_divergence: failed reading log-probs for chunk %d\n", i);
			return 1;
		}
		if (i == 0) {
			fprintf(stderr, "kl_divergence: 0.00 seconds per pass - ETA ");
			printf("0.00 minutes\n");
		}
		printf("\n");
		printf("chunk             PPL               ln(PPL(Q)/PPL(base))          KL Divergence              Δp RMS            Same top p\n");
		int start = i * n_ctx;
		for (int j = 0; j < per; j++) {
			int pos = first + j;
			logits_at(tok[start + pos - 1], tok[start + pos], pos, lg);
			int next = tok[start + pos + 1];
			const uint16_t *b = lp + (size_t)j * nv;
			float d[2];
			memcpy(d, b, sizeof d);
			b += 4;
			float mx = lg[0];
			int imax = 0;
			for (int v = 1; v < N_VOCAB; v++) if (lg[v] > mx) { mx = lg[v]; imax = v; }
			double se = 0;
			for (int v = 0; v < N_VOCAB; v++) se += expf(lg[v] - mx);
			float lse = (float)log(se);
			float nll = mx + lse - lg[next];
			float nll_b = -(d[0] * b[next] + d[1]);
			s_nll += nll; s_nll2 += nll * nll;
			s_b += nll_b; s_b2 += nll_b * nll_b;
			s_nb += nll * nll_b;
			double k = 0;
			int imax_b = -1;
			float bmax = 0;
			for (int v = 0; v < N_VOCAB; v++) {
				float lb = d[0] * b[v] + d[1];
				if (v == 0 || lb > bmax) { bmax = lb; imax_b = v; }
				if (lb > -16.f) k += expf(lb) * (lb - lg[v] + mx + lse);
			}
			s_k += k; s_k2 += k * k;
			count++;
			if (imax == imax_b) same++;
			float dp = expf(-nll) - expf(-nll_b);
			s_p += dp; s_p2 += (double)dp * dp; s_p4 += (double)dp * dp * dp * dp;
			kv[count - 1] = (float)k;
			pd[count - 1] = dp;
		}
		double f, df, fb, dfb;
#define MEAN(sum, sum2, m, u) do { m = (sum) / count; u = (sum2) / count - m * m; u = u > 0 && count > 10 ? sqrt(u / (count - 1)) : 0.; } while (0)
		MEAN(s_nll, s_nll2, f, df);
		MEAN(s_b, s_b2, fb, dfb);
		double cov = count < 10 ? 0 : (s_nb / count - (s_nll / count) * (s_b / count)) / (count - 1);
		printf("%4d", i + 1);
		printf("    %9.4lf ± %9.4lf", exp(f), exp(f) * df);
		printf("    %10.5lf ± %10.5lf", f - fb, sqrt(df * df + dfb * dfb - 2.0 * cov));
		double km, ku;
		MEAN(s_k, s_k2, km, ku);
		printf("    %10.5lf ± %10.5lf", km, ku);
		double pm, pu;
		MEAN(s_p2, s_p4, pm, pu);
		printf("    %6.3lf ± %6.3lf %%", 100.0 * sqrt(pm), 100.0 * 0.5 / sqrt(pm) * pu);
		double top = 1. * same / count;
		printf("    %6.3lf ± %6.3lf %%", 100.0 * top, 100.0 * sqrt(top * (1 - top) / (count - 1)));
		printf("\n");
	}
	printf("\n");
	fclose(in);
	if (count < 100) return 0;

	qsort(kv, count, sizeof(float), cmpf);
	qsort(pd, count, sizeof(float), cmpf);
#define PCT(a, fr) ((fr) <= 0 ? a[0] : (fr) >= 1 ? a[count - 1] : \
	(1 - ((fr) * (count - 1) - (size_t)((fr) * (count - 1)))) * a[(size_t)((fr) * (count - 1))] + \
	((fr) * (count - 1) - (size_t)((fr) * (count - 1))) * a[(size_t)((fr) * (count - 1)) + 1 < count ? (size_t)((fr) * (count - 1)) + 1 : count - 1])
#define MEDIAN(a) (count % 2 == 0 ? 0.5f * (a[count / 2] + a[count / 2 - 1]) : a[count / 2])
	double f, df, fb, dfb;
	MEAN(s_nll, s_nll2, f, df);
	MEAN(s_b, s_b2, fb, dfb);
	double ppl = exp(f), pplu = ppl * df, pplb = exp(fb), pplbu = pplb * dfb;
	double cov = (s_nb / count - (s_nll / count) * (s_b / count)) / (count - 1);
	printf("====== Perplexity statistics ======\n");
	printf("Mean PPL(Q)                   : %10.6lf ± %10.6lf\n", ppl, pplu);
	printf("Mean PPL(base)                : %10.6lf ± %10.6lf\n", pplb, pplbu);
	printf("Cor(ln(PPL(Q)), ln(PPL(base))): %6.2lf%%\n", 100.0 * cov / (df * dfb));
	double lr = f - fb, lru = sqrt(df * df + dfb * dfb - 2.0 * cov);
	printf("Mean ln(PPL(Q)/PPL(base))     : %10.6lf ± %10.6lf\n", lr, lru);
	printf("Mean PPL(Q)/PPL(base)         : %10.6lf ± %10.6lf\n", exp(lr), exp(lr) * lru);
	printf("Mean PPL(Q)-PPL(base)         : %10.6lf ± %10.6lf\n", ppl - pplb, sqrt(pplu * pplu + pplbu * pplbu - 2.0 * ppl * pplb * cov));
	printf("\n");
	printf("====== KL divergence statistics ======\n");
	double km, ku;
	MEAN(s_k, s_k2, km, ku);
	printf("Mean    KLD: %10.6lf ± %10.6lf\n", km, ku);
	printf("Maximum KLD: %10.6f\n", kv[count - 1]);
	printf("99.9%%   KLD: %10.6f\n", PCT(kv, 0.999f));
	printf("99.0%%   KLD: %10.6f\n", PCT(kv, 0.990f));
	printf("95.0%%   KLD: %10.6f\n", PCT(kv, 0.950f));
	printf("90.0%%   KLD: %10.6f\n", PCT(kv, 0.900f));
	printf("Median  KLD: %10.6f\n", MEDIAN(kv));
	printf("10.0%%   KLD: %10.6f\n", PCT(kv, 0.100f));
	printf(" 5.0%%   KLD: %10.6f\n", PCT(kv, 0.050f));
	printf(" 1.0%%   KLD: %10.6f\n", PCT(kv, 0.010f));
	printf(" 0.1%%   KLD: %10.6f\n", PCT(kv, 0.001f));
	printf("Minimum KLD: %10.6f\n", kv[0]);
	printf("\n");
	printf("====== Token probability statistics ======\n");
	double pm, pu;
	MEAN(s_p, s_p2, pm, pu);
	printf("Mean    Δp: %6.3lf ± %5.3lf %%\n", 100.0 * pm, 100.0 * pu);
	printf("Maximum Δp: %6.3lf%%\n", 100.0 * pd[count - 1]);
	printf("99.9%%   Δp: %6.3lf%%\n", 100.0 * PCT(pd, 0.999f));
	printf("99.0%%   Δp: %6.3lf%%\n", 100.0 * PCT(pd, 0.990f));
	printf("95.0%%   Δp: %6.3lf%%\n", 100.0 * PCT(pd, 0.950f));
	printf("90.0%%   Δp: %6.3lf%%\n", 100.0 * PCT(pd, 0.900f));
	printf("75.0%%   Δp: %6.3lf%%\n", 100.0 * PCT(pd, 0.750f));
	printf("Median  Δp: %6.3lf%%\n", 100.0 * MEDIAN(pd));
	printf("25.0%%   Δp: %6.3lf%%\n", 100.0 * PCT(pd, 0.250f));
	printf("10.0%%   Δp: %6.3lf%%\n", 100.0 * PCT(pd, 0.100f));
	printf(" 5.0%%   Δp: %6.3lf%%\n", 100.0 * PCT(pd, 0.050f));
	printf(" 1.0%%   Δp: %6.3lf%%\n", 100.0 * PCT(pd, 0.010f));
	printf(" 0.1%%   Δp: %6.3lf%%\n", 100.0 * PCT(pd, 0.001f));
	printf("Minimum Δp: %6.3lf%%\n", 100.0 * pd[0]);
	double mm, mu;
	MEAN(s_p2, s_p4, mm, mu);
	printf("RMS Δp    : %6.3lf ± %5.3lf %%\n", 100.0 * sqrt(mm), 100.0 * 0.5 / sqrt(mm) * mu);
	double top = 1.0 * same / count;
	printf("Same top p: %6.3lf ± %5.3lf %%\n", 100.0 * top, 100.0 * sqrt(top * (1.0 - top) / (count - 1)));
	return 0;
}

static int cmpf(const void *a, const void *b) {
	float x = *(const float *)a, y = *(const float *)b;
	return x < y ? -1 : x > y;
}
