// Package cilium holds only tests: they pin Cilium's load-balancer maps in a
// private bpffs, written with Cilium's own code, and check what svctrace's
// eBPF collector reads from them.
package cilium
