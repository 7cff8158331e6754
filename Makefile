# rigor — build, test and check. `make quickstart` is the main job on a fresh
# clone; `make test` runs every test (.ci/run runs it in CI).

GO      ?= go
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo devel)
LDFLAGS := -X main.version=$(VERSION)
BIN     := bin/rigor

# TEST_TIMEOUT caps each package's go test (go's default is 10m). The worst
# measured: make test 26 min in all at load 31 on 2 cores, its longest
# package (testscripts) most of that; 45m leaves room and still fails a hung
# test well inside CI's 90 minutes (TESTING.md, "Timeouts in CI").
TEST_TIMEOUT ?= 45m

.PHONY: build install test unit vet cue-vet tidy-check golden lint check quickstart bench clean

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/rigor

# install puts rigor into Go's bin directory ($GOBIN, else $GOPATH/bin),
# the same place as `go install github.com/rigorbench/rigor/cmd/rigor@latest`.
install:
	$(GO) install -ldflags "$(LDFLAGS)" ./cmd/rigor
	@bin=$$($(GO) env GOBIN); [ -n "$$bin" ] || bin=$$($(GO) env GOPATH)/bin; \
	echo "installed $$bin/rigor"; \
	case ":$$PATH:" in *":$$bin:"*) ;; *) echo "$$bin is not on your PATH: export PATH=\"$$bin:\$$PATH\"";; esac

# test is what CI runs: static checks, the CUE module through the stock cue
# tool, then every Go test and testscript with the race detector.
test: vet cue-vet unit

# GORACE: a race-built binary sleeps a second before it exits unless
# atexit_sleep_ms=0; yours wins. go test starts packages in the order given
# (-p at a time): the longest first, so that none starts last and runs on
# alone (TESTING.md, "How long the tests take").
SLOWEST := ./testscripts/ ./internal/engine/llamacpp/ ./internal/spec/ ./internal/engine/nodellama/ ./internal/report/
unit:
	GORACE="atexit_sleep_ms=0 $$GORACE" $(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) $(SLOWEST) ./...

vet:
	$(GO) vet ./...

# The experiments must pass the stock cue tool as they are: vet -c, and an
# export of each experiment package.
cue-vet:
	$(GO) tool cue vet -c ./experiments/...
	@for d in $$(find experiments -name '*.cue' -exec dirname {} \; | sort -u); do \
		echo "cue export ./$$d"; \
		$(GO) tool cue export ./$$d > /dev/null || exit 1; \
	done

tidy-check:
	$(GO) mod tidy -diff

# golden rewrites golden files and testscript outputs from the current code.
golden:
	RIGOR_UPDATE=1 $(GO) test -timeout $(TEST_TIMEOUT) ./testscripts/
	$(GO) test -timeout $(TEST_TIMEOUT) ./internal/cli/ -run TestSeedPlans -update
	$(GO) test -timeout $(TEST_TIMEOUT) ./internal/report/text/ -update

lint:
	$(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...

check: test tidy-check lint

bench:
	$(GO) test -timeout $(TEST_TIMEOUT) -run '^$$' -bench . -benchtime 3x ./internal/spec/

# quickstart builds with -v so that the first build (minutes on a small
# machine) names each package as it compiles instead of sitting silent.
quickstart:
	@echo "== go build -v -o $(BIN) ./cmd/rigor: compiling rigor; the first time this compiles the CUE evaluator and go-git (minutes on a small machine), one line per package"
	$(GO) build -v -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/rigor
	./scripts/quickstart.sh

clean:
	rm -rf bin
