#!/usr/bin/env bash
# krew-check.sh (`make krew-check`): the krew manifest goreleaser's krews pipe
# wrote during `make dist` (dist/krew/svctrace.yaml, the only manifest there
# is) is one krew accepts and installs, for the archives beside it. Steps:
#  1. the manifest is this snapshot's (version v<dist/metadata.json version>),
#     names six distinct platforms, each the release URL of its os/arch's
#     archive with that archive's sha256 from dist/checksums.txt and bin
#     kubectl-svctrace (.exe on windows); validate-krew-manifest, krew's own
#     validator, accepts it (structure);
#  2. a copy whose uris point at a loopback server over dist/ (nothing else
#     changed) lets validate-krew-manifest install every one of the six
#     platforms through `kubectl krew install` (each must download, match its
#     sha256, unpack and hold the bin);
#  3. install for real: `krew install --manifest=dist/krew/svctrace.yaml
#     --archive=<linux_amd64 archive>` into a temporary KREW_ROOT; the pinned
#     kubectl finds it in `kubectl plugin list`, `kubectl svctrace version`
#     prints the snapshot version, and kubectl's plugin completion reaches the
#     plugin through kubectl_complete-svctrace.
# Runs `make dist` first when dist/ has no snapshot. Tools: test/release/tools.sh.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
# HOME is replaced below; keep the caches where they are.
export SVCTRACE_CACHE=${SVCTRACE_CACHE:-$HOME/.cache/svctrace}
GOPATH=$(go env GOPATH) GOCACHE=$(go env GOCACHE) GOMODCACHE=$(go env GOMODCACHE)
export GOPATH GOCACHE GOMODCACHE
dist=$root/dist
t0=$SECONDS
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
ok() { echo "ok:   $*"; }

[[ -f $dist/checksums.txt && -f $dist/metadata.json && -f $dist/krew/svctrace.yaml ]] || bash test/release/dist.sh
version=$(sed -n 's/.*"version":"\([^"]*\)".*/\1/p' "$dist/metadata.json")
tag=v${version#v}
# The git tag goreleaser released from: the release URLs carry it (a snapshot's
# is the last tag, or v0.0.0; a release's is v<version>).
git_tag=$(sed -n 's/.*"tag":"\([^"]*\)".*/\1/p' "$dist/metadata.json")

krew=$(bash test/release/tools.sh krew)
validate=$(bash test/release/tools.sh validate-krew-manifest)

work=$(mktemp -d)
server_pid=""
cleanup() {
  [[ -n $server_pid ]] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
# Nothing here may read the machine's kubeconfig or krew home.
export HOME=$work/home KUBECONFIG=$work/home/no-kubeconfig KREW_NO_UPGRADE_CHECK=1
mkdir -p "$HOME"

# 1. The release manifest as goreleaser wrote it: this snapshot's, six
# platforms, each the right archive and sum; then krew's structural validation.
manifest=$dist/krew/svctrace.yaml
if grep -qE "^  version: $tag$" "$manifest"; then ok "$manifest is this snapshot's ($tag)"
else fail "$manifest is not version $tag (a stale dist/? run 'make dist')"; fi
# One line per spec.platforms entry: os/arch bin uri sha256 (goreleaser writes
# each entry as bin, uri, sha256 and selector.matchLabels os and arch).
platforms=$(awk '
  function flush() { if (os != "") print os "/" arch, bin, uri, sha; os = arch = bin = uri = sha = "" }
  /^  platforms:/ { inp = 1; next }
  inp && /^  [^ ]/ { flush(); inp = 0 }
  !inp { next }
  /^ *- / { flush(); sub(/- /, "  ") }
  { gsub(/"/, "") }
  $1 == "bin:" { bin = $2 }
  $1 == "uri:" { uri = $2 }
  $1 == "sha256:" { sha = $2 }
  $1 == "os:" { os = $2 }
  $1 == "arch:" { arch = $2 }
  END { flush() }
' "$manifest")
want_platforms="darwin/amd64 darwin/arm64 linux/amd64 linux/arm64 windows/amd64 windows/arm64"
got_platforms=$(awk '{print $1}' <<<"$platforms" | sort | tr '\n' ' ' | sed 's/ $//')
if [[ $got_platforms == "$want_platforms" ]]; then ok "six platforms, each once: $got_platforms"
else fail "platforms are \"$got_platforms\", want \"$want_platforms\""; fi
before=$fails
while read -r osarch bin uri sha; do
  goos=${osarch%/*} goarch=${osarch#*/} want_bin=kubectl-svctrace ext=tar.gz
  [[ $goos == windows ]] && want_bin=kubectl-svctrace.exe ext=zip
  archive=kubectl-svctrace_${goos}_${goarch}.$ext
  want_uri=https://github.com/svctrace/kubectl-svctrace/releases/download/$git_tag/$archive
  want_sha=$(awk -v a="$archive" '$2 == a {print $1}' "$dist/checksums.txt")
  [[ $bin == "$want_bin" ]] || fail "$osarch: bin $bin, want $want_bin"
  [[ $uri == "$want_uri" ]] || fail "$osarch: uri $uri, want $want_uri"
  [[ -n $want_sha && $sha == "$want_sha" ]] || fail "$osarch: sha256 $sha, checksums.txt has \"$want_sha\" for $archive"
done <<<"$platforms"
((fails == before)) && ok "each platform: its archive's release uri, its sha256 from checksums.txt, bin kubectl-svctrace(.exe)"
if "$validate" -manifest "$manifest" -skip-install >"$work/validate.log" 2>&1; then
  ok "validate-krew-manifest $manifest (structure)"
else
  cat "$work/validate.log" >&2; fail "validate-krew-manifest rejected $manifest"
fi

# 2. Every platform installs through krew, from a loopback server over dist/.
# validate-krew-manifest runs `kubectl krew install` for each platform; kubectl
# only dispatches to the krew plugin there, so a two-line stand-in does it and
# this step needs no kubectl build. Step 3 uses the real, pinned kubectl.
mkdir -p "$work/bin" "$work/local"
printf '#!/bin/sh\n[ "$1" = krew ] || exit 127\nshift; exec %q "$@"\n' "$krew" >"$work/bin/kubectl"
chmod +x "$work/bin/kubectl"
go build -o "$work/fileserve" ./test/release/fileserve
"$work/fileserve" -dir "$dist" -url-file "$work/url" -timeout 10m 2>"$work/fileserve.log" &
server_pid=$!
for _ in $(seq 50); do [[ -s $work/url ]] && break; sleep 0.1; done
[[ -s $work/url ]] || { cat "$work/fileserve.log" >&2; echo "FAIL: loopback file server did not start" >&2; exit 1; }
base=$(cat "$work/url")
# Only the uris change: each becomes BASE/<the archive name it ends in>.
sed -E "s|^( *uri: ).*/([^/]+)$|\1${base%/}/\2|" "$manifest" >"$work/local/svctrace.yaml"
if PATH=$work/bin:$PATH "$validate" -manifest "$work/local/svctrace.yaml" >"$work/validate-install.log" 2>&1 &&
  installed=$(grep -o 'all [0-9]* spec.platforms installed fine' "$work/validate-install.log") &&
  [[ $installed == "all 6 spec.platforms installed fine" ]]; then
  ok "validate-krew-manifest installed all platforms: $installed"
else
  cat "$work/validate-install.log" >&2; fail "validate-krew-manifest did not install all six platforms"
fi
kill "$server_pid" 2>/dev/null; wait "$server_pid" 2>/dev/null || true; server_pid=""

# 3. A real install from the release manifest and the linux/amd64 archive.
# The pinned kubectl, built by the testbed (test/testbed/build.sh) into the cache.
kubectl=$SVCTRACE_CACHE/k8s-v1.37.2/bin/kubectl
if [[ -f test/testbed/lib.sh ]]; then
  kubectl=$(bash -c 'source test/testbed/lib.sh && echo "$K8S_BIN/kubectl"')
fi
if [[ ! -x $kubectl ]]; then
  if [[ -f test/testbed/build.sh ]]; then
    echo "krew-check: pinned kubectl missing; building the testbed binaries (test/testbed/build.sh)" >&2
    bash test/testbed/build.sh
  fi
  [[ -x $kubectl ]] || { echo "FAIL: pinned kubectl not found at $kubectl and test/testbed/build.sh did not build it" >&2; exit 1; }
fi
export KREW_ROOT=$work/krew-root
archive=$dist/kubectl-svctrace_linux_amd64.tar.gz
if "$krew" install --manifest="$manifest" --archive="$archive" >"$work/install.log" 2>&1; then
  ok "krew install --manifest=dist/krew/svctrace.yaml --archive=$(basename "$archive")"
else
  cat "$work/install.log" >&2; fail "krew install failed"
fi
# Only krew's bin dir and the pinned kubectl: the plugin must come from krew.
plugin_path=$KREW_ROOT/bin:$(dirname "$kubectl"):/usr/bin:/bin
if list=$(PATH=$plugin_path kubectl plugin list 2>&1) && grep -qF "$KREW_ROOT/bin/kubectl-svctrace" <<<"$list"; then
  ok "kubectl plugin list finds $KREW_ROOT/bin/kubectl-svctrace"
else
  fail "kubectl plugin list does not list kubectl-svctrace: $list"
fi
if out=$(PATH=$plugin_path kubectl svctrace version 2>&1) && grep -qF "$version" <<<"$out"; then
  ok "kubectl svctrace version: $(head -n1 <<<"$out")"
else
  fail "kubectl svctrace version did not print $version: $out"
fi
# krew's receipt records what it installed (krew list needs an index; there is none offline).
receipt=$KREW_ROOT/receipts/svctrace.yaml
if [[ -f $receipt ]] && grep -qE "^\s+version: $tag\s*$" "$receipt"; then
  ok "krew receipt: svctrace $tag"
else
  fail "no krew receipt for svctrace $tag at $receipt"
fi
# kubectl >= 1.26 completes plugin arguments through kubectl_complete-<name> on
# PATH; krew links only the bin, so put the installed copy's directory on PATH.
store=$(dirname "$(readlink -f "$KREW_ROOT/bin/kubectl-svctrace")")
if out=$(PATH=$plugin_path:$store kubectl __complete svctrace ver 2>/dev/null) && grep -qE '^version(\s|$)' <<<"$out"; then
  ok "kubectl __complete svctrace ver -> $(grep -E '^version' <<<"$out" | cut -f1) (through kubectl_complete-svctrace)"
else
  fail "kubectl plugin completion did not reach the plugin: $out"
fi

echo "krew-check: $((SECONDS - t0))s"
if ((fails)); then echo "krew-check: $fails failed" >&2; exit 1; fi
echo "krew-check: all checks passed"
