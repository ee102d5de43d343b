package iptables

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
	"github.com/svctrace/kubectl-svctrace/internal/testutil/netns"
)

// readerPair reads q in ns with the text reader and with the kernel
// readers, and returns both backends' observations for backend be.
func readerPair(t *testing.T, q Query, ns, be string) (text, kernel collectorapi.IPTablesBackendObservation) {
	t.Helper()
	q.NetNS = ns
	q.Backends = []string{be}
	read := func(reader string) collectorapi.IPTablesBackendObservation {
		q.Reader = reader
		obs, err := Read(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		return backend(t, obs, be)
	}
	return read(ReaderText), read("")
}

// sameObservation compares everything but how the rules were read.
func sameObservation(t *testing.T, name string, text, kernel collectorapi.IPTablesBackendObservation, wantReader string) {
	t.Helper()
	if kernel.Reader != wantReader || text.Reader != collectorapi.IPTablesReaderText {
		t.Errorf("%s: readers %q / %q, want %q / text (commands %v)", name, kernel.Reader, text.Reader, wantReader, kernel.Commands)
	}
	strip := func(b collectorapi.IPTablesBackendObservation) string {
		b.Reader, b.Method, b.Commands = "", "", nil
		out, err := json.MarshalIndent(b, "", " ")
		if err != nil {
			t.Fatal(err)
		}
		return string(out)
	}
	if a, b := strip(text), strip(kernel); a != b {
		t.Errorf("%s: kernel reader differs from the text reader:\nkernel: %s\ntext: %s", name, b, a)
	}
}

// kernelBackends are the backends with their restore commands and the
// reader expected to read them.
var kernelBackends = []struct{ backend, restore4, restore6, reader string }{
	{collectorapi.IPTablesBackendNFTables, "iptables-nft-restore", "ip6tables-nft-restore", collectorapi.IPTablesReaderNetlink},
	{collectorapi.IPTablesBackendLegacy, "iptables-legacy-restore", "ip6tables-legacy-restore", collectorapi.IPTablesReaderKernelBlob},
}

// The kernel readers against the text reader on kube-proxy v1.37.2's
// TestOverallIPTablesRules output, restored into each backend.
func TestKernelReadersMatchTextOnKubeProxyOverall(t *testing.T) {
	netns.RequireTools(t, "iptables-nft-restore", "iptables-legacy-restore", "nsenter")
	for _, kb := range kernelBackends {
		ns := restored(t, "kubeproxy-overall.restore", kb.restore4)
		for name, q := range overallQueries() {
			text, kernel := readerPair(t, q, ns.Path(), kb.backend)
			if !text.KubeProxyChains {
				t.Fatalf("%s %s: no chains read", kb.backend, name)
			}
			sameObservation(t, kb.backend+" "+name, text, kernel, kb.reader)
		}
	}
}

// The real kube-proxy v1.37.2's rules of the testbed node (affinity,
// LoadBalancer with ETP=Local, NodePort without endpoints, ITP=Local,
// terminating endpoints, externalIPs, 1001 endpoints) restored from its
// iptables-nft-save dump into each backend.
func TestKernelReadersMatchTextOnTestbedNode(t *testing.T) {
	netns.RequireTools(t, "iptables-nft-restore", "iptables-legacy-restore", "nsenter")
	for _, kb := range kernelBackends {
		ns := restoredWithoutNFAcct(t, "testbed-node1.save", kb.restore4)
		for _, name := range []string{"web", "sticky", "lb", "empty", "itp", "term", "extip", "big"} {
			text, kernel := readerPair(t, apiQuery(t, name), ns.Path(), kb.backend)
			if !text.KubeProxyChains || len(text.Ports) == 0 {
				t.Fatalf("%s %s: no chains read: %+v", kb.backend, name, text)
			}
			sameObservation(t, kb.backend+" "+name, text, kernel, kb.reader)
		}
	}
}

// The real kube-proxy's IPv6 rules (ip6tables-nft-save dump).
func TestKernelReadersMatchTextOnKubeProxyIPv6(t *testing.T) {
	netns.RequireTools(t, "ip6tables-nft-restore", "ip6tables-legacy-restore", "nsenter")
	q := Query{Service: collectorapi.ServiceSpec{Namespace: "default", Name: "web", ClusterIPs: []string{"fd00:96::50"},
		Ports: []collectorapi.ServicePort{{Name: "http", Protocol: "TCP", Port: 80}}}}
	for _, kb := range kernelBackends {
		ns := restoredWithoutNFAcct(t, "kubeproxy-ipv6.save", kb.restore6)
		text, kernel := readerPair(t, q, ns.Path(), kb.backend)
		if !text.KubeProxyChains || len(text.Ports) != 1 || len(text.Ports[0].Endpoints) != 1 {
			t.Fatalf("%s: no chains read: %+v", kb.backend, text)
		}
		sameObservation(t, kb.backend+" web", text, kernel, kb.reader)
	}
}

var nfacctMatch = regexp.MustCompile(` -m nfacct --nfacct-name +\S+`)

// restoredWithoutNFAcct restores a real dump without its "-m nfacct"
// matches: kube-proxy's nfacct objects do not exist in a fresh namespace.
func restoredWithoutNFAcct(t *testing.T, fixture, restore string) *netns.NS {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("../testdata/iptables", fixture))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), fixture)
	if err := os.WriteFile(path, nfacctMatch.ReplaceAll(b, nil), 0o600); err != nil {
		t.Fatal(err)
	}
	ns := netns.New(t, "ipt")
	ns.MustRun(t, restore, path)
	return ns
}
