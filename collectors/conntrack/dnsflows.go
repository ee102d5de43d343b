package conntrack

import (
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/mdlayher/netlink"
	ct "github.com/ti-mo/conntrack"
	"golang.org/x/sys/unix"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
)

// dnsPort is where kube-dns listens on its ClusterIP.
const dnsPort = 53

// readDNSFlows dumps the UDP entries to each cluster DNS address on port 53,
// filtered in the kernel like the Service's own flows.
func (r *Reader) readDNSFlows(cfg *netlink.Config, req *collectorapi.Request) (*collectorapi.DNSFlows, error) {
	nl, err := netlink.Dial(unix.NETLINK_NETFILTER, cfg)
	if err != nil {
		return nil, err
	}
	defer nl.Close()
	var flows []ct.Flow
	var dests []string
	for _, s := range req.ClusterDNS {
		a, err := netip.ParseAddr(s)
		if err != nil {
			continue
		}
		a = a.Unmap()
		fam := uint8(unix.AF_INET)
		if a.Is6() {
			fam = unix.AF_INET6
		}
		f, err := dumpByOrigDst(nl, origDst{addr: a, family: fam, port: dnsPort, proto: unix.IPPROTO_UDP})
		if err != nil {
			return nil, err
		}
		dests = append(dests, netip.AddrPortFrom(a, dnsPort).String()+"/UDP")
		flows = append(flows, f...)
	}
	if len(dests) == 0 {
		return nil, errors.New("no cluster DNS address parses")
	}
	return CountDNSFlows(dests, flows), nil
}

// CountDNSFlows counts DNS flows per reply source and those never answered.
func CountDNSFlows(dests []string, flows []ct.Flow) *collectorapi.DNSFlows {
	out := &collectorapi.DNSFlows{Destinations: dests, Total: len(flows)}
	for _, f := range flows {
		if f.Status&ct.StatusSeenReply == 0 {
			out.Unreplied++
		}
		if src := f.TupleReply.IP.SourceAddress; src.IsValid() {
			if out.Backends == nil {
				out.Backends = map[string]int{}
			}
			out.Backends[netip.AddrPortFrom(src.Unmap(), f.TupleReply.Proto.SourcePort).String()]++
		}
	}
	sort.Strings(out.Destinations)
	return out
}

// sysctlString reads one sysctl as text: "absent" when the file does not
// exist (the module is not loaded), "error: …" when it cannot be read.
func (r *Reader) sysctlString(path string) string {
	b, err := os.ReadFile(filepath.Join(r.proc(), "sys", path))
	if os.IsNotExist(err) {
		return "absent"
	}
	if err != nil {
		return "error: " + err.Error()
	}
	return strings.TrimSpace(string(b))
}
