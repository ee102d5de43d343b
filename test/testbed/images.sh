#!/usr/bin/env bash
# Build the testbed's container images as reproducible single-layer docker-archive
# tarballs (no registry) into $SVCTRACE_CACHE/images, and import them into every
# running testbed node's containerd.
#
#   images.sh                       all images; fails if ./cmd/svctrace-collector is missing
#   images.sh --optional-collector  skip the collector image (with a warning) if it is missing
#   images.sh --no-import           only build the tarballs
#
# Images: svctrace.local/pause:v1, svctrace.local/echo:v1, svctrace.local/coredns:v1.15.0,
#         svctrace.local/collector:dev (collector binary + the Debian packages listed in
#         build/collector/packages.txt, the release Dockerfile's list, unpacked from .debs).
set -euo pipefail
source "$(dirname "$0")/lib.sh"

optional_collector=0 do_import=1
for a in "$@"; do
	case $a in
	--optional-collector) optional_collector=1 ;;
	--no-import) do_import=0 ;;
	*) die "unknown flag $a" ;;
	esac
done

export CGO_ENABLED=0
mkdir -p "$IMAGES_DIR"
work=$(mktemp -d /tmp/svtb-images.XXXX)
[[ -n ${SVTB_KEEP_WORK:-} ]] || trap 'rm -rf "$work"' EXIT

gobuild() { # out pkg  (reproducible static build from the main module)
	(cd "$REPO_ROOT" && go build -trimpath -buildvcs=false -ldflags "-s -w" -o "$1" "$2")
}
pack() { # rootfs tag tarball entrypoint
	(cd "$REPO_ROOT" && go run ./test/testbed/cmd/imagebuild -root "$1" -tag "$2" -out "$IMAGES_DIR/$3" -entrypoint "$4")
}

t0=$(date +%s)
gobuild "$work/imagebuild" ./test/testbed/cmd/imagebuild
pack() { "$work/imagebuild" -root "$1" -tag "$2" -out "$IMAGES_DIR/$3" -entrypoint "$4"; }

# pause
mkdir -p "$work/pause"
gobuild "$work/pause/pause" ./test/testbed/cmd/pause
pack "$work/pause" svctrace.local/pause:v1 pause.tar /pause

# echo
mkdir -p "$work/echo/tmp" "$work/echo/etc"
gobuild "$work/echo/echo" ./test/testbed/cmd/echo
pack "$work/echo" svctrace.local/echo:v1 echo.tar /echo
# The same binary runs on the nodes as a probe client (echo get|tcp|udp|dns).
install -m 755 "$work/echo/echo" "$IMAGES_DIR/echo"

# coredns (binary from the version-keyed cache, see build.sh)
[[ -x $COREDNS_BIN/coredns ]] || die "CoreDNS not built yet: run test/testbed/build.sh"
mkdir -p "$work/coredns/etc/coredns"
cp "$COREDNS_BIN/coredns" "$work/coredns/coredns"
pack "$work/coredns" "svctrace.local/coredns:$COREDNS_VERSION" coredns.tar /coredns

# collector: tools from Debian packages + the collector binary.
build_collector_tools() { # rootfs
	local root=$1 debs=$SVCTRACE_CACHE/debs stage=$work/debstage libstage=$work/libstage
	mkdir -p "$debs" "$stage" "$libstage"
	chmod 755 "$debs"
	fetch() { # pkg -> path of its .deb: the version installed here if the mirror still has it, else the candidate
		local p=$1 v f
		v=$(dpkg-query -W -f='${Version}' "$p" 2>/dev/null) || die "package $p is not installed (run make deps)"
		f=$(ls "$debs/${p}_"*"${v#*:}_"*.deb 2>/dev/null | head -n1 || true)
		[[ -n $f ]] || f=$(ls "$debs/${p}_"*.deb 2>/dev/null | head -n1 || true)
		if [[ -z $f ]]; then
			(cd "$debs" && { apt-get download -q "$p=$v" >/dev/null 2>&1 || apt-get download -q "$p" >/dev/null 2>&1; }) ||
				die "apt-get download $p failed (apt-get update?)"
			f=$(ls "$debs/${p}_"*.deb | head -n1)
		fi
		echo "$f"
	}
	local p deb tools
	# One package list for both collector image builds: build/collector/packages.txt,
	# read the way the release Dockerfile reads it (sed 's/#.*//': comments and blank
	# lines ignored, every remaining word a package).
	[[ -f $COLLECTOR_PACKAGES ]] || die "$COLLECTOR_PACKAGES is missing: it is the collector image's package list"
	tools=$(sed -e 's/#.*//' "$COLLECTOR_PACKAGES" | xargs)
	[[ -n $tools ]] || die "$COLLECTOR_PACKAGES lists no package"
	for p in $tools; do deb=$(fetch "$p"); dpkg-deb -x "$deb" "$stage"; done
	rm -rf "$stage"/usr/share/{doc,man,lintian,bash-completion,zsh} "$stage"/etc/init.d "$stage"/usr/include
	# Which shared libraries do the ELF files need? Resolve them on this machine,
	# then take the files from the owning packages' .debs.
	local libs pkgs
	libs=$(find "$stage" -type f \( -perm -u+x -o -name '*.so*' \) -print0 |
		xargs -0 -n1 sh -c 'ldd "$1" 2>/dev/null || true' _ | awk '/=> \//{print $3} /^[ \t]*\/lib64\//{print $1}' | sort -u)
	pkgs=$(for l in $libs; do
		dpkg -S "$l" 2>/dev/null || dpkg -S "${l#/usr}" 2>/dev/null || dpkg -S "/usr$l" 2>/dev/null || die "no package owns $l"
	done | cut -d: -f1 | sort -u)
	for p in $pkgs; do deb=$(fetch "$p"); dpkg-deb -x "$deb" "$libstage"; done
	# Merge into a usr-merged root.
	mkdir -p "$root/usr/lib/x86_64-linux-gnu" "$root/usr/lib64" "$root/usr/sbin" "$root/usr/bin"
	local d
	for d in "$stage"/*; do
		case ${d##*/} in
		bin | sbin | lib | lib64) cp -a "$d/." "$root/usr/${d##*/}/" ;;
		*) cp -a "$d" "$root/" ;;
		esac
	done
	local l base src
	for l in $libs; do
		base=${l##*/}
		src=""
		for c in "$libstage${l#/usr}" "$libstage/usr${l#/usr}" "$libstage/lib/x86_64-linux-gnu/$base" "$libstage/usr/lib/x86_64-linux-gnu/$base"; do
			[[ -e $c ]] && { src=$c; break; }
		done
		[[ -n $src ]] || die "library $l not found in the downloaded packages ($pkgs)"
		if [[ $l == */lib64/* ]]; then
			cp -L "$src" "$root/usr/lib64/$base"
		else
			cp -L "$src" "$root/usr/lib/x86_64-linux-gnu/$base"
		fi
	done
	ln -s usr/bin "$root/bin"; ln -s usr/sbin "$root/sbin"; ln -s usr/lib "$root/lib"; ln -s usr/lib64 "$root/lib64"
	# Debian manages the unsuffixed names with update-alternatives; default to nft like Debian 12.
	for p in iptables iptables-save iptables-restore ip6tables ip6tables-save ip6tables-restore; do
		[[ -e $root/usr/sbin/$p ]] || ln -s "${p/tables/tables-nft}" "$root/usr/sbin/$p"
	done
	mkdir -p "$root/run" "$root/tmp" "$root/proc" "$root/sys" "$root/dev" "$root/var/run"
	chmod 1777 "$root/tmp"
	# The tools must actually run from this root.
	local check
	for check in "iptables-nft --version" "iptables-legacy --version" "iptables-nft-save --version" \
		"iptables-legacy-save --version" "nft --version" "conntrack --version" "ip -V"; do
		# shellcheck disable=SC2086
		chroot "$root" /usr/sbin/$check >/dev/null 2>&1 || chroot "$root" /usr/bin/$check >/dev/null 2>&1 ||
			die "collector image: '$check' does not run from the image root"
	done
	log "collector tools: ${pkgs//$'\n'/ } + packages $tools"
}

COLLECTOR_PACKAGES=$REPO_ROOT/build/collector/packages.txt
collector_pkg=${SVTB_COLLECTOR_PKG:-./cmd/svctrace-collector}
if [[ -d $REPO_ROOT/$collector_pkg ]]; then
	root=$work/collector
	mkdir -p "$root/usr/local/bin"
	build_collector_tools "$root"
	gobuild "$root/usr/local/bin/svctrace-collector" "$collector_pkg"
	pack "$root" svctrace.local/collector:dev collector.tar /usr/local/bin/svctrace-collector
else
	rm -f "$IMAGES_DIR/collector.tar"
	msg="collector image NOT built: $REPO_ROOT/${collector_pkg#./} does not exist yet (another helper writes it)"
	if ((optional_collector)); then log "WARNING: $msg"; else die "$msg"; fi
fi
log "images built in $(($(date +%s) - t0))s:"
ls -l "$IMAGES_DIR"/*.tar >&2

if ((do_import)); then
	for n in "${NODES[@]}"; do
		if pid_alive "containerd-$n"; then import_images "$n"; fi
	done
	if [[ ${SVTB_IPVS_NODE:-1} != 0 ]] && "$TESTBED_DIR/ipvs-node.sh" status --quiet; then
		"$TESTBED_DIR/ipvs-node.sh" import "$IMAGES_DIR"/pause.tar "$IMAGES_DIR"/echo.tar $([[ -f $IMAGES_DIR/collector.tar ]] && echo "$IMAGES_DIR/collector.tar")
	fi
fi
