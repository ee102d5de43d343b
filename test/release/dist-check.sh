#!/usr/bin/env bash
# dist-check.sh DIST: verifies a goreleaser snapshot in DIST (default dist/):
#  - a kubectl-svctrace archive for each of the six platforms (zip on Windows),
#    each holding LICENSE, the completion script and the binary, and that binary
#    built for that platform, CGO-free and -trimpath (its Go build info says so);
#  - a svctrace-collector archive for linux amd64 and arm64;
#  - checksums.txt covers every archive and matches;
#  - the linux/amd64 plugin runs `version` and prints the snapshot version and commit.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
dist=$(cd "${1:-$root/dist}" && pwd)
GO=${GO:-go}
fails=0
fail() { echo "FAIL: $*" >&2; fails=$((fails + 1)); }
ok() { echo "ok:   $*"; }

version=$(sed -n 's/.*"version":"\([^"]*\)".*/\1/p' "$dist/metadata.json")
commit=$(sed -n 's/.*"commit":"\([^"]*\)".*/\1/p' "$dist/metadata.json")
[[ -n $version && -n $commit ]] || { echo "FAIL: no version/commit in $dist/metadata.json" >&2; exit 1; }
echo "snapshot version $version, commit $commit"
[[ $commit =~ ^[0-9a-f]{40}$ ]] || fail "goreleaser stamped commit \"$commit\", not a git commit"
[[ $version != *-none ]] || fail "snapshot version $version has no commit in it"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

list() { # archive -> member names, one a line
  case $1 in
    *.zip) unzip -Z1 "$1" ;;
    *.tar.gz) tar -tzf "$1" ;;
  esac
}
extract() { # archive dir
  mkdir -p "$2"
  case $1 in
    *.zip) unzip -q -o "$1" -d "$2" ;;
    *.tar.gz) tar -xzf "$1" -C "$2" ;;
  esac
}
buildinfo_is() { # binary goos goarch
  local info
  info=$("$GO" version -m "$1") || { fail "$1: no Go build info"; return; }
  grep -qE "^\s+build\s+GOOS=$2$" <<<"$info" || fail "$1: not built for GOOS=$2"
  grep -qE "^\s+build\s+GOARCH=$3$" <<<"$info" || fail "$1: not built for GOARCH=$3"
  grep -qE "^\s+build\s+CGO_ENABLED=0$" <<<"$info" || fail "$1: built with cgo"
  grep -qE "^\s+build\s+-trimpath=true$" <<<"$info" || fail "$1: not built with -trimpath"
  # -trimpath keeps -ldflags out of the build info; the -X value is in the data.
  grep -aqF "$version" "$1" || fail "$1: the version $version (-X main.version) is not in the binary"
}
check_archive() { # name binary goos goarch extra-members...
  local name=$1 bin=$2 goos=$3 goarch=$4; shift 4
  local a=$dist/$name members m before=$fails
  if [[ ! -f $a ]]; then fail "$name missing"; return; fi
  members=$(list "$a")
  for m in "$bin" LICENSE "$@"; do
    grep -qxF "$m" <<<"$members" || fail "$name lacks $m (has: $(tr '\n' ' ' <<<"$members"))"
  done
  extract "$a" "$work/$name.d"
  buildinfo_is "$work/$name.d/$bin" "$goos" "$goarch"
  cmp -s "$work/$name.d/LICENSE" "$root/LICENSE" || fail "$name: LICENSE differs from the tree's"
  ((fails == before)) && ok "$name: $bin ($goos/$goarch, CGO-free, -trimpath, $version) + LICENSE $*"
}

for goos in linux darwin windows; do
  for goarch in amd64 arm64; do
    if [[ $goos == windows ]]; then
      check_archive "kubectl-svctrace_${goos}_${goarch}.zip" kubectl-svctrace.exe "$goos" "$goarch" kubectl_complete-svctrace
    else
      check_archive "kubectl-svctrace_${goos}_${goarch}.tar.gz" kubectl-svctrace "$goos" "$goarch" kubectl_complete-svctrace
    fi
  done
done
for goarch in amd64 arm64; do
  check_archive "svctrace-collector_linux_${goarch}.tar.gz" svctrace-collector linux "$goarch"
done

# Every archive is in checksums.txt and the sums match.
n_arch=$(find "$dist" -maxdepth 1 \( -name '*.tar.gz' -o -name '*.zip' \) | wc -l)
n_sums=$(wc -l <"$dist/checksums.txt")
[[ $n_arch == 8 ]] || fail "expected 8 archives in $dist, found $n_arch"
[[ $n_sums == "$n_arch" ]] || fail "checksums.txt has $n_sums lines for $n_arch archives"
if (cd "$dist" && sha256sum --quiet -c checksums.txt); then ok "checksums.txt matches $n_sums archives"; else fail "checksums.txt does not match"; fi

# The linux/amd64 plugin runs and reports the snapshot it was built as.
if [[ $(uname -m) == x86_64 && $(uname -s) == Linux ]]; then
  bin=$work/kubectl-svctrace_linux_amd64.tar.gz.d/kubectl-svctrace
  if out=$("$bin" version 2>&1); then
    grep -qF "$version" <<<"$out" || fail "'kubectl-svctrace version' does not print $version: $out"
    grep -qF "${commit:0:7}" <<<"$out" || fail "'kubectl-svctrace version' does not print commit ${commit:0:7}: $out"
    ok "linux/amd64 'version' prints $version ($(head -n1 <<<"$out"))"
  else
    fail "'kubectl-svctrace version' failed: $out"
  fi
else
  echo "skip: not on linux/amd64, the plugin's version run is not checked" >&2
fi

echo "---"
du -b "$dist"/*.tar.gz "$dist"/*.zip | awk '{printf "size: %-50s %6.1f MiB\n", $2, $1/1048576}' | sed "s|$dist/||"
if ((fails)); then echo "dist-check: $fails failed" >&2; exit 1; fi
echo "dist-check: all checks passed"
