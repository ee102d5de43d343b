#!/usr/bin/env bash
# make ci: the project's whole test suite, exactly what .ci/run runs and the
# README's test command. Runs on a fresh machine as root: every step installs
# or builds what it needs (apt packages, pinned Go tools and cluster binaries,
# cached outside the tree by version).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
step() { printf '\n==> %s (%s)\n' "$*" "$(date -u +%H:%M:%S)"; }

step "deps";        make --no-print-directory deps
step "lint";        make --no-print-directory lint
step "unit tests";  make --no-print-directory test
step "ebpf maps";   make --no-print-directory test-ebpf
step "e2e";         make --no-print-directory e2e
step "dist";        make --no-print-directory dist
step "krew-check";  make --no-print-directory krew-check
step "done"
