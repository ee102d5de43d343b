// Command kpgen writes kube-proxy-layout rules (see package kpgen) for the
// doc-derived fixtures or for the benchmark.
//
//	kpgen -set scenarios|large|bench -n 10000 -mode iptables|nftables > rules
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"

	"github.com/svctrace/kubectl-svctrace/test/bench/netfilter/kpgen"
)

func main() {
	set := flag.String("set", "scenarios", "scenarios, large or bench")
	n := flag.Int("n", 1000, "Services (bench) or endpoints (large)")
	mode := flag.String("mode", "iptables", "iptables or nftables")
	flag.Parse()
	var svcs []kpgen.Service
	switch *set {
	case "scenarios":
		svcs = kpgen.Scenarios()
	case "large":
		svcs = kpgen.Large(*n)
	case "bench":
		svcs = kpgen.Bench(*n)
	default:
		fmt.Fprintln(os.Stderr, "unknown -set")
		os.Exit(2)
	}
	w := bufio.NewWriterSize(os.Stdout, 1<<20)
	var err error
	if *mode == "nftables" {
		err = kpgen.NFTables(w, svcs, kpgen.Options{})
	} else {
		err = kpgen.IPTables(w, svcs, kpgen.Options{})
	}
	if err == nil {
		err = w.Flush()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
