# azure-private-endpoint-operator
#
# The two commands a user needs:
#   make demo   run the operator end to end locally: API server, Azure emulator,
#               CAPZ stand-in, the operator binary, and the samples
#   make test   run the whole test suite (CI runs exactly this through .ci/run)
#
# Everything a target needs is built from Go modules through the module proxy.
# Slow artefacts (kube-apiserver, etcd) are cached outside the clone, under
# $${XDG_DATA_HOME:-$$HOME/.local/share}/kubebuilder-envtest, so fresh clones
# on the same machine reuse them.

SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

GO ?= go
BIN := $(CURDIR)/bin
GOLANGCI_LINT := $(BIN)/golangci-lint
CONTROLLER_GEN := $(BIN)/controller-gen
HELM := $(BIN)/helm
TOOLS_DEPS := hack/tools/go.mod hack/tools/go.sum
CHART := charts/azure-private-endpoint-operator

# Flags for go test (both of hack/test-go.sh's runs). RACE holds the race
# detector's flags, for the packages whose tests start no API server
# (hack/test-go.sh says which and why); RACE= runs everything without it,
# make test-race everything with it.
GO_TEST_FLAGS ?= -count=1 -timeout=45m
RACE ?= -race
# make test's Go commands (vet, golangci-lint, the tests, the operator binary
# the end-to-end tests run) build as the image does: without cgo, with
# -trimpath. So the image's build at the end finds every package compiled
# (it was a third cold compile of the Kubernetes and Azure libraries, over
# 10 minutes on CI's 2 cores), and a clone at a new path, as CI's is, reuses
# the build cache of the module's own packages. The race detector needs cgo:
# hack/test-go.sh's race run builds with go test's defaults (cgo, no
# -trimpath).
GO_BUILD_ENV = CGO_ENABLED=0 GOFLAGS="-trimpath $(GOFLAGS)"
# Packages to test; override to narrow down, e.g. PKGS=./internal/capz/...
# go test starts packages in the order given (two at a time on two cores),
# so the longest go first and the short ones fill the gaps after them;
# ./... adds the rest once each.
PKGS ?= ./internal/controller/clusterlink/ ./internal/controller/privateendpoint/ ./test/e2e/ ./test/realcapz/ \
	./test/scale/ ./internal/controller/privatelinkservice/ ./cmd/demo/ ./test/chaos/ ./test/simulate/ ./charts/ ./...

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  %-16s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

##@ Development

# Flags for the demo, e.g. DEMO_FLAGS=--non-interactive or --azure-latency=10s.
DEMO_FLAGS ?=

.PHONY: demo
demo: envtest-assets kubectl build ## Run the operator end to end on this machine (Ctrl-C stops it).
	$(GO) build -o $(BIN)/demo ./cmd/demo
	KUBEBUILDER_ASSETS="$$(hack/envtest/build.sh --print-dir)" $(BIN)/demo --operator-binary $(BIN)/azure-private-endpoint-operator \
		--kubectl "$$(hack/envtest/build.sh --print-dir)/kubectl" $(DEMO_FLAGS)

.PHONY: kubectl
kubectl: ## Build kubectl from the API server's Kubernetes release (cached beside it) and print its path.
	@hack/envtest/build.sh --kubectl

.PHONY: build
build: ## Build the operator binary and the kubectl plugin (kubectl-apeo) into bin/.
	$(GO) build -o $(BIN)/azure-private-endpoint-operator ./cmd/azure-private-endpoint-operator
	$(GO) build -o $(BIN)/kubectl-apeo ./cmd/kubectl-apeo

.PHONY: test
test: check-tree lint chart-lint test-go test-image ## Run the whole suite: tracked-file guard, lint, chart lint, unit/envtest/e2e tests (the race detector where no API server starts), the image.

.PHONY: check-tree
check-tree: ## Fail if a tracked file is over 1 MiB or an executable binary.
	@$(GO) run ./hack/checktree || { echo "check-tree: see above; build output belongs in bin/ (ignored)" >&2; exit 1; }

# The image's version and revision labels.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
REVISION ?= $(shell git rev-parse HEAD 2>/dev/null)

.PHONY: image
image: ## Build the operator's OCI image into bin/image.tar (and bin/oci/) without a container engine.
	cd hack/image && $(GO) run . --context $(CURDIR) --out $(BIN)/image.tar --oci-layout $(BIN)/oci \
		--version $(VERSION) --revision "$(REVISION)"

.PHONY: test-image
test-image: ## Build the image from a clean context and check it (entrypoint, user, no shell, the binary starts).
	cd hack/image && $(GO_BUILD_ENV) $(GO) test -count=1 -timeout=30m ./...

.PHONY: fidelity
fidelity: ## Replay Azure's recorded traffic against azuresim and print every difference, allowed or not (runs in make test too).
	$(GO) test -count=1 -run '^TestConformance$$' -v ./internal/azuresim/conformance/ -args -report

.PHONY: test-go
test-go: envtest-assets $(HELM) ## Run unit and envtest tests only (no lint).
	KUBEBUILDER_ASSETS="$$(hack/envtest/build.sh --print-dir)" HELM=$(HELM) GO=$(GO) GO_TEST_FLAGS="$(GO_TEST_FLAGS)" RACE="$(RACE)" \
		$(GO_BUILD_ENV) hack/test-go.sh $(PKGS)

.PHONY: test-race
test-race: envtest-assets $(HELM) ## Run every Go test with the race detector (over 90 min on a slow 2-core machine; make test runs it only where no API server starts).
	KUBEBUILDER_ASSETS="$$(hack/envtest/build.sh --print-dir)" HELM=$(HELM) GO=$(GO) GO_TEST_FLAGS="$(GO_TEST_FLAGS)" RACE="$(RACE)" RACE_ALL=1 \
		$(GO_BUILD_ENV) hack/test-go.sh $(PKGS)

.PHONY: chart-lint
chart-lint: $(HELM) ## Lint and render the Helm chart (helm built from hack/helm).
	$(HELM) lint --strict $(CHART) -f $(CHART)/ci/test-values.yaml
	$(HELM) template apeo $(CHART) --namespace apeo-system -f $(CHART)/ci/test-values.yaml >/dev/null

# Flags for the benchmark, e.g. BENCH_FLAGS=--n=100; past Azure's 1,000s
# (docs/benchmarks.md's table, about 70 min for the wiring):
# BENCH_FLAGS="--scenario=wiring --n=1000,2000,3000 --timeout=45m".
BENCH_FLAGS ?=

.PHONY: bench
bench: envtest-assets build ## Scale benchmark: the wiring (N = 100, 500, 1000) and the consumer scenario (1,000 AzurePrivateEndpoints, own and shared zones); ~50 min; writes docs/benchmarks{,-consumer}.{md,json}.
	KUBEBUILDER_ASSETS="$$(hack/envtest/build.sh --print-dir)" $(GO) run ./test/scale \
		--operator-binary $(BIN)/azure-private-endpoint-operator \
		--markdown docs/benchmarks.md --json docs/benchmarks.json \
		--consumer-markdown docs/benchmarks-consumer.md --consumer-json docs/benchmarks-consumer.json $(BENCH_FLAGS)

.PHONY: bench-consumer
bench-consumer: envtest-assets build ## The consumer scenario of make bench alone (~10 min); writes docs/benchmarks-consumer.{md,json}.
	KUBEBUILDER_ASSETS="$$(hack/envtest/build.sh --print-dir)" $(GO) run ./test/scale --scenario=consumer \
		--operator-binary $(BIN)/azure-private-endpoint-operator \
		--consumer-markdown docs/benchmarks-consumer.md --consumer-json docs/benchmarks-consumer.json $(BENCH_FLAGS)

.PHONY: bench-dns
bench-dns: envtest-assets build ## The wiring at N = 1,000 in DNS mode (--wiring-dns): convergence, then 10 min of DNS against Azure's Private DNS limits (~15 min); writes docs/benchmarks-dns.{md,json}.
	KUBEBUILDER_ASSETS="$$(hack/envtest/build.sh --print-dir)" $(GO) run ./test/scale --scenario=wiring --n=1000 --wiring-dns \
		--operator-binary $(BIN)/azure-private-endpoint-operator \
		--markdown docs/benchmarks-dns.md --json docs/benchmarks-dns.json $(BENCH_FLAGS)

# The revision test-upgrade upgrades from ("" for the test's default).
UPGRADE_FROM ?=

.PHONY: test-upgrade
test-upgrade: envtest-assets ## Upgrade test: the operator of an earlier revision (UPGRADE_FROM, default in test/upgrade) wires a world, the work tree's binary replaces it; nothing but status may change (~5 min; needs git history).
	KUBEBUILDER_ASSETS="$$(hack/envtest/build.sh --print-dir)" APEO_UPGRADE_FROM=$(UPGRADE_FROM) $(GO) test -tags upgrade -count=1 -v -timeout 30m ./test/upgrade/

.PHONY: test-capz
test-capz: envtest-assets ## Differential suite: each scenario with the operator binary in capzsim's world and with the real CAPZ (v1.23.0, v1.27.0) and ASO (v2.20.0); fails on any difference test/realcapz does not list (~20 min; ~40 min on a new machine, which first builds kube-apiserver and the real controllers).
	@hack/build-cached.sh asomanager >/dev/null
	@hack/build-cached.sh capzmanager >/dev/null
	@hack/build-cached.sh capzmanager go.v1.23.0.mod >/dev/null
	KUBEBUILDER_ASSETS="$$(hack/envtest/build.sh --print-dir)" $(GO_BUILD_ENV) $(GO) test -tags capzdiff -count=1 -v -timeout 90m ./test/realcapz/

# Flags for the chaos run, e.g. CHAOS_FLAGS='--n=300 --window=10m'.
CHAOS_FLAGS ?=

.PHONY: chaos
chaos: envtest-assets build ## Chaos run: the operator binary, 200 WCs, 20 AzurePrivateLinkServices, 5 min of faults (~15 min); writes docs/reliability.md, fails on a missed figure.
	KUBEBUILDER_ASSETS="$$(hack/envtest/build.sh --print-dir)" $(GO) run ./test/chaos \
		--operator-binary $(BIN)/azure-private-endpoint-operator --markdown docs/reliability.md $(CHAOS_FLAGS)

# Flags for the simulation, e.g. SIMULATE_FLAGS='--histories=3 --seed=42'.
SIMULATE_FLAGS ?=

.PHONY: simulate
simulate: envtest-assets build ## Multi-tenant simulation: seeded histories against the operator binary, invariants checked every 250 ms (~40 min for 10 histories); writes its section of docs/reliability.md, fails on a violation and prints the history.
	KUBEBUILDER_ASSETS="$$(hack/envtest/build.sh --print-dir)" $(GO) run ./test/simulate \
		--operator-binary $(BIN)/azure-private-endpoint-operator --markdown docs/reliability.md $(SIMULATE_FLAGS)

# How long each fuzz target runs under make fuzz (their seed corpus runs in
# every make test).
FUZZTIME ?= 2m
FUZZ_TARGETS := \
	./internal/azure/privatelinkservices:FuzzObserved \
	./internal/controller/clusterlink:FuzzDesired \
	./internal/controller/clusterlink:FuzzIdentity \
	./internal/controller/wiringdns:FuzzDNSNames \
	./internal/dnsguard:FuzzCheck \
	./internal/capz:FuzzView

.PHONY: fuzz
fuzz: ## Run every fuzz target for FUZZTIME each (default 2m); failures land in the package's testdata/fuzz.
	@for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t##*:}; echo "== $$name ($$pkg, $(FUZZTIME))"; \
		$(GO) test -run '^$$' -fuzz="^$$name\$$" -fuzztime=$(FUZZTIME) -parallel=1 $$pkg; \
	done

# Load for test-loaded, e.g. LOAD_WORKERS=4 (default: one per core).
LOAD_WORKERS ?=

.PHONY: test-loaded
test-loaded: envtest-assets $(HELM) ## Run the Go tests while every core is also busy with other work (hack/load), as on a shared CI box.
	KUBEBUILDER_ASSETS="$$(hack/envtest/build.sh --print-dir)" HELM=$(HELM) LOAD_WORKERS=$(LOAD_WORKERS) \
		GO=$(GO) GO_TEST_FLAGS="$(GO_TEST_FLAGS)" RACE="$(RACE)" $(GO_BUILD_ENV) hack/load/run.sh hack/test-go.sh $(PKGS)

.PHONY: envtest-assets
envtest-assets: ## Build kube-apiserver and etcd, generate ASO's CRDs, build CAPZ's webhooks (v1.23.0, v1.27.0) for tests (cached; ~8-15 min the first time).
	@hack/envtest/build.sh >/dev/null
	@hack/asocrds/generate.sh >/dev/null
	@hack/build-cached.sh capzwebhooks go.v1.23.0.mod >/dev/null
	@hack/build-cached.sh capzwebhooks >/dev/null

# golangci-lint type-checks every package, tests included, inside its own
# timeout. On a cold build cache and a busy machine, compiling the Azure SDK
# and Kubernetes libraries there once took its whole 10 minutes; go vet
# compiles the same packages first (outside that timeout, and a check of its
# own), so the linter finds the build cache warm.
.PHONY: lint
lint: $(GOLANGCI_LINT) ## Run go vet, then golangci-lint with the project's configuration (the operator's module and hack/image).
	$(GO_BUILD_ENV) $(GO) vet ./...
	$(GO_BUILD_ENV) $(GOLANGCI_LINT) run ./...
	cd hack/image && $(GO_BUILD_ENV) $(GO) vet ./... && $(GO_BUILD_ENV) $(GOLANGCI_LINT) run ./...

.PHONY: fmt
fmt: $(GOLANGCI_LINT) ## Format code (gofmt, goimports).
	$(GOLANGCI_LINT) fmt ./...

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Generate deepcopy code, CRDs and RBAC from markers.
	@if [ -d api ]; then \
		$(CONTROLLER_GEN) object paths=./api/... ; \
		$(CONTROLLER_GEN) crd paths=./api/... output:crd:artifacts:config=config/crd/bases ; \
	fi
	@if grep -rqs '+kubebuilder:rbac' --include='*.go' internal cmd; then \
		$(CONTROLLER_GEN) rbac:roleName=azure-private-endpoint-operator paths=./internal/... paths=./cmd/... \
			output:rbac:artifacts:config=config/rbac ; \
	fi
	@# The chart grants the same rules (a test compares them).
	sed -n '/^rules:/,$$p' config/rbac/role.yaml | tail -n +2 > $(CHART)/files/clusterrole-rules.yaml
	sed -n '/^rules:/,$$p' config/rbac/leader_election_role.yaml | tail -n +2 > $(CHART)/files/leader-election-rules.yaml
	sed -n '/^rules:/,$$p' config/rbac/mc_namespace_role.yaml | tail -n +2 > $(CHART)/files/mc-namespace-rules.yaml
	@if ls config/crd/bases/*.yaml >/dev/null 2>&1; then mkdir -p $(CHART)/crds && cp config/crd/bases/*.yaml $(CHART)/crds/; fi
	@# The generated blocks of docs/flags.md, docs/api.md and docs/operations.md.
	APEO_UPDATE_DOCS=1 $(GO) test -count=1 -run 'TestFlagReferenceIsCurrent|TestAPIReferenceIsCurrent|TestReasonTableIsCurrent' ./cmd/azure-private-endpoint-operator ./internal/docgen ./internal/explain >/dev/null

.PHONY: tidy
tidy: ## Tidy every Go module in the repository.
	$(GO) mod tidy
	for m in hack/tools hack/helm hack/image hack/asocrds hack/capzwebhooks hack/capzmanager hack/asomanager hack/envtest/kube-apiserver hack/envtest/kubectl hack/envtest/etcd; do (cd $$m && $(GO) mod tidy); done
	cd hack/capzwebhooks && $(GO) mod tidy -modfile=go.v1.23.0.mod
	cd hack/capzmanager && $(GO) mod tidy -modfile=go.v1.23.0.mod

.PHONY: clean
clean: ## Remove build output (the envtest cache outside the clone is kept).
	rm -rf $(BIN)

##@ Tools (pinned in hack/tools/go.mod)

$(GOLANGCI_LINT): $(TOOLS_DEPS)
	cd hack/tools && $(GO) build -o $@ github.com/golangci/golangci-lint/v2/cmd/golangci-lint

$(CONTROLLER_GEN): $(TOOLS_DEPS)
	cd hack/tools && $(GO) build -o $@ sigs.k8s.io/controller-tools/cmd/controller-gen

# helm has its own module: its dependencies never meet the operator's. The
# ldflags are those of helm's own Makefile: its version, and the Kubernetes
# version it renders and lints for (its k8s.io modules are v0.37).
HELM_VERSION := v3.22.0
HELM_LDFLAGS := -s -w -X helm.sh/helm/v3/internal/version.version=$(HELM_VERSION) \
	-X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMinor=37 \
	-X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=37
$(HELM): hack/helm/go.mod hack/helm/go.sum
	cd hack/helm && $(GO) build -ldflags '$(HELM_LDFLAGS)' -o $@ helm.sh/helm/v3/cmd/helm
