/* rpc-server of the rigor test engine: parses rpc-server's flags, prints
 * the startup banner of llama.cpp (or, built with TESTENGINE_IK,
 * ik_llama.cpp), listens on its port and serves connections one at a time
 * until killed. RIGOR_TESTENGINE_RPC_NEVER_READY=1 makes it never listen. */
#define _POSIX_C_SOURCE 200809L
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static void usage(const char *prog) {
	printf("usage: %s [options]\n\noptions:\n", prog);
#ifdef TESTENGINE_IK
	printf("  --help                show this help message and exit\n");
	printf("  -H, -h, --host HOST   host to bind to (default: 127.0.0.1)\n");
#else
	printf("  -h, --help            show this help message and exit\n");
	printf("  -H, --host HOST       host to bind to (default: 127.0.0.1)\n");
#endif
	printf("  -p, --port PORT       port to bind to (default: 50052)\n");
	printf("  -t, --threads N       number of threads for the CPU backend\n");
	printf("  -c, --cache           enable local file cache\n");
}

int main(int argc, char **argv) {
	setvbuf(stdout, NULL, _IOLBF, 0);
	const char *host = "127.0.0.1", *port = "50052";
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		int takes = 0;
#ifdef TESTENGINE_IK
		if (!strcmp(a, "--help")) { usage(argv[0]); return 0; }
		if (!strcmp(a, "-H") || !strcmp(a, "-h") || !strcmp(a, "--host") || !strcmp(a, "--Host")) takes = 'H';
		else if (!strcmp(a, "-p") || !strcmp(a, "-P") || !strcmp(a, "--port") || !strcmp(a, "--Port")) takes = 'p';
		else if (!strcmp(a, "-cpu")) continue;
#else
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) { usage(argv[0]); return 0; }
		if (!strcmp(a, "-H") || !strcmp(a, "--host")) takes = 'H';
		else if (!strcmp(a, "-p") || !strcmp(a, "--port")) takes = 'p';
		else if (!strcmp(a, "-m") || !strcmp(a, "--mem")) takes = 'm';
#endif
		else if (!strcmp(a, "-t") || !strcmp(a, "--threads")) takes = 't';
		else if (!strcmp(a, "-d") || !strcmp(a, "--device")) takes = 'd';
		else if (!strcmp(a, "-c") || !strcmp(a, "--cache")) continue;
		if (!takes || i + 1 >= argc) {
			fprintf(stderr, "error: unknown argument: %s\n", a);
			usage(argv[0]);
			return 1;
		}
		const char *v = argv[++i];
		if (takes == 'H') host = v;
		if (takes == 'p') port = v;
	}
	const char *never = getenv("RIGOR_TESTENGINE_RPC_NEVER_READY");
	if (never && *never == '1') {
		for (;;) pause();
	}
	struct addrinfo hints = {0}, *res;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE;
	if (getaddrinfo(host, port, &hints, &res) != 0) {
		fprintf(stderr, "Failed to resolve %s:%s\n", host, port);
		return 1;
	}
	int fd = socket(res->ai_family, res->ai_socktype, res->ai_protocol), one = 1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (fd < 0 || bind(fd, res->ai_addr, res->ai_addrlen) != 0 || listen(fd, 8) != 0) {
		fprintf(stderr, "Failed to create server socket on %s:%s\n", host, port);
		return 1;
	}
	freeaddrinfo(res);
#ifdef TESTENGINE_IK
	fprintf(stderr, "create_cpu_backend: using CPU backend\n");
	printf("Starting RPC server v3.5.2\n  endpoint       : %s:%s\n  local cache    : n/a\n", host, port);
	printf("Using devices:\n       CPU:       512 MiB total,      512 MiB free\n");
#else
	fprintf(stderr, "create_backend: using CPU backend\n");
	printf("Starting RPC server on %s:%s, backend memory: 512 MB\n", host, port);
#endif
	for (;;) {
		int c = accept(fd, NULL, NULL);
		if (c < 0) continue;
#ifdef TESTENGINE_IK
		printf("Accepted client connection\n");
#else
		printf("Accepted client connection, free_mem=536870912, total_mem=536870912\n");
#endif
		const char *ab = getenv("RIGOR_TESTENGINE_RPC_ABORT");
		char buf[4096];
		while (read(c, buf, sizeof buf) > 0) {
			if (ab && *ab == '1') {
				/* As a real rpc-server dies on a failed assertion
				   mid-run, once a client sends a command. */
				fprintf(stderr, "ggml/src/ggml-rpc/ggml-rpc.cpp:1012: GGML_ASSERT(buf != nullptr) failed\n");
				abort();
			}
		}
		close(c);
		printf("Client connection closed\n");
	}
}
