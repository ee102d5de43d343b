# svctrace Makefile. Tool versions are pinned here; every target is runnable on a
# fresh machine (see README). `make help` lists the targets.
SHELL := /bin/bash
GO    ?= go
export GOFLAGS ?= -mod=mod

.PHONY: help build test
help: ## list targets
	@grep -hE '^[a-zA-Z0-9_-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-16s %s\n", $$1, $$2}'

build: ## build kubectl-svctrace and svctrace-collector into bin/
	$(GO) build -trimpath -o bin/ ./cmd/...

test: ## unit tests (no cluster needed)
	$(GO) test ./...
