# keb's two commands: `make run` (the broker on its embedded defaults) and
# `make test` (every test, DB-backed ones included). Both install what is
# missing first.
GO      ?= go
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT  ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
LDFLAGS := -s -w -X main.version=$(VERSION) -X github.com/kyma-keb/keb/internal/buildinfo.Commit=$(COMMIT)

# One build configuration for everything make builds and tests: static (no cgo) and without local paths, as the
# released binary. vet, the tests and the keb binaries tests build (the image test's, the fault suite's) then
# share the build cache and compile each package once per run; the image test's own configuration used to
# compile all of keb's dependencies a second time, the longest part of `make test`.
export CGO_ENABLED := 0
export GOFLAGS := -trimpath $(GOFLAGS)

HELM_VERSION := v3.19.0
HELM        := bin/tools/helm
# promtool checks and unit-tests the chart's alerts (deploy/helm/keb/files/alerts_test.yaml); Prometheus v3.6's
# module version.
PROMTOOL_VERSION := v0.316.0
PROMTOOL     := bin/tools/promtool

.PHONY: all build run run-plan test promtool goldens golden-runtime-cr readme walkthrough-tools faults vet fmt-check generate generate-check lint postgres pgbench k8s-bins helm image release browser-test screenshots load bench scale scale-db fuzz clean

all: build

build:
	@if [ ! -x bin/keb ]; then echo ">> building bin/keb (go build ./cmd/keb): the first build compiles keb and its dependencies, about 6 minutes on 2 cores; later builds take seconds"; fi
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/keb ./cmd/keb

## run: the whole local stack: PostgreSQL and a control plane under .keb/, simulated
## runtimes, dev auth; the broker on 127.0.0.1:8080
run: run-plan postgres k8s-bins build
	./bin/keb dev

# run-plan: what `make run` does before the broker starts, and how long the first time takes.
run-plan:
	@echo ">> make run: PostgreSQL server binaries (installed if missing), kube-apiserver, etcd and kubectl into bin/k8s,"
	@echo "   bin/keb, then ./bin/keb dev. The first run builds for about 12 minutes on 2 cores (6 for bin/k8s, 6 for"
	@echo "   bin/keb, each says when it starts); later runs only start the stack (about a minute), logging each stage."

## test: formatting, vet, and every test against real PostgreSQL and kube-apiservers
## (the suites that run keb as a process share one binary, bin/test/keb, built first)
test: postgres k8s-bins helm promtool walkthrough-tools lint
	$(GO) build -o bin/test/keb ./cmd/keb
	KEB_TEST_BINARY=$(CURDIR)/bin/test/keb KUBEBUILDER_ASSETS=$(CURDIR)/bin/k8s $(GO) test -count=1 -timeout 45m \
		-p $(TEST_PACKAGES_AT_ONCE) $(LONG_TEST_PACKAGES) ./...
	@$(MAKE) --no-print-directory browser-test

# The suites that mostly wait (on simulated clusters, polls, restarts of keb dev) and take minutes: go test starts
# packages in the order named, so these start first and the short packages run beside them, TEST_PACKAGES_AT_ONCE
# at a time (go test's default is one per core, which left the longest suite to start last, after the others).
# testing/e2e, one test after another, is the longest chain: it starts first, and the walkthrough and the fault
# suite run at a lower CPU priority beside it (testing/niceness).
LONG_TEST_PACKAGES := ./testing/e2e ./testing/readme ./testing/faults
TEST_PACKAGES_AT_ONCE ?= 4

## golden-runtime-cr: rewrite internal/process/provisioning/testdata/runtime-cr/*.yaml, the whole Runtime CR
## per request of TestRuntimeCRGolden, from this run (review the diff: it is what keb writes)
golden-runtime-cr: postgres k8s-bins
	KUBEBUILDER_ASSETS=$(CURDIR)/bin/k8s $(GO) test -count=1 -run 'TestRuntimeCRGolden$$' ./internal/process/provisioning -update

## readme: run README.md's first runtime and every docs/guide chapter against a fresh keb dev and rewrite their
## pasted outputs from this run (`make test` runs the same and fails when an output no longer has the pasted shape)
readme: postgres k8s-bins walkthrough-tools
	KUBEBUILDER_ASSETS=$(CURDIR)/bin/k8s $(GO) test -count=1 -timeout 45m -run 'TestREADME$$' ./testing/readme -update -v

## browser-test: the operations console in Debian's chromium, driven by playwright-core against keb dev
## (testing/browser); chromium is installed first when run as root, and the test is left out, saying so,
## when it is missing and cannot be installed. Screenshots go to bin/screenshots (SCREENSHOTS=...).
CHROMIUM ?= /usr/bin/chromium
browser-test: build k8s-bins
	@if [ ! -x "$(CHROMIUM)" ] && [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		echo ">> installing chromium for the browser test (apt-get install chromium)"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	fi; \
	if ! command -v npm >/dev/null && [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		echo ">> installing Node.js and npm for the browser test (apt-get install nodejs npm)"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null; \
	fi; \
	if [ ! -x "$(CHROMIUM)" ] || ! command -v npm >/dev/null; then \
		echo ">> browser test NOT run: chromium or npm is missing (sudo apt-get install -y chromium nodejs npm)"; exit 0; \
	fi; \
	cd testing/browser && npm ci --no-audit --no-fund --silent && cd ../.. && \
	CHROMIUM=$(CHROMIUM) SCREENSHOTS=$(SCREENSHOTS) node testing/browser/console.test.mjs

## screenshots: the browser test, saving its screenshots as docs/images (the README's pictures)
screenshots:
	@$(MAKE) --no-print-directory browser-test SCREENSHOTS=docs/images

## faults: the fault suite with its long variants (the 1,000-cycle soak, the PostgreSQL failover scenarios,
## the rolling restart, the restore of a base backup), one test at a time
## so that the timings it logs are keb's; its quick variants run in `make test` too, two at a time
faults: postgres k8s-bins
	KEB_FAULTS=long KUBEBUILDER_ASSETS=$(CURDIR)/bin/k8s $(GO) test -count=1 -timeout 60m -parallel 1 -v ./testing/faults/...

## fuzz: every fuzz target for FUZZTIME each (plain `go test`, and so `make test`,
## runs their seed corpora in testdata/fuzz); findings land in testdata/fuzz too
FUZZTIME ?= 1m
FUZZ_TARGETS := \
	./internal/httpapi:FuzzCheckInstanceBody \
	./internal/httpapi:FuzzCheckBindingBody \
	./internal/httpapi:FuzzIfNoneMatch \
	./internal/orchestration:FuzzParseRequest \
	./internal/console:FuzzParseLoginForm \
	./internal/catalog:FuzzValidateContext \
	./internal/catalog:FuzzValidateUpdateContext \
	./internal/catalog:FuzzValidateParameters \
	./internal/runtimelisting:FuzzParseQuery \
	./internal/runtimelisting:FuzzDecodeCursor \
	./internal/auth:FuzzVerify \
	./internal/guardrails:FuzzParse \
	./internal/httpapi:FuzzKubeconfigAccess \
	./internal/userkubeconfig:FuzzBuild \
	./internal/events:FuzzParseQuery
fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t##*:}; echo ">> $$name ($$pkg, $(FUZZTIME))"; \
		$(GO) test -run='^$$' -fuzz="^$$name$$" -fuzztime=$(FUZZTIME) $$pkg; \
	done

lint: fmt-check vet generate-check

## goldens: rewrite the golden files: internal/catalog/testdata/schemas (every plan's create and update schema, per
## platform region where they differ) and, by golden-runtime-cr, the Runtime CRs; review the diff, never edit by hand
goldens: golden-runtime-cr
	$(GO) test -count=1 -run '^TestSchemaGoldens$$' ./internal/catalog -update

# Packages whose types carry +kubebuilder:object markers: controller-gen writes their
# DeepCopy methods into zz_generated.deepcopy.go.
DEEPCOPY_PKGS := $(sort $(dir $(shell grep -rl --include='*.go' '+kubebuilder:object' internal testing cmd 2>/dev/null)))
# Packages declaring an API group (+groupName): controller-gen writes the CRD of each of
# their root types into CRD_DIR (<group>_<plural>.yaml), from the types and their
# validation markers. CRD_DIR's other files (a CRD keb only reads, such as the
# BtpOperator's) are written by hand.
CRD_PKGS    := $(sort $(dir $(shell grep -rl --include='*.go' '+groupName=' internal 2>/dev/null)))
CRD_DIR     := resources/crds
CRD_HEADER  := resources/crd-header.txt
CONTROLLER_GEN := $(GO) tool controller-gen
CRD_GEN = $(CONTROLLER_GEN) crd:headerFile=$(CRD_HEADER) $(foreach p,$(CRD_PKGS),paths=./$(p))

## generate: DeepCopy methods and CRDs of the custom resource types (controller-gen, pinned in go.mod):
## the one way to change resources/crds/'s generated files
generate:
	$(CONTROLLER_GEN) object $(foreach p,$(DEEPCOPY_PKGS),paths=./$(p))
	$(CRD_GEN) output:crd:dir=$(CRD_DIR)

# generate-check fails when a zz_generated.deepcopy.go or a generated CRD is not what
# `make generate` writes, or when CRD_DIR holds a generated CRD no type produces any more.
generate-check:
	@tmp="$$(mktemp -d)"; trap 'rm -rf "$$tmp"' EXIT; \
	$(CONTROLLER_GEN) object $(foreach p,$(DEEPCOPY_PKGS),paths=./$(p)) output:object:stdout >"$$tmp/deepcopy" || exit 1; \
	if ! cat $(foreach p,$(DEEPCOPY_PKGS),$(p)zz_generated.deepcopy.go) | diff -q - "$$tmp/deepcopy" >/dev/null; then \
		echo "generated DeepCopy code is stale: run make generate"; exit 1; fi; \
	mkdir "$$tmp/crds" && $(CRD_GEN) output:crd:dir="$$tmp/crds" || exit 1; \
	for f in "$$tmp"/crds/*.yaml; do \
		if ! diff -q "$$f" $(CRD_DIR)/"$$(basename "$$f")" >/dev/null 2>&1; then \
			echo "$(CRD_DIR)/$$(basename "$$f") is not what its Go types generate: run make generate"; exit 1; fi; \
	done; \
	for f in $(CRD_DIR)/*.yaml; do \
		if grep -q 'controller-gen.kubebuilder.io/version' "$$f" && [ ! -e "$$tmp/crds/$$(basename "$$f")" ]; then \
			echo "$$f was generated but no type generates it any more: remove it"; exit 1; fi; \
	done

vet:
	$(GO) vet ./...

fmt-check:
	@out="$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))"; \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

## postgres: the PostgreSQL server binaries keb dev and the tests start clusters from
postgres:
	@if ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null 2>&1 \
		|| [ -n "$$KEB_PG_BIN_DIR" ]; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		echo ">> installing PostgreSQL server binaries (apt-get install postgresql)"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null; \
	else \
		echo "PostgreSQL server binaries are missing. Install them with:"; \
		echo "    sudo apt-get install -y postgresql"; \
		exit 1; \
	fi

## walkthrough-tools: curl and jq, which the README and docs/guide (and so their test, testing/readme) run
walkthrough-tools:
	@if command -v curl >/dev/null && command -v jq >/dev/null; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		echo ">> installing curl and jq for the README walkthrough (apt-get install curl jq)"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq curl jq >/dev/null; \
	else \
		echo "curl or jq is missing (the README walkthrough and its test need them). Install them with:"; \
		echo "    sudo apt-get install -y curl jq"; \
		exit 1; \
	fi

## k8s-bins: kube-apiserver and etcd built from the Go module proxy into bin/k8s
## (once; the first build takes about 6 minutes on 2 cores)
k8s-bins:
	@bash testing/envtest/build-bins.sh

## helm: helm, pinned, built from the Go module proxy into bin/tools (the chart tests run it)
helm: $(HELM)
$(HELM):
	@echo ">> building helm $(HELM_VERSION) into bin/tools (once)"
	GOBIN=$(CURDIR)/bin/tools GOFLAGS=-buildvcs=false $(GO) install helm.sh/helm/v3/cmd/helm@$(HELM_VERSION)

## promtool: Prometheus's rule checker into bin/tools (once, from the Go module proxy), for the alerts' tests
promtool: $(PROMTOOL)
$(PROMTOOL):
	@echo ">> building promtool $(PROMTOOL_VERSION) into bin/tools (once; a few minutes on 2 cores)"
	GOBIN=$(CURDIR)/bin/tools GOFLAGS=-buildvcs=false $(GO) install github.com/prometheus/prometheus/cmd/promtool@$(PROMTOOL_VERSION)

## image: keb's container image without a Docker engine or a registry base image: the static binary,
## a non-root user (65532) and /tmp, as an OCI layout (bin/image/oci) and a docker-loadable tarball
## (bin/image/keb.tar). IMAGE names the tag recorded in the tarball.
IMAGE ?= keb:$(VERSION)
image: build
	$(GO) run ./cmd/keb-image --binary bin/keb --layout bin/image/oci --tarball bin/image/keb.tar --tag $(IMAGE)

## release: the binary, the image and the packaged Helm chart (bin/release/)
release: image helm
	@mkdir -p bin/release
	$(HELM) lint --strict deploy/helm/keb
	$(HELM) package deploy/helm/keb --app-version $(VERSION) --destination bin/release

## load: the load benchmark against a running `make run` (see docs/performance.md)
load:
	$(GO) run ./testing/load $(ARGS)

# bench settings: BENCH_BASE=<git ref> also measures that version (built into
# .keb/bench-base), interleaved with this tree, in the same run.
BENCH_BASE     ?=
BENCH_DURATION ?= 3s
BENCH_CONC     ?= 1,16,64
BENCH_PIPELINE ?= 50,1000,trial:200
BENCH_PORT     ?= 58080
BENCH_DOC      ?= docs/performance.md

## bench: starts PostgreSQL and `keb dev` (--workers 0, then a pipeline instance)
## itself, drives catalog, PUT and polls at each concurrency, pgbench against the
## same PostgreSQL, and the pipeline; prints one table and writes it into
## $(BENCH_DOC). Timings never run in `make test`.
bench: postgres pgbench k8s-bins build
	@binaries="after=bin/keb"; \
	if [ -n "$(BENCH_BASE)" ]; then \
		echo ">> building $(BENCH_BASE) into .keb/bench-base"; \
		rm -rf .keb/bench-base && mkdir -p .keb/bench-base/src && \
		git archive "$(BENCH_BASE)" | tar -x -C .keb/bench-base/src && \
		(cd .keb/bench-base/src && CGO_ENABLED=0 $(GO) build -trimpath -o ../keb ./cmd/keb) || exit 1; \
		binaries="before=.keb/bench-base/keb,$$binaries"; \
	fi; \
	$(GO) run ./testing/load -mode bench -binaries "$$binaries" -duration $(BENCH_DURATION) \
		-concurrencies "$(BENCH_CONC)" -pipeline "$(BENCH_PIPELINE)" -port $(BENCH_PORT) -credentials=false \
		-doc "$(BENCH_DOC)" -commit "$$(git rev-parse --short HEAD)$$(git diff --quiet HEAD || echo -dirty)$(if $(BENCH_BASE), vs $(BENCH_BASE))"

# scale settings: SCALE_N runtimes (ascending, comma-separated), SCALE_SOAK of steady polling before memory is
# read again, SCALE_BASE=<git ref> also measures that version (built into .keb/scale-base), interleaved with this
# tree in the same run: the before of a before → after.
SCALE_N    ?= 10000,100000
SCALE_SOAK ?= 1m
SCALE_BASE ?=
SCALE_DOC  ?= docs/performance.md
# SCALE_APISERVER_ENV overrides the test kube-apiserver's environment (scaleload's -apiserver-env, default
# GOMEMLIMIT=9GiB): a larger soft limit means fewer of its collections at 100,000 runtimes where memory allows.
SCALE_APISERVER_ENV ?=

## scale: keb against a fleet-sized control plane (testing/scaleload): N runtimes' Runtime CRs, Kyma CRs and
## kubeconfig Secrets in a kube-apiserver and their instances in PostgreSQL; two `keb serve` replicas: time to
## /readyz and to a synced watch, CPU of that first (full) list, RSS and Go heap after start and after the soak;
## at N = 10,000 a Kyma upgrade orchestration over every runtime (upgrades/s keb-side, CPU and apiserver requests
## per upgrade); written into $(SCALE_DOC) ("Fleet scale: the control plane at N runtimes"), keb's and the
## kube-apiserver's heap profiles into .keb/scale.
## Then the PostgreSQL side: `make scale-db` (listings and fleet jobs at N, issue 30's other half). Timings never
## run in `make test`.
scale: postgres k8s-bins
	@mkdir -p .keb/scale; \
	$(GO) build -ldflags "$(LDFLAGS)" -o .keb/scale/keb ./cmd/keb || exit 1; \
	binaries="after=.keb/scale/keb"; \
	if [ -n "$(SCALE_BASE)" ]; then \
		echo ">> building $(SCALE_BASE) into .keb/scale-base"; \
		rm -rf .keb/scale-base && mkdir -p .keb/scale-base/src && \
		git archive "$(SCALE_BASE)" | tar -x -C .keb/scale-base/src && \
		(cd .keb/scale-base/src && CGO_ENABLED=0 $(GO) build -trimpath -o ../keb ./cmd/keb) || exit 1; \
		binaries="before=.keb/scale-base/keb,$$binaries"; \
	fi; \
	$(GO) build -o .keb/scale/runtimesload ./testing/runtimesload && \
	KUBEBUILDER_ASSETS=$(CURDIR)/bin/k8s $(GO) run ./testing/scaleload -n "$(SCALE_N)" -binaries "$$binaries" \
		-soak $(SCALE_SOAK) -runtimesload .keb/scale/runtimesload -doc "$(SCALE_DOC)" \
		$(if $(SCALE_APISERVER_ENV),-apiserver-env "$(SCALE_APISERVER_ENV)") \
		-commit "$$(git rev-parse --short HEAD)$$(git diff --quiet HEAD || echo -dirty)$(if $(SCALE_BASE), vs $(SCALE_BASE))"
	@$(MAKE) --no-print-directory scale-db

## scale-db: keb's PostgreSQL side at SCALE_N instances (default 100000; testing/scaledb): /info/runtimes for
## every filter, cursor and page number with statements per page, the metrics census, the trial expiry job,
## orchestration scheduler passes over 10,000 runtimes, `keb runtimes --all` and a subaccount cleanup of
## SCALE_N/10 events, on a database it creates in the PostgreSQL at SCALE_PG_URL (default 127.0.0.1:5432) and
## drops; with SCALE_BEFORE=<commit> that commit is measured first on the same database. Writes the section
## "Fleet scale: listings and fleet jobs at N" of docs/performance.md (SCALE_DOC). Timings never run in `make test`.
## SCALE_N may be a list (make scale's "10000,100000"): scale-db measures its last value; SCALE_BASE is read as
## SCALE_BEFORE.
scale-db:
	@GO="$(GO)" SCALE_N="$(SCALE_N)" SCALE_BEFORE="$(or $(SCALE_BEFORE),$(SCALE_BASE))" SCALE_DOC="$(SCALE_DOC)" \
		SCALE_PG_URL="$(SCALE_PG_URL)" bash testing/scaledb/run.sh

## pgbench: PostgreSQL's pgbench, which `make bench` compares keb with
pgbench:
	@if ls /usr/lib/postgresql/*/bin/pgbench >/dev/null 2>&1 || command -v pgbench >/dev/null 2>&1; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		echo ">> installing pgbench (apt-get install postgresql-contrib)"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql-contrib >/dev/null; \
	else \
		echo "pgbench is missing. Install it with:"; \
		echo "    sudo apt-get install -y postgresql-contrib"; \
		exit 1; \
	fi

clean:
	rm -rf bin
