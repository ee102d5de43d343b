#!/usr/bin/env bash
# deps.sh installs the few Debian tools the release scripts use that a minimal
# machine may lack (unzip for the Windows archives, git for goreleaser).
set -euo pipefail
need=()
command -v unzip >/dev/null || need+=(unzip)
command -v git >/dev/null || need+=(git)
command -v sha256sum >/dev/null || need+=(coreutils)
if ((${#need[@]})); then
  if [[ $(id -u) != 0 ]]; then
    echo "deps.sh: missing ${need[*]}; install them (apt-get install ${need[*]})" >&2
    exit 1
  fi
  echo "deps.sh: installing ${need[*]}" >&2
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >&2
fi
