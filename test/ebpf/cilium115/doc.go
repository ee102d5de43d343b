// Package cilium115 holds only tests: they write Cilium v1.15.19's
// load-balancer maps with its own writer in a private bpffs and record
// bpftool's dump of them for svctrace's collector tests.
package cilium115
