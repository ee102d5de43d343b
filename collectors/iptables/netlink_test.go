package iptables

import (
	"encoding/binary"
	"strings"

	"context"
	"encoding/json"
	"golang.org/x/sys/unix"
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

// sameObservation compares everything but how the rules were read; when the
// kernel reader established the entry rules by reference counts, their
// kinds, targets and numbers are compared instead of the rules.
func sameObservation(t *testing.T, name string, text, kernel collectorapi.IPTablesBackendObservation, wantReader string) {
	t.Helper()
	if kernel.Reader != wantReader || text.Reader != collectorapi.IPTablesReaderText {
		t.Errorf("%s: readers %q / %q, want %q / text (commands %v)", name, kernel.Reader, text.Reader, wantReader, kernel.Commands)
	}
	if kernel.EntryProof == collectorapi.IPTablesEntryProofReferences {
		if d := sameEntries(text, kernel); d != "" {
			t.Errorf("%s: %s", name, d)
		}
		text, kernel = withoutEntries(text), withoutEntries(kernel)
	}
	strip := func(b collectorapi.IPTablesBackendObservation) string {
		b.Reader, b.Method, b.Commands, b.EntryProofFallback = "", "", nil, ""
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

// restoredWithNFAcct restores a real dump as it is, after creating the
// nfacct objects its "-m nfacct" matches name (kube-proxy creates them
// through nfnetlink_acct before it writes the rules).
func restoredWithNFAcct(t testing.TB, fixture, restore string) *netns.NS {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("../testdata/iptables", fixture))
	if err != nil {
		t.Fatal(err)
	}
	ns := netns.New(t, "ipt")
	seen := map[string]bool{}
	for _, m := range nfacctMatch.FindAllString(string(b), -1) {
		name := strings.Fields(m)[3]
		if !seen[name] {
			seen[name] = true
			addNFAcct(t, ns.Path(), name)
		}
	}
	ns.MustRun(t, restore, filepath.Join("../testdata/iptables", fixture))
	return ns
}

// addNFAcct creates an nfacct object (NFNL_MSG_ACCT_NEW with NFACCT_NAME)
// in the namespace, as `nfacct add NAME` does.
func addNFAcct(t testing.TB, nsPath, name string) {
	t.Helper()
	fd, err := inNetNS(nsPath, func() (int, error) {
		return unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_NETFILTER)
	})
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	const nfnlSubsysAcct, nfnlMsgAcctNew, nfacctName = 7, 0, 1
	attr := nlAttr(nfacctName, name)
	msg := make([]byte, 20+len(attr))
	binary.NativeEndian.PutUint32(msg, uint32(len(msg)))
	binary.NativeEndian.PutUint16(msg[4:], nfnlSubsysAcct<<8|nfnlMsgAcctNew)
	binary.NativeEndian.PutUint16(msg[6:], unix.NLM_F_REQUEST|unix.NLM_F_CREATE|unix.NLM_F_ACK)
	binary.NativeEndian.PutUint32(msg[8:], 1)
	msg[16], msg[17] = unix.AF_UNSPEC, unix.NFNETLINK_V0
	copy(msg[20:], attr)
	if err := unix.Sendto(fd, msg, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	n, _, err := unix.Recvfrom(fd, buf, 0)
	if err != nil {
		t.Fatal(err)
	}
	if n < 20 || binary.NativeEndian.Uint16(buf[4:]) != unix.NLMSG_ERROR || binary.NativeEndian.Uint32(buf[16:]) != 0 {
		t.Fatalf("nfacct add %s: reply %x", name, buf[:n])
	}
}

// The real testbed node's rules with kube-proxy's "-m nfacct" matches kept
// (the localhost node-port rules in KUBE-NODEPORTS): the netlink reader
// renders them, so no chain is listed with iptables, and its entry rules of
// NodePort Services come from KUBE-NODEPORTS read over netlink.
func TestKernelReadersMatchTextOnTestbedNodeWithNFAcct(t *testing.T) {
	netns.RequireTools(t, "iptables-nft-restore", "iptables-legacy-restore", "nsenter")
	for _, kb := range kernelBackends {
		ns := restoredWithNFAcct(t, "testbed-node1.save", kb.restore4)
		for _, name := range []string{"web", "lb", "extip"} {
			text, kernel := readerPair(t, apiQuery(t, name), ns.Path(), kb.backend)
			if !text.KubeProxyChains || len(text.Ports) == 0 {
				t.Fatalf("%s %s: no chains read: %+v", kb.backend, name, text)
			}
			sameObservation(t, kb.backend+" "+name, text, kernel, kb.reader)
			if kb.backend == collectorapi.IPTablesBackendNFTables {
				requireReferences(t, name, kernel)
			}
		}
	}
}
