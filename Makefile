# dsbench: a DaemonSet controller and the KWOK scale-test harness that proves it.
# `make help` lists the targets.

SHELL := /bin/bash
GO ?= go
CACHE ?= $(CURDIR)/.cache
BIN := $(CACHE)/bin
export DSBENCH_CACHE := $(CACHE)

# Integration tests fail, instead of skipping, when they cannot get a cluster.
TEST_ENV := DSBENCH_REQUIRE_CLUSTER=1
TEST_TIMEOUT ?= 35m
BENCH_FLAGS ?=

.PHONY: help tools build test test-unit bench bench-baseline bench-chaos bench-scale bench-targets bench-join-leave bench-memory mutants verify fuzz clean cleanup-test-clusters

help: ## Show this help.
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  %-22s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

tools: ## Build the pinned control plane (k8s v1.36.4, etcd, kwok v0.8.0) and benchstat into .cache/bin; cached.
	@bash kwok/tools/build.sh $(BIN)
	@bash kwok/tools/benchstat.sh $(BIN)

build: ## Build the controller and the harness CLI into .cache/.
	$(GO) build -o $(CACHE)/daemonset-controller ./cmd/daemonset-controller
	$(GO) build -o $(CACHE)/dsbench ./cmd/dsbench

test: tools build ## Run every test, integration tests on real KWOK clusters included.
	@status=0; $(TEST_ENV) $(GO) test -timeout $(TEST_TIMEOUT) -count=1 ./... || status=$$?; \
	  $(MAKE) --no-print-directory cleanup-test-clusters; exit $$status

test-unit: ## Run the tests that need no cluster.
	$(GO) test -short -count=1 ./...

cleanup-test-clusters: ## Stop any test cluster that a crashed or interrupted test left behind.
	@$(CACHE)/dsbench cluster down --all --workdir $(CACHE)/kwok-test 2>/dev/null || true

bench: tools build ## Run the default scenario suite against ours and upstream, write reports/out/<time>/.
	$(CACHE)/dsbench bench $(BENCH_FLAGS)

bench-baseline: tools build ## Re-measure and overwrite bench/baseline.json on purpose.
	$(CACHE)/dsbench bench --write-baseline bench/baseline.json $(BENCH_FLAGS)

CHAOS_SCENARIOS ?= chaos-kill-storm chaos-reject-creates chaos-apiserver-restart chaos-slow-api chaos-conflicting-writers chaos-write-timeouts

bench-chaos: tools build ## Run the fault scenarios (kill storms, refused creates, API server restart, slow API, conflicting writers, write timeouts) against ours and upstream; report each fault: injected, survived, violations, recovery, API calls.
	$(CACHE)/dsbench run --controller ours,upstream $(CHAOS_FLAGS) $(CHAOS_SCENARIOS)

SCALE_SIZES ?= 100,500,1000,2000,5000
SCALE_SCENARIOS ?= bench-rollout
SCALE_FLAGS ?=

bench-scale: tools build ## Run SCALE_SCENARIOS at each of SCALE_SIZES nodes for ours, upstream and the floor; fit cost against nodes, plot the curves, write reports/out/<time>/scale.md.
	$(CACHE)/dsbench scale --sizes $(SCALE_SIZES) $(SCALE_FLAGS) $(SCALE_SCENARIOS)

TARGETS_NODES ?= 1000
TARGETS_SCENARIOS ?= bench-rollout-surge bench-repair
TARGETS_REPS ?= 5
TARGETS_FLAGS ?=

bench-targets: tools build ## The performance targets beyond make bench at TARGETS_NODES (1000) nodes, TARGETS_REPS interleaved runs each: maxSurge rollout and repair of 10% and 50% of nodes (ours, ours-direct, upstream, floor), then many-daemonsets (no floor: it adopts no orphans).
	$(CACHE)/dsbench run --nodes $(TARGETS_NODES) --repetitions $(TARGETS_REPS) --controller ours,ours-direct,upstream,floor $(TARGETS_FLAGS) $(TARGETS_SCENARIOS)
	$(CACHE)/dsbench run --nodes $(TARGETS_NODES) --repetitions $(TARGETS_REPS) --controller ours,ours-direct,upstream $(TARGETS_FLAGS) many-daemonsets

CHURN_NODES ?= 5000
CHURN_REPS ?= 3
CHURN_FLAGS ?=

bench-join-leave: tools build ## The node-churn target: 10% of the nodes join while 10% leave, each over 10 s (50 a second each at CHURN_NODES=5000), CHURN_REPS interleaved runs of ours, ours-direct, upstream and the floor.
	$(CACHE)/dsbench run --nodes $(CHURN_NODES) --repetitions $(CHURN_REPS) --controller ours,ours-direct,upstream,floor $(CHURN_FLAGS) bench-join-leave

MEMORY_NODES ?= 5000
MEMORY_REPS ?= 3
MEMORY_FLAGS ?=

bench-memory: tools build ## The memory target: 3 DaemonSets on every node of MEMORY_NODES=5000 (15,000 pods), created, then one rolled; MEMORY_REPS interleaved runs of ours and upstream; compare "controller peak RSS".
	$(CACHE)/dsbench run --nodes $(MEMORY_NODES) --repetitions $(MEMORY_REPS) --controller ours,upstream $(MEMORY_FLAGS) bench-memory

mutants: tools build ## Play each broken variant of our controller on the scenarios that exercise its bug (100 nodes); print which invariant caught it.
	$(GO) build -tags mutants -o $(CACHE)/daemonset-controller-mutants ./cmd/daemonset-controller
	$(CACHE)/dsbench mutants $(MUTANTS_FLAGS)

verify: ## gofmt, go vet, and go mod tidy leaving no diff.
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	@cp go.mod /tmp/dsbench-go.mod.bak; cp go.sum /tmp/dsbench-go.sum.bak; $(GO) mod tidy; \
	  if ! git diff --quiet -- go.mod go.sum; then echo "go mod tidy changed go.mod/go.sum"; git diff -- go.mod go.sum | head -40; \
	  cp /tmp/dsbench-go.mod.bak go.mod; cp /tmp/dsbench-go.sum.bak go.sum; exit 1; fi

# Minimizing a new input may otherwise take a minute of a short run.
FUZZ_FLAGS = -fuzztime $${FUZZTIME:-30s} -fuzzminimizetime 5s

fuzz: ## Fuzz the planner, the scenario and manifest loaders, the audit log check, the cgroup reader, the event correlator against client-go's, and the floor's kept view against a whole read, for FUZZTIME each (default 30s).
	$(GO) test ./controller/plan -run '^$$' -fuzz FuzzComputeInvariants $(FUZZ_FLAGS)
	$(GO) test ./scenarios -run '^$$' -fuzz '^FuzzLoad$$' $(FUZZ_FLAGS)
	$(GO) test ./scenarios -run '^$$' -fuzz '^FuzzManifest$$' $(FUZZ_FLAGS)
	$(GO) test ./bench/audit -run '^$$' -fuzz '^FuzzDecode$$' $(FUZZ_FLAGS)
	$(GO) test ./bench/audit -run '^$$' -fuzz '^FuzzCheckAgreesWithReference$$' $(FUZZ_FLAGS)
	$(GO) test ./cmd/daemonset-controller -run '^$$' -fuzz '^FuzzCgroupMemoryLimit$$' $(FUZZ_FLAGS)
	$(GO) test ./controller/internal/eventsink -run '^$$' -fuzz '^FuzzCorrelatorAsClientGo$$' $(FUZZ_FLAGS)
	$(GO) test ./bench -run '^$$' -fuzz '^FuzzFloorViewMatchesAWholeRead$$' $(FUZZ_FLAGS)

clean: cleanup-test-clusters ## Stop clusters and remove build outputs and reports (keeps the control-plane cache).
	@$(CACHE)/dsbench cluster down --all 2>/dev/null || true
	rm -rf $(CACHE)/kwok $(CACHE)/kwok-test $(CACHE)/dsbench $(CACHE)/daemonset-controller reports/out
