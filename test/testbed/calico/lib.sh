# shellcheck shell=bash
# Settings for building the pinned Calico from the Go module proxy.
# Sourced, not executed. Build-only for now: nothing here names a namespace,
# an address or anything of the running testbed.

# Calico v3.31.0: the monorepo commit b1f3c43f8437 that the tag v3.31.0 points
# at. The monorepo's tags (v3.31.0, ...) are not valid versions of a module
# without a /v3 suffix, so it is required by a pseudo-version; the proxy here
# serves this one, `@latest` only resolves to an older release-v3.28 commit.
CALICO_VERSION=v3.31.0
CALICO_MODULE_VERSION=v0.0.0-20251021213802-b1f3c43f8437
CALICO_COMMIT=b1f3c43f84370504e218eb5be8a34c81348f866a
# github.com/projectcalico/api (a separate repository the monorepo's api/ is
# published to) at the commit whose pkg/ is identical to api/pkg at v3.31.0.
CALICO_API_VERSION=v0.0.0-20251022175904-f2ab03771208

CALICO_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SVCTRACE_CACHE=${SVCTRACE_CACHE:-$HOME/.cache/svctrace}
CALICO_CACHE=$SVCTRACE_CACHE/calico-$CALICO_VERSION
CALICO_BIN=$CALICO_CACHE/bin
CALICO_CRDS=$CALICO_CACHE/crds

log() { printf '[calico %s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }
