#!/usr/bin/env bash
# Install the Debian packages the testbed and the e2e tests need. Idempotent and
# quick when everything is already installed (no apt-get update then).
set -euo pipefail
pkgs=(containerd runc containernetworking-plugins openssl socat ethtool curl ca-certificates)
# render's -o svg test opens the picture in a real headless browser.
pkgs+=(chromium fonts-dejavu-core)
# The IPVS node and benchmark: a user-mode Linux kernel (this host's kernel has
# no IPVS), its module loader, and the tools kube-proxy's IPVS mode calls.
pkgs+=(user-mode-linux kmod ipvsadm ipset)
# uml/xstate-preload.c, which lets that kernel run on CPUs with AMX, is built
# with the C compiler.
pkgs+=(gcc libc6-dev)
# make test-ebpf cross-checks svctrace's decoding of Cilium's maps with bpftool.
pkgs+=(bpftool)
# The collector image's packages are unpacked from the host's .debs by
# images.sh, so they are host dependencies too: one list, the image's.
list="$(dirname "$0")/../../build/collector/packages.txt"
mapfile -t image_pkgs < <(sed 's/#.*//' "$list" | tr -s ' \t' '\n' | grep -v '^$')
((${#image_pkgs[@]} > 0)) || { echo "deps: no packages in $list" >&2; exit 1; }
pkgs=("${image_pkgs[@]}" "${pkgs[@]}")
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
	echo "deps: all installed (${pkgs[*]})"
	exit 0
fi
[[ $(id -u) == 0 ]] || { echo "deps: need root to install ${missing[*]}" >&2; exit 1; }
export DEBIAN_FRONTEND=noninteractive
echo "deps: installing ${missing[*]}"
apt-get update -q || { echo "deps: apt-get update failed; cannot install ${missing[*]}" >&2; exit 1; }
apt-get install -y -q --no-install-recommends "${missing[@]}" ||
	{ echo "deps: apt-get could not install: ${missing[*]} (see above for which)" >&2; exit 1; }
echo "deps: installed ${missing[*]}"
