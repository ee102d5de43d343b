#!/usr/bin/env bash
# tools.sh builds the release tools svctrace pins, from the Go module proxy, into a
# cache outside the tree keyed by version, and prints the path of each binary:
#   ${SVCTRACE_CACHE:-$HOME/.cache/svctrace}/tools/<name>-<version>/<name>
# A tool already in the cache is not rebuilt. Usage: tools.sh [name...]
# (no name: all of them). Names: goreleaser krew validate-krew-manifest staticcheck.
set -euo pipefail

# The pins. Change a version here only; the cache key follows it.
declare -A MODULE=(
  [goreleaser]=github.com/goreleaser/goreleaser/v2
  [krew]=sigs.k8s.io/krew/cmd/krew
  [validate-krew-manifest]=sigs.k8s.io/krew/cmd/validate-krew-manifest
  [staticcheck]=honnef.co/go/tools/cmd/staticcheck
)
declare -A VERSION=(
  [goreleaser]=v2.15.1
  [krew]=v0.4.3
  [validate-krew-manifest]=v0.4.3
  [staticcheck]=v0.8.2
)
ORDER=(goreleaser krew validate-krew-manifest staticcheck)

CACHE="${SVCTRACE_CACHE:-$HOME/.cache/svctrace}"
GO="${GO:-go}"

tool_path() { # name -> path of its cached binary
  echo "$CACHE/tools/$1-${VERSION[$1]}/$1"
}

build() {
  local name=$1 dir bin start
  if [[ -z "${MODULE[$name]:-}" ]]; then
    echo "tools.sh: unknown tool $name (known: ${ORDER[*]})" >&2
    return 2
  fi
  bin=$(tool_path "$name")
  dir=$(dirname "$bin")
  if [[ -x "$bin" ]]; then
    echo "$bin"
    return 0
  fi
  mkdir -p "$dir"
  start=$SECONDS
  echo "tools.sh: building $name ${VERSION[$name]} from ${MODULE[$name]} (first time only)" >&2
  # Outside the work tree and without the caller's GOFLAGS: `go install mod@version`
  # resolves the tool's own go.mod, never ours.
  (
    cd "$dir"
    GOWORK=off GOFLAGS= CGO_ENABLED=0 GOBIN="$dir/.tmp" \
      "$GO" install -trimpath "${MODULE[$name]}@${VERSION[$name]}"
  )
  mv "$dir/.tmp/$name" "$bin"
  rmdir "$dir/.tmp"
  echo "tools.sh: built $name ${VERSION[$name]} in $((SECONDS - start))s" >&2
  echo "$bin"
}

case "${1:-}" in
  --path) shift; for n in "$@"; do tool_path "$n"; done; exit 0 ;;
esac

names=("$@")
[[ ${#names[@]} -gt 0 ]] || names=("${ORDER[@]}")
for n in "${names[@]}"; do build "$n"; done
