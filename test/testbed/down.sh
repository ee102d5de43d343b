#!/usr/bin/env bash
# Tear the svctrace testbed down completely, also after a crashed or half-finished
# up: processes (only ours, checked by /proc/PID/cmdline), container processes in
# the testbed's cgroups, kubelet/containerd mounts, namespaces, cgroups, state
# files, kubeconfigs; restores the global sysctls the kubelet changed.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
[[ $(id -u) == 0 ]] || die "must run as root"
testbed_lock
quiet=0; [[ ${1:-} == --quiet ]] && quiet=1
say() { ((quiet)) || log "$@"; }
t0=$(date +%s)

# 0. The IPVS node: a user-mode Linux kernel whose processes carry none of
# our paths on their command line (ipvs-node.sh finds them by its umid).
"$TESTBED_DIR/ipvs-node.sh" down --quiet || say "IPVS node: down failed (continuing)"

# 1. Daemons we recorded, node side first. kube-apiserver may need a second TERM (stop_daemon does it).
for n in "${NODES[@]}"; do stop_daemon "flanneld-$n" 5; stop_daemon "kube-router-$n" 5; stop_daemon "kube-proxy-$n" 5; stop_daemon "kubelet-$n" 5; done

# Our processes are recognised by binary name AND a path of ours on the command line,
# so nothing else on the machine is ever signalled (pid files may be gone after a crash).
our_pids() {
	local p cmd exe
	ps -eo pid=,args= | while read -r p cmd; do
		[[ $p == "$$" ]] && continue
		exe=${cmd%% *}; exe=${exe##*/}
		case $exe in
		etcd | kube-apiserver | kube-controller-manager | kube-scheduler | kubelet | kube-proxy | kube-router | flanneld | containerd | containerd-shim-runc-v2 | socat) ;;
		*) continue ;;
		esac
		if [[ $cmd == *"$STATE"* || $cmd == *"$RUN"* ]]; then echo "$p"; fi
	done
}
# Container processes: everything in the testbed's cgroup roots.
cgroup_pids() {
	local n h
	for n in "${NODES[@]}"; do
		for h in /sys/fs/cgroup/*/; do
			if [[ -d $h$n ]]; then find "$h$n" -name cgroup.procs -exec cat {} + 2>/dev/null || true; fi
		done
	done | sort -u
}
kill_set() { # signal pids...
	local sig=$1; shift
	(($#)) && kill "-$sig" "$@" 2>/dev/null || true
}
for sig in TERM TERM KILL; do
	pids=$(cgroup_pids)
	[[ -z $pids ]] && break
	# shellcheck disable=SC2086
	kill_set "$sig" $pids
	sleep 0.5
done
for name in kube-scheduler kube-controller-manager; do stop_daemon "$name" 5; done
for n in "${NODES[@]}"; do stop_daemon "containerd-$n" 5; done
stop_daemon kube-apiserver 10
stop_daemon etcd 5
stop_daemon fwd-root 2
stop_daemon fwd-cp 2
for sig in TERM TERM KILL; do
	pids=$(our_pids)
	[[ -z $pids ]] && break
	say "stopping leftover testbed processes: $(echo $pids)"
	# shellcheck disable=SC2086
	kill_set "$sig" $pids
	sleep 1
done
[[ -z $(our_pids) ]] || die "testbed processes survive: $(our_pids | tr '\n' ' ')"

# 2. Mounts below our state/run dirs (kubelet volumes, overlay snapshots, shm, pod netns), deepest first.
for i in 1 2 3; do
	mps=$(awk -v a="$STATE" -v b="$RUN" '$2 ~ "^"a || $2 ~ "^"b {print $2}' /proc/self/mounts | sort -r | uniq)
	[[ -z $mps ]] && break
	for m in $mps; do
		m=$(printf '%b' "$m") # /proc/mounts escapes spaces as \040
		umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
	done
done
left=$(awk -v a="$STATE" -v b="$RUN" '$2 ~ "^"a || $2 ~ "^"b {print $2}' /proc/self/mounts)
[[ -z $left ]] || die "mounts survive: $left"

# 3. Network namespaces of the testbed (pod netns live under our state dir, see containerd.toml).
for ns in "${NODES[@]}" svtb-node3 "$CP_NS" "$HUB_NS"; do
	if [[ -e /var/run/netns/$ns ]]; then
		ip netns del "$ns" 2>/dev/null || { umount -l "/var/run/netns/$ns" 2>/dev/null || true; rm -f "/var/run/netns/$ns"; }
	fi
done

# 4. cgroups (depth first).
for n in "${NODES[@]}"; do
	for h in /sys/fs/cgroup/*/; do
		[[ -d $h$n ]] || continue
		find "$h$n" -depth -type d -exec rmdir {} \; 2>/dev/null || true
		[[ -d $h$n ]] && die "cgroup $h$n could not be removed"
	done
done

# 5. Global sysctls the kubelet rewrote.
if [[ -f $STATE/sysctls.saved ]]; then
	while IFS= read -r kv; do if [[ -n $kv ]]; then sysctl -qw "$kv"; fi; done <"$STATE/sysctls.saved"
	say "restored sysctls: $(tr '\n' ' ' <"$STATE/sysctls.saved")"
fi

# 6. Files outside our dirs: libcni's result cache for our sandboxes, then the machine-wide
# paths that did not exist before the testbed's first up (recorded by up.sh).
ids=$(ls -1 "$RUN"/*/containerd-state/io.containerd.grpc.v1.cri/sandboxes "$STATE"/nodes/*/containerd/io.containerd.grpc.v1.cri/sandboxes 2>/dev/null | grep -E '^[0-9a-f]{64}$' | sort -u || true)
for id in $ids; do rm -f /var/lib/cni/results/*-"$id"-* 2>/dev/null || true; done
for n in "${NODES[@]}"; do rm -f /var/lib/cni/results/"$n"-* 2>/dev/null || true; done
if [[ -f $STATE/created-paths ]]; then
	sort -ru "$STATE/created-paths" | while IFS= read -r pth; do
		if [[ -e $pth ]] && ! awk -v p="$pth" '$2 ~ "^"p {f=1} END {exit !f}' /proc/self/mounts; then
			# Another kube-controller-manager or kubelet on the machine (not
			# ours: ours are stopped by now) recreates its flex-volume dir under
			# /usr/libexec/kubernetes as soon as it is gone: say so, do not fail.
			rm -rf --one-file-system "$pth" 2>/dev/null ||
				log "could not remove $pth: another process on this machine writes there ($(ls -A "$pth" 2>/dev/null | head -3 | tr '\n' ' '))"
		fi
	done
fi

# 7. Files: kubeconfigs handed out, state and run dirs (no mounts are left below them, checked above).
if [[ -f $STATE/kubeconfig-dirs ]]; then
	sort -u "$STATE/kubeconfig-dirs" | while IFS= read -r d; do
		rm -f "$d/kubeconfig" "$d/kubeconfig-restricted"
		rmdir "$d" 2>/dev/null || true
	done
fi
rm -f "$KUBECONFIG_DIR/kubeconfig" "$KUBECONFIG_DIR/kubeconfig-restricted"
# The kubelets' /var/log/containers symlinks into our pod log dirs.
[[ -d /var/log/containers ]] && find /var/log/containers -maxdepth 1 -lname "$STATE/*" -delete 2>/dev/null || true
rm -rf --one-file-system "$STATE" "$RUN"
say "testbed down in $(($(date +%s) - t0))s"
