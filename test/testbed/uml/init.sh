#!/bin/sh
# init.sh is PID 1 of a user-mode Linux kernel booted by boot.sh with the host
# file system as its root (hostfs). It gives the job a minimal system of its
# own (proc, sys, cgroups, a private /run), loads the modules the job names,
# puts legacy-iptables links first in PATH, runs the job and powers off.
#
# The kernel passes unknown "key=value" boot parameters to init as environment
# variables; boot.sh sets:
#   SVTB_JOB      the job: an executable run as "$SVTB_JOB $SVTB_ARGS"
#   SVTB_ARGS     its arguments, comma separated (no spaces on a kernel command line)
#   SVTB_OUT      a host directory (hostfs) for the job's output and our status files
#   SVTB_MODULES  modules to load, comma separated
#   SVTB_WAIT     "stop": after the job, wait for $SVTB_OUT/stop before halting
#                 (a long-running node); otherwise halt when the job returns
# Everything this script mounts lives in the UML kernel only: the host sees
# none of it. Files the job writes outside /run, /tmp/uml-* or its own
# mounts are host files (hostfs is read-write), so jobs write only to $SVTB_OUT.
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export PATH
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t tmpfs -o mode=0755 tmpfs /run
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts 2>/dev/null
mount -t tmpfs tmpfs /dev/shm
mount -t cgroup2 cgroup2 /sys/fs/cgroup 2>/dev/null
ip link set lo up
echo "up $(cut -d' ' -f1 /proc/uptime)" >"$SVTB_OUT/init.status"

# modprobe -d wants DIR/lib/modules/<release>; the UML modules live elsewhere.
rel=$(uname -r)
mkdir -p /run/uml-mods/lib/modules
ln -s "/usr/lib/uml/modules/$rel" "/run/uml-mods/lib/modules/$rel"
# One modprobe for all of them: every process start is expensive in UML.
if [ -n "$SVTB_MODULES" ]; then
	# shellcheck disable=SC2046
	modprobe -a -d /run/uml-mods $(echo "$SVTB_MODULES" | tr , ' ') || echo "uml-init: modprobe -a $SVTB_MODULES failed" >&2
fi

# kube-proxy's iptables calls: nf_tables NAT does not load in this kernel,
# legacy iptable_nat does. Plain iptables* names resolve to the legacy backend.
mkdir -p /run/uml-bin
for fam in iptables ip6tables; do
	for suffix in "" -save -restore; do
		ln -s "$(command -v xtables-legacy-multi)" "/run/uml-bin/$fam$suffix"
	done
done
PATH=/run/uml-bin:$PATH
XTABLES_LOCKFILE=/run/xtables.lock
export PATH XTABLES_LOCKFILE

echo "job $(cut -d' ' -f1 /proc/uptime)" >>"$SVTB_OUT/init.status"
# shellcheck disable=SC2086 # SVTB_ARGS is split on purpose
"$SVTB_JOB" $(echo "$SVTB_ARGS" | tr , ' ') >"$SVTB_OUT/job.log" 2>&1
rc=$?
echo "$rc" >"$SVTB_OUT/job.rc"
if [ "$SVTB_WAIT" = stop ]; then
	while [ ! -e "$SVTB_OUT/stop" ]; do sleep 0.2; done
fi
echo "halt $(cut -d' ' -f1 /proc/uptime)" >>"$SVTB_OUT/init.status"
sync
halt -f
