#!/usr/bin/env bash
# dist.sh (`make dist`): the release snapshot, exactly as CI builds it.
# Builds the pinned goreleaser once (test/release/tools.sh), runs
# `goreleaser check`, then `goreleaser release --snapshot --clean` with every
# publishing step skipped, then verifies the archives (dist-check.sh).
# Needs no git tag and no network but the Go module proxy.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
bash test/release/deps.sh
export CGO_ENABLED=0
goreleaser=$(bash test/release/tools.sh goreleaser)
# goreleaser reads the commit only when `git ls-remote --get-url` works; a
# clone without a remote would otherwise be stamped commit "none". Give such a
# checkout the project's URL through the environment (no config is written).
if [[ -z $(git remote) ]]; then
  export GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=remote.origin.url \
    GIT_CONFIG_VALUE_0=https://github.com/svctrace/kubectl-svctrace.git
fi
t0=$SECONDS
"$goreleaser" check
"$goreleaser" release --snapshot --clean --skip=publish,announce,sign,sbom,docker
echo "dist.sh: snapshot built in $((SECONDS - t0))s" >&2
bash test/release/dist-check.sh dist
