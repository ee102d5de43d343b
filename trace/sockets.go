package trace

import (
	"fmt"
	"net/netip"
	"sort"
	"strconv"
	"strings"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
	"github.com/svctrace/kubectl-svctrace/trace/plan"
	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// socketKind is what an endpoint Pod's sockets say about one of its target
// ports.
type socketKind int

const (
	// socketListening: a listener on the port on a wildcard address or the Pod IP.
	socketListening socketKind = iota + 1
	// socketLoopbackOnly: listeners on the port, all on 127.0.0.0/8 or ::1.
	socketLoopbackOnly
	// socketNotListening: no listener on the Pod IP for the port (nothing on
	// the port, or only on another specific address).
	socketNotListening
	// socketOtherFamilyOnly: listeners on the port, all on addresses of the
	// other IP family (0.0.0.0 or an IPv4 address for an IPv6 endpoint; an
	// IPv6 address for an IPv4 one): the app serves one family of a
	// dual-stack Pod.
	socketOtherFamilyOnly
)

// socketFact is one endpoint address (ip:port/PROTO) of a Pod whose sockets
// the collector on the Pod's node read.
type socketFact struct {
	node     string
	pod      string
	ip       netip.Addr
	port     uint16
	protocol string
	portName string
	kind     socketKind
	// on are the listeners on the port (any address); others the Pod's other
	// listeners of the same protocol.
	on, others []collectorapi.Listener
	ps         *collectorapi.PodSockets
}

func (f *socketFact) key() string { return endpointKey(f.ip, f.port, f.protocol) }

func endpointKey(ip netip.Addr, port uint16, protocol string) string {
	return netip.AddrPortFrom(ip.Unmap(), port).String() + "/" + protocol
}

// unreadPods are endpoint Pods on one node whose sockets were not read, for
// one reason.
type unreadPods struct {
	reason string
	pods   []string
}

// socketIndex is what every inspected node's sockets and probe sections say,
// gathered before any node is judged: a refused probe from node A and the
// socket tables read on node B must read as one finding.
type socketIndex struct {
	facts  map[string]*socketFact   // by endpointKey
	byNode map[string][]*socketFact // in slice order
	unread map[string][]unreadPods  // by node
	// sectionErr is the sockets section's error, by node.
	sectionErr map[string]string
	// refusedFrom lists the nodes whose direct probe of an endpoint address
	// was refused, and refusedRaw the probe lines, by endpointKey.
	refusedFrom map[string][]string
	refusedRaw  map[string][]string
}

// slicePort is one EndpointSlice port of one endpoint address.
type slicePort struct {
	name     string
	port     uint16
	protocol string
}

func (nj *nodeJudge) buildSocketIndex(views []plan.NodeView) *socketIndex {
	idx := &socketIndex{facts: map[string]*socketFact{}, byNode: map[string][]*socketFact{}, unread: map[string][]unreadPods{},
		sectionErr: map[string]string{}, refusedFrom: map[string][]string{}, refusedRaw: map[string][]string{}}
	// Ports of every non-terminating endpoint address, from its slice.
	ports := map[netip.Addr][]slicePort{}
	for _, sl := range nj.in.Slices {
		for _, e := range sl.Endpoints {
			if len(e.Addresses) == 0 || (e.Conditions.Terminating != nil && *e.Conditions.Terminating) {
				continue
			}
			ip, err := netip.ParseAddr(e.Addresses[0])
			if err != nil {
				continue
			}
			ip = ip.Unmap()
			for _, p := range sl.Ports {
				if p.Port == nil {
					continue
				}
				sp := slicePort{protocol: "TCP", port: uint16(*p.Port)}
				if p.Name != nil {
					sp.name = *p.Name
				}
				if p.Protocol != nil {
					sp.protocol = string(*p.Protocol)
				}
				ports[ip] = append(ports[ip], sp)
			}
		}
	}
	for _, v := range views {
		if v.Observation == nil {
			continue
		}
		if pr := v.Observation.Sections.Probe; pr != nil && pr.Data != nil {
			for _, p := range pr.Data.Probes {
				ap, err := netip.ParseAddrPort(p.Address)
				if p.Target != "endpoint" || p.ErrorClass != "refused" || err != nil {
					continue
				}
				k := endpointKey(ap.Addr(), ap.Port(), p.Protocol)
				idx.refusedFrom[k] = append(idx.refusedFrom[k], v.Node)
				idx.refusedRaw[k] = append(idx.refusedRaw[k], fmt.Sprintf("probe from %s: endpoint %s/%s %s %s (%.1f ms)",
					v.Node, p.Address, p.Protocol, p.Outcome, p.ErrorClass, p.LatencyMillis))
			}
		}
		s := v.Observation.Sections.Sockets
		if s == nil {
			continue // an older collector, or the section was not asked for
		}
		if s.Data == nil {
			idx.sectionErr[v.Node] = orNone(s.Error)
			continue
		}
		reasons := map[string]int{}
		for i := range s.Data.Pods {
			ps := &s.Data.Pods[i]
			name := ps.PodName
			if name == "" {
				name = ps.PodUID
			}
			if !ps.Found {
				r, ok := reasons[ps.Reason]
				if !ok {
					r = len(idx.unread[v.Node])
					reasons[ps.Reason] = r
					idx.unread[v.Node] = append(idx.unread[v.Node], unreadPods{reason: ps.Reason})
				}
				idx.unread[v.Node][r].pods = append(idx.unread[v.Node][r].pods, name)
				continue
			}
			for _, ipStr := range ps.IPs {
				ip, err := netip.ParseAddr(ipStr)
				if err != nil {
					continue
				}
				for _, sp := range ports[ip.Unmap()] {
					if sp.protocol != "TCP" && sp.protocol != "UDP" {
						continue // SCTP sockets are not read
					}
					f := classifySockets(ps, ip.Unmap(), sp)
					f.node, f.pod = v.Node, name
					if _, dup := idx.facts[f.key()]; dup {
						continue
					}
					idx.facts[f.key()] = f
					idx.byNode[v.Node] = append(idx.byNode[v.Node], f)
				}
			}
		}
	}
	return idx
}

// classifySockets decides whether a Pod's listeners serve ip:port. A
// listener on :: is taken to serve IPv4 too (the Linux default,
// net.ipv6.bindv6only=0; the socket table does not show IPV6_V6ONLY).
func classifySockets(ps *collectorapi.PodSockets, ip netip.Addr, sp slicePort) *socketFact {
	f := &socketFact{ip: ip, port: sp.port, protocol: sp.protocol, portName: sp.name, ps: ps}
	serves, loopback, otherFamily := false, true, true
	for _, l := range ps.Listeners {
		if l.Protocol != sp.protocol {
			continue
		}
		if l.Port != sp.port {
			f.others = append(f.others, l)
			continue
		}
		f.on = append(f.on, l)
		a, err := netip.ParseAddr(l.Address)
		if err != nil {
			loopback, otherFamily = false, false
			continue
		}
		a = a.Unmap()
		switch {
		case a == ip, a.IsUnspecified() && (a.Is6() || ip.Is4()):
			serves = true
		case !a.IsLoopback():
			loopback = false
		}
		if a.Is4() == ip.Is4() || a.IsLoopback() {
			otherFamily = false
		}
	}
	switch {
	case serves:
		f.kind = socketListening
	case len(f.on) > 0 && loopback:
		f.kind = socketLoopbackOnly
	case len(f.on) > 0 && otherFamily:
		f.kind = socketOtherFamilyOnly
	default:
		f.kind = socketNotListening
	}
	return f
}

// explainsRefusal says whether the sockets explain a refused connection to
// an endpoint address; the socket finding then stands for the refusal.
func (idx *socketIndex) explainsRefusal(key string) bool {
	f := idx.facts[key]
	return f != nil && f.kind != socketListening
}

// refusalHint adds to a refusal that the sockets do not explain: the Pod
// does listen, so something between answers with a reset.
func (idx *socketIndex) refusalHint(keys []string) string {
	for _, k := range keys {
		f := idx.facts[k]
		if f == nil || f.kind != socketListening {
			continue
		}
		return fmt.Sprintf("; yet pod %s listens on %s (its sockets, read on %s): something between rejects the connection "+
			"(a NetworkPolicy or firewall rule answering with a reset), or the app began listening only after the probe",
			f.pod, listenerList(f.on), f.node)
	}
	return ""
}

// judgeSockets reports, for the endpoint Pods on node, whether each target
// port has a listener on the Pod IP.
func (nj *nodeJudge) judgeSockets(node string) {
	idx := nj.sockets
	if idx == nil {
		return
	}
	if msg, ok := idx.sectionErr[node]; ok {
		nj.EmitNode(report.CodeEpsSocketsUnread, node, report.Args{"pods": "the endpoint Pods", "reason": "the sockets section failed: " + msg}, nil)
	}
	for _, u := range idx.unread[node] {
		nj.EmitNode(report.CodeEpsSocketsUnread, node, report.Args{"pods": "pod(s) " + listNames(u.pods), "reason": u.reason}, nil,
			fieldItems("pods", u.pods))
	}
	var listening []string
	overflowed := map[string]bool{}
	for _, f := range idx.byNode[node] {
		if ps := f.ps; ps != nil && ps.ListenOverflows != nil && *ps.ListenOverflows > 0 && !overflowed[f.pod] {
			overflowed[f.pod] = true
			var waiting uint32
			for _, l := range f.on {
				waiting = max(waiting, l.AcceptQueue)
			}
			drops := "n/a"
			if ps.ListenDrops != nil {
				drops = u64(*ps.ListenDrops)
			}
			nj.EmitNode(report.CodeEpsAcceptOverflow, node, report.Args{"pod": f.pod, "overflows": u64(*ps.ListenOverflows), "drops": drops,
				"port": strconv.Itoa(int(f.port)), "waiting": strconv.Itoa(int(waiting))}, socketLines(f),
				fieldValue("listenOverflows", u64(*ps.ListenOverflows)), fieldValue("acceptQueue", strconv.Itoa(int(waiting))))
		}
		target := endpointKey(f.ip, f.port, f.protocol)
		probe, probeRaw := nj.probeAgreement(f)
		raw := append(socketLines(f), probeRaw...)
		fields := []report.Field{fieldValue("pod", f.pod), fieldValue("targetPort", strconv.Itoa(int(f.port))+"/"+f.protocol)}
		if f.ps.PID != 0 {
			fields = append(fields, fieldValue("process", fmt.Sprintf("%d (%s)", f.ps.PID, orNone(f.ps.Command))))
		}
		switch f.kind {
		case socketListening:
			listening = append(listening, fmt.Sprintf("pod %s %s on %s", f.pod, target, listenerList(f.on)))
		case socketLoopbackOnly:
			nj.EmitNode(report.CodeEpsLoopbackOnly, node, report.Args{"pod": f.pod, "port": strconv.Itoa(int(f.port)), "protocol": f.protocol,
				"addresses": listenerList(f.on), "ip": f.ip.String(), "probe": probe}, raw,
				append(fields, fieldItems("listeners", listenerItems(f.on)))...)
		case socketOtherFamilyOnly:
			fam, other := "IPv6", "IPv4"
			if f.ip.Is4() {
				fam, other = "IPv4", "IPv6"
			}
			nj.EmitNode(report.CodeEpsOtherFamilyOnly, node, report.Args{"pod": f.pod, "port": strconv.Itoa(int(f.port)), "protocol": f.protocol,
				"addresses": listenerList(f.on), "listenFamily": other, "family": fam, "target": target, "probe": probe}, raw,
				append(fields, fieldItems("listeners", listenerItems(f.on)))...)
		case socketNotListening:
			other := "no other " + f.protocol + " port"
			if len(f.others) > 0 || len(f.on) > 0 {
				other = listenerList(append(append([]collectorapi.Listener{}, f.on...), f.others...))
			}
			portName := ""
			if f.portName != "" {
				portName = " " + strconv.Quote(f.portName)
			}
			nj.EmitNode(report.CodeEpsNotListening, node, report.Args{"pod": f.pod, "target": target, "portName": portName,
				"listening": other, "probe": probe}, raw,
				append(fields, fieldItems("listeners", listenerItems(append(append([]collectorapi.Listener{}, f.on...), f.others...))))...)
		}
	}
	if len(listening) > 0 {
		nj.EmitNode(report.CodeEpsListening, node, report.Args{"count": strconv.Itoa(len(listening)), "targets": strings.Join(capLines(listening, 5), "; ")}, nil,
			fieldItems("listening", listening))
	}
}

// probeAgreement phrases what the direct probes of the same address said,
// so the socket finding and the probe read as one.
func (nj *nodeJudge) probeAgreement(f *socketFact) (string, []string) {
	nodes := nj.sockets.refusedFrom[f.key()]
	if len(nodes) == 0 {
		return "", nil
	}
	return "; this is why the direct connection from " + strings.Join(nodes, ", ") + " was refused", nj.sockets.refusedRaw[f.key()]
}

func socketLines(f *socketFact) []string {
	head := fmt.Sprintf("pod %s: /proc/%d/net (%s, netns %s):", f.pod, f.ps.PID, orNone(f.ps.Command), orNone(f.ps.NetNS))
	out := []string{head}
	for _, l := range f.ps.Listeners {
		out = append(out, "  "+listenerString(l)+" ("+l.Family+")")
	}
	if len(f.ps.Listeners) == 0 {
		out = append(out, "  no listening TCP or bound UDP socket")
	}
	if f.ps.Truncated {
		out = append(out, "  … (listeners capped by the collector)")
	}
	return out
}

func listenerString(l collectorapi.Listener) string {
	a, err := netip.ParseAddr(l.Address)
	if err != nil {
		return l.Address + ":" + strconv.Itoa(int(l.Port)) + "/" + l.Protocol
	}
	return netip.AddrPortFrom(a, l.Port).String() + "/" + l.Protocol
}

func listenerItems(ls []collectorapi.Listener) []string {
	out := make([]string, 0, len(ls))
	for _, l := range ls {
		out = append(out, listenerString(l))
	}
	sort.Strings(out)
	return out
}

// listenerList is "127.0.0.1:8080/TCP, [::1]:8080/TCP", capped.
func listenerList(ls []collectorapi.Listener) string {
	items := listenerItems(ls)
	if len(items) == 0 {
		return "nothing"
	}
	return strings.Join(capLines(items, 8), ", ")
}
