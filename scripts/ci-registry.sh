#!/usr/bin/env bash
# A real OCI registry on loopback, for rigor's archive tests (issue 26).
#
#   scripts/ci-registry.sh install   # apt-get Debian's docker-registry and apache2-utils (as root)
#   scripts/ci-registry.sh start     # a scratch storage root, a test user, serve; wait for GET /v2/
#   scripts/ci-registry.sh stop      # stop the registry, wait until it is gone, remove its storage
#   scripts/ci-registry.sh status    # exit 0 when GET /v2/ answers 401 (basic auth on)
#   scripts/ci-registry.sh env       # the variables the tests read, as export lines
#
# The registry is distribution 2.8 (`docker-registry serve`) with the
# configuration scripts/registry/config.yml, basic auth on (a bcrypt entry
# written by `htpasswd -B`) for one test user. It listens on
# 127.0.0.1:$RIGOR_REGISTRY_PORT (default 5055) and keeps its blobs in
# $RIGOR_REGISTRY_DIR (default /tmp/rigor-registry), which stop removes.
# The test user and password are for this loopback registry only.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
dir=${RIGOR_REGISTRY_DIR:-/tmp/rigor-registry}
port=${RIGOR_REGISTRY_PORT:-5055}
user=rigor-test
password=rigor-test-password

install() {
	if command -v docker-registry >/dev/null && command -v htpasswd >/dev/null; then
		return
	fi
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends docker-registry apache2-utils >/dev/null
}

code() {
	curl -s -o /dev/null -w '%{http_code}' --max-time 2 "http://127.0.0.1:$port/v2/" 2>/dev/null || true
}

status() {
	[ "$(code)" = 401 ]
}

start() {
	if [ -f "$dir/registry.pid" ] && kill -0 "$(cat "$dir/registry.pid")" 2>/dev/null; then
		echo "ci-registry: already running ($dir)" >&2
		return
	fi
	mkdir -p "$dir/data"
	htpasswd -B -b -c "$dir/htpasswd" "$user" "$password" 2>/dev/null
	REGISTRY_STORAGE_FILESYSTEM_ROOTDIRECTORY="$dir/data" \
		REGISTRY_HTTP_ADDR="127.0.0.1:$port" \
		REGISTRY_AUTH_HTPASSWD_PATH="$dir/htpasswd" \
		OTEL_TRACES_EXPORTER=none \
		docker-registry serve "$here/registry/config.yml" >"$dir/registry.log" 2>&1 &
	echo $! >"$dir/registry.pid"
	# Up when GET /v2/ asks for credentials (401): basic auth is on.
	for _ in $(seq 1 100); do
		if status; then
			echo "ci-registry: registry up on 127.0.0.1:$port (basic auth, user $user) in $dir" >&2
			return
		fi
		if ! kill -0 "$(cat "$dir/registry.pid")" 2>/dev/null; then
			break
		fi
		sleep 0.2
	done
	echo "ci-registry: GET http://127.0.0.1:$port/v2/ did not answer 401 within 20 s (last: $(code))" >&2
	tail -n 20 "$dir/registry.log" >&2 || true
	stop
	return 1
}

stop() {
	if [ -f "$dir/registry.pid" ]; then
		pid=$(cat "$dir/registry.pid")
		kill "$pid" 2>/dev/null || true
		for _ in $(seq 1 50); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -9 "$pid" 2>/dev/null || true
	fi
	rm -rf "$dir"
}

env_() {
	echo "export RIGOR_TEST_REGISTRY=127.0.0.1:$port"
	echo "export RIGOR_TEST_REGISTRY_USER=$user"
	echo "export RIGOR_TEST_REGISTRY_PASSWORD=$password"
	echo "export RIGOR_TEST_REGISTRY_DIR=$dir/data"
}

case "${1:-}" in
install) install ;;
start) start ;;
stop) stop ;;
status) status ;;
env) env_ ;;
*)
	echo "usage: $0 install|start|stop|status|env" >&2
	exit 2
	;;
esac
