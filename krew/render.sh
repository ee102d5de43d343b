#!/usr/bin/env bash
# render.sh turns the krew manifest template (krew-release-bot syntax) into a
# plugin manifest for the archives goreleaser just built, with their real
# sha256 from dist/checksums.txt. It does what the release bot does after a
# release, without the network:
#   {{ .TagName }}                              -> the tag (v + dist/metadata.json version)
#   {{ addURIAndSha "URL" .TagName }}          -> uri: URL / sha256: <sha of the URL's file>
# With -b BASE, each uri becomes BASE/<archive name> instead of the release URL
# (e.g. a loopback server over dist/ for krew's install-every-platform check).
#
# Usage: krew/render.sh [-d DIST] [-t TAG] [-b BASE_URL] [-i TEMPLATE] [-o OUT]
# Defaults: -d dist, -t from DIST/metadata.json, -i krew/svctrace.yaml.tmpl, -o stdout.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
dist=$root/dist tag="" base="" tmpl=$root/krew/svctrace.yaml.tmpl out=/dev/stdout
while getopts "d:t:b:i:o:" opt; do
  case $opt in
    d) dist=$OPTARG ;; t) tag=$OPTARG ;; b) base=${OPTARG%/} ;;
    i) tmpl=$OPTARG ;; o) out=$OPTARG ;;
    *) sed -n '2,14p' "$0" >&2; exit 2 ;;
  esac
done

die() { echo "krew/render.sh: $*" >&2; exit 1; }
sums=$dist/checksums.txt
[[ -f $sums ]] || die "$sums not found: run 'make dist' first"
if [[ -z $tag ]]; then
  [[ -f $dist/metadata.json ]] || die "$dist/metadata.json not found and no -t TAG given"
  version=$(sed -n 's/.*"version":"\([^"]*\)".*/\1/p' "$dist/metadata.json")
  [[ -n $version ]] || die "no version in $dist/metadata.json"
  tag=v${version#v}
fi

rendered=$(awk -v tag="$tag" -v base="$base" -v sums="$sums" '
  BEGIN {
    while ((getline line < sums) > 0) {
      n = split(line, f, /[ \t]+/)
      if (n >= 2) { name = f[n]; sub(/^\*/, "", name); sha[name] = f[1] }
    }
    close(sums)
    if (length(sha) == 0) { print "render.sh: no checksums in " sums > "/dev/stderr"; exit 1 }
  }
  /\{\{ *addURIAndSha / {
    indent = $0; sub(/[^ ].*$/, "", indent)
    if (!match($0, /"[^"]*"/)) { print "render.sh: no URL in: " $0 > "/dev/stderr"; bad = 1; exit 1 }
    url = substr($0, RSTART + 1, RLENGTH - 2)
    gsub(/\{\{ *\.TagName *\}\}/, tag, url)
    file = url; sub(/.*\//, "", file)
    if (!(file in sha)) { print "render.sh: " file " is not in " sums > "/dev/stderr"; bad = 1; exit 1 }
    if (base != "") url = base "/" file
    print indent "uri: " url
    print indent "sha256: \"" sha[file] "\""  # quoted: an all-digit sum is not a YAML number
    next
  }
  { gsub(/\{\{ *\.TagName *\}\}/, tag); print }
' "$tmpl")
if grep -n '{{' <<<"$rendered" >&2; then
  die "template placeholders left unrendered (above)"
fi
printf '%s\n' "$rendered" >"$out"
