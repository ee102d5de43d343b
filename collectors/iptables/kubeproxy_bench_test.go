package iptables

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
	"github.com/svctrace/kubectl-svctrace/internal/testutil/fakeapi"
	"github.com/svctrace/kubectl-svctrace/internal/testutil/netns"
)

// benchRules is a ruleset the real kube-proxy v1.37.2 programmed for the
// netfilter benchmark (n Services bench/svc-<i>, 4 endpoints each, served
// by internal/testutil/fakeapi), as `nfbench program` caches it. Programming
// 10k Services takes kube-proxy seconds to minutes, so the tests reuse the
// benchmark's cache instead of running kube-proxy themselves.
func benchRules(t *testing.T, ipv6 bool, n int) string {
	t.Helper()
	home, _ := os.UserHomeDir()
	fam := "ipv4"
	if ipv6 {
		fam = "ipv6"
	}
	p := filepath.Join(home, ".cache", "svctrace", "bench-netfilter-v1.37.2", fmt.Sprintf("iptables-%s-%d.rules", fam, n))
	if _, err := os.Stat(p); err != nil {
		t.Skipf("no rules of the real kube-proxy at %s: run `go run ./test/bench/netfilter/cmd/nfbench program -sizes %d -families %s` (root) once", p, n, fam)
	}
	return p
}

// benchQuery is bench/svc-<i> as the plugin would ask for it.
func benchQuery(i int, ipv6, withEndpoints bool) Query {
	s := fakeapi.BenchService(i, 4, ipv6)
	q := Query{Service: collectorapi.ServiceSpec{Namespace: s.Namespace, Name: s.Name, ClusterIPs: []string{s.ClusterIP},
		Ports: []collectorapi.ServicePort{{Name: s.PortName, Protocol: "TCP", Port: s.Port}}}}
	if withEndpoints {
		for _, ip := range s.Endpoints {
			q.Endpoints = append(q.Endpoints, collectorapi.Endpoint{IP: ip, Ports: map[string]int32{s.PortName: s.TargetPort}, Ready: true, Serving: true})
		}
	}
	return q
}

// The kernel readers against the text reader on the real kube-proxy's rules
// for 1k and 10k Services, IPv4 and IPv6, in both backends: the same
// observation for Services at the start, middle and end of KUBE-SERVICES,
// with and without the API's endpoints (then found by following jumps).
func TestKernelReadersMatchTextOnRealKubeProxy(t *testing.T) {
	netns.RequireTools(t, "iptables-nft-restore", "ip6tables-nft-restore", "iptables-legacy-restore", "ip6tables-legacy-restore", "nsenter")
	for _, n := range []int{1000, 10000} {
		for _, ipv6 := range []bool{false, true} {
			t.Run(fmt.Sprintf("%d-ipv6=%v", n, ipv6), func(t *testing.T) {
				if n > 1000 && testing.Short() {
					t.Skip("10k Services: restoring takes seconds")
				}
				rules := benchRules(t, ipv6, n)
				restore := map[string]string{collectorapi.IPTablesBackendNFTables: "iptables-nft-restore", collectorapi.IPTablesBackendLegacy: "iptables-legacy-restore"}
				if ipv6 {
					restore = map[string]string{collectorapi.IPTablesBackendNFTables: "ip6tables-nft-restore", collectorapi.IPTablesBackendLegacy: "ip6tables-legacy-restore"}
				}
				for _, be := range []string{collectorapi.IPTablesBackendNFTables, collectorapi.IPTablesBackendLegacy} {
					wantReader := collectorapi.IPTablesReaderNetlink
					if be == collectorapi.IPTablesBackendLegacy {
						wantReader = collectorapi.IPTablesReaderKernelBlob
					}
					ns := netns.New(t, "ipt")
					ns.MustRun(t, restore[be], rules)
					if be == collectorapi.IPTablesBackendLegacy {
						fam := "IPv4"
						if ipv6 {
							fam = "IPv6"
						}
						blob, _, err := readBlobRaw(ns.Path(), fam, "nat")
						if err != nil {
							t.Fatal(err)
						}
						t.Logf("legacy nat table: %d bytes in one IPT_SO_GET_ENTRIES", len(blob))
					}
					for _, i := range []int{0, 1, n / 2, n - 1} {
						for _, withEndpoints := range []bool{true, false} {
							q := benchQuery(i, ipv6, withEndpoints)
							text, kernel := readerPair(t, q, ns.Path(), be)
							if !text.KubeProxyChains || len(text.Ports) != 1 || len(text.Ports[0].Endpoints) != 4 || len(text.Ports[0].Entry) != 1 {
								t.Fatalf("%s svc-%d: the text reader did not find the Service: %+v", be, i, text)
							}
							for _, e := range text.Ports[0].Endpoints {
								if !e.Exists || e.DNAT == "" {
									t.Fatalf("%s svc-%d: endpoint chain %+v", be, i, e)
								}
							}
							sameObservation(t, fmt.Sprintf("%s svc-%d endpoints=%v", be, i, withEndpoints), text, kernel, wantReader)
							if be == collectorapi.IPTablesBackendNFTables {
								requireReferences(t, fmt.Sprintf("svc-%d", i), kernel)
							}
						}
					}
				}
			})
		}
	}
}
