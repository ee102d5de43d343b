# svctrace Makefile. Tool versions are pinned here; every target is runnable on a
# fresh machine (see README). `make help` lists the targets.
SHELL := /bin/bash
GO    ?= go

.PHONY: help build test
help: ## list targets
	@grep -hE '^[a-zA-Z0-9_-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-16s %s\n", $$1, $$2}'

build: ## build kubectl-svctrace and svctrace-collector into bin/
	$(GO) build -trimpath -o bin/ ./cmd/...

test: ## unit tests (no cluster needed)
	$(GO) test ./...

.PHONY: test-ebpf ebpf-fixtures
test-ebpf: ## Cilium's LB maps written by Cilium v1.20.2's own code, read by svctrace, checked against bpftool (root; own mount namespace and bpffs)
	cd test/ebpf/cilium && $(GO) test -count=1 ./...
ebpf-fixtures: ## rewrite the eBPF fixtures: observations of v1.20.2's maps (trace/testdata/ebpf), bpftool dumps of v1.15.19's writer (collectors/ebpf/testdata)
	cd test/ebpf/cilium && $(GO) test -count=1 ./... -args -update
	cd test/ebpf/cilium115 && $(GO) test -count=1 ./... -args -update

# Release and distribution; the scripts say what each step checks.
.PHONY: lint image dist krew-check clean tools
lint: ## gofmt -l, go mod tidy -diff, go vet, the pinned staticcheck, trace layout rules, no "testing" outside internal/testutil
	bash test/release/lint.sh
image: ## collector image, registry-free (testbed builder), checked against build/collector/
	bash test/release/image.sh
dist: ## goreleaser check + snapshot into dist/, then verify every archive
	bash test/release/dist.sh
krew-check: ## validate goreleaser's krew manifest (dist/krew/svctrace.yaml), install it with krew for real
	bash test/release/krew-check.sh
clean: ## remove bin/ and dist/ (CLEAN_CACHE=1 also removes the pinned tools)
	bash test/release/clean.sh
tools: ## build the pinned release tools (goreleaser, krew, staticcheck) into the cache
	bash test/release/tools.sh

# Local real cluster: see test/testbed/README.md.
.PHONY: deps testbed-up testbed-down testbed-status images e2e
deps: ## apt-install what the testbed and tests need (idempotent)
	bash test/testbed/deps.sh
testbed-up: deps ## bring the local cluster up (idempotent; installs deps, builds/caches binaries)
	bash test/testbed/up.sh
testbed-down: ## tear the testbed down completely (also after a crash)
	bash test/testbed/down.sh
testbed-status: ## show testbed processes and nodes
	bash test/testbed/status.sh
images: ## build the testbed images (pause, echo, coredns, collector) and import them into running nodes
	bash test/testbed/images.sh
e2e: deps ## bring the testbed up if needed, then run the end-to-end suite against it
	bash test/testbed/e2e.sh

.PHONY: e2e-cilium
e2e-cilium: ## (root, opt-in, not in ci) trace on the real Cilium agent in user-mode Linux; cold agent build ~30 min, see test/testbed/cilium/README.md
	bash test/testbed/cilium/build.sh
	SVCTRACE_E2E_CILIUM=1 nice $(GO) test -count=1 -v -timeout 60m ./test/e2e/cilium

.PHONY: bench-netfilter bench-ipvs bench-fleet
bench-netfilter: deps ## (root) netfilter readers vs full dumps at 1k/5k/10k Services; see test/bench/netfilter/README.md
	$(GO) run ./test/bench/netfilter/cmd/nfbench
bench-ipvs: deps ## (root) IPVS reader vs ipvsadm at 1k/5k/10k Services, in user-mode Linux; see test/bench/ipvs/README.md
	$(GO) run ./test/bench/ipvs/cmd/ipvsbench
bench-fleet: ## --all-nodes on 100/500/1,000 kwok nodes and a 5,000-endpoint Service (own apiserver on loopback); see test/bench/fleet/README.md
	test/bench/fleet/run.sh

# Renderer golden files: regenerate after an intended output change, then review the diff.
.PHONY: golden
golden: ## regenerate render/testdata goldens (go test ./render/... -update)
	$(GO) test ./render/... -update

# The judge's scenario goldens: recorded bundles re-judged by this build (see
# trace/testdata/scenarios/README.md). make test checks them; regenerate only
# after an intended judge change, then review the diff of every want.txt.
.PHONY: scenarios
scenarios: ## re-judge trace/testdata/scenarios' recorded bundles and rewrite their goldens (want.txt)
	$(GO) test ./trace/ -run '^TestScenarios$$' -count=1 -update

# The two commands of the README.
.PHONY: demo ci
demo: deps ## newcomer's main job: local cluster up, demo app with a deliberate fault, kubectl svctrace on it
	bash test/demo/demo.sh
ci: ## the whole test suite, as .ci/run runs it: deps, lint, unit tests, e2e on the testbed, release checks
	bash test/ci.sh
