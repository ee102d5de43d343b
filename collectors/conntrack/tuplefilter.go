package conntrack

import (
	"encoding/binary"
	"fmt"
	"net/netip"

	"github.com/mdlayher/netlink"
	ct "github.com/ti-mo/conntrack"
	"github.com/ti-mo/netfilter"
	"golang.org/x/sys/unix"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
)

// ctnetlink attribute numbers (include/uapi/linux/netfilter/nfnetlink_conntrack.h).
const (
	ctaTupleOrig   = 1
	ctaFilter      = 25
	ctaTupleIP     = 1
	ctaTupleProto  = 2
	ctaIPv4Dst     = 2
	ctaIPv6Dst     = 4
	ctaProtoNum    = 1
	ctaProtoDstPrt = 3

	ctaFilterOrigFlags  = 1
	ctaFilterReplyFlags = 2

	filterFlagIPDst        = 1 << 1
	filterFlagProtoNum     = 1 << 3
	filterFlagProtoDstPort = 1 << 5

	ipctnlMsgCtGet = 1
)

// origDst is one original-direction destination to dump: an address (zero
// for "any", used for NodePorts), a port and an L4 protocol, in one family.
type origDst struct {
	addr   netip.Addr
	family uint8 // unix.AF_INET or unix.AF_INET6
	port   uint16
	proto  uint8
}

// serviceDestinations lists what to ask the kernel for: each frontend's
// address:port/proto, and each NodePort by port and protocol in each family
// that has a NodePort address. CTA_FILTER takes one address per dump, and
// every dump walks the whole table in the kernel, so NodePorts are not dumped
// once per node address (an IPVS node holds every ClusterIP on kube-ipvs0);
// GroupFlows keeps only those whose destination is a NodePort address.
func serviceDestinations(req *collectorapi.Request, nodePortAddrs []netip.Addr) []origDst {
	var out []origDst
	seen := map[origDst]bool{}
	add := func(d origDst) {
		if !seen[d] {
			seen[d] = true
			out = append(out, d)
		}
	}
	for _, fe := range req.Service.Frontends() {
		fam := uint8(unix.AF_INET)
		if fe.Addr.Addr().Is6() {
			fam = unix.AF_INET6
		}
		add(origDst{fe.Addr.Addr(), fam, fe.Addr.Port(), collectorapi.IPProtoNumber(fe.Protocol)})
	}
	var has4, has6 bool
	for _, a := range nodePortAddrs {
		has4, has6 = has4 || a.Is4(), has6 || a.Is6()
	}
	for _, p := range req.Service.Ports {
		if p.NodePort <= 0 {
			continue
		}
		if has4 {
			add(origDst{netip.Addr{}, unix.AF_INET, uint16(p.NodePort), collectorapi.IPProtoNumber(p.Protocol)})
		}
		if has6 {
			add(origDst{netip.Addr{}, unix.AF_INET6, uint16(p.NodePort), collectorapi.IPProtoNumber(p.Protocol)})
		}
	}
	return out
}

// dumpByOrigDst asks ctnetlink for the entries whose original tuple has this
// destination, filtered in the kernel with CTA_FILTER (Linux ≥ 5.9), so the
// cost follows this Service's flows and not the size of the node's table.
// ti-mo/conntrack cannot build this filter; it still decodes the answers.
func dumpByOrigDst(nl *netlink.Conn, d origDst) ([]ct.Flow, error) {
	port := make([]byte, 2)
	binary.BigEndian.PutUint16(port, d.port)
	tuple := netfilter.Attribute{Type: ctaTupleOrig, Nested: true}
	flags := uint32(filterFlagProtoNum | filterFlagProtoDstPort)
	if d.addr.IsValid() {
		typ := uint16(ctaIPv4Dst)
		if d.addr.Is6() {
			typ = ctaIPv6Dst
		}
		tuple.Children = append(tuple.Children, netfilter.Attribute{Type: ctaTupleIP, Nested: true,
			Children: []netfilter.Attribute{{Type: typ, Data: d.addr.AsSlice()}}})
		flags |= filterFlagIPDst
	}
	tuple.Children = append(tuple.Children, netfilter.Attribute{Type: ctaTupleProto, Nested: true,
		Children: []netfilter.Attribute{{Type: ctaProtoNum, Data: []byte{d.proto}}, {Type: ctaProtoDstPrt, Data: port}}})
	flagBytes, zero := make([]byte, 4), make([]byte, 4)
	binary.NativeEndian.PutUint32(flagBytes, flags)
	filter := netfilter.Attribute{Type: ctaFilter, Nested: true, Children: []netfilter.Attribute{
		{Type: ctaFilterOrigFlags, Data: flagBytes}, {Type: ctaFilterReplyFlags, Data: zero}}}

	msg, err := netfilter.MarshalNetlink(netfilter.Header{
		SubsystemID: netfilter.NFSubsysCTNetlink,
		MessageType: ipctnlMsgCtGet,
		Family:      netfilter.ProtoFamily(d.family),
		Flags:       netlink.Request | netlink.Dump,
	}, []netfilter.Attribute{tuple, filter})
	if err != nil {
		return nil, err
	}
	msgs, err := nl.Execute(msg)
	if err != nil {
		return nil, fmt.Errorf("filtered dump of %s port %d proto %d: %w", d.addr, d.port, d.proto, err)
	}
	flows := make([]ct.Flow, 0, len(msgs))
	for _, m := range msgs {
		var ev ct.Event
		if err := ev.Unmarshal(m); err != nil {
			return flows, fmt.Errorf("decode flow: %w", err)
		}
		if ev.Flow != nil {
			flows = append(flows, *ev.Flow)
		}
	}
	return flows, nil
}

// dumpServiceFlowsFiltered runs one kernel-filtered dump per destination.
func dumpServiceFlowsFiltered(nl *netlink.Conn, req *collectorapi.Request, nodePortAddrs []netip.Addr) ([]ct.Flow, error) {
	var all []ct.Flow
	for _, d := range serviceDestinations(req, nodePortAddrs) {
		flows, err := dumpByOrigDst(nl, d)
		if err != nil {
			return nil, err
		}
		all = append(all, flows...)
	}
	return all, nil
}
