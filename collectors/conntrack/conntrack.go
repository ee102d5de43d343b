// Package conntrack observes the node's connection-tracking table for one
// Service: per-CPU statistics sampled twice (deltas, not totals), the table's
// fill level, /proc/net/stat/nf_conntrack (which has clash_resolve and
// chaintoolong that ti-mo/conntrack does not decode), and the Service's flows
// grouped by the backend they were NATed to. It never deletes or changes an
// entry.
package conntrack

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mdlayher/netlink"
	ct "github.com/ti-mo/conntrack"
	vnl "github.com/vishvananda/netlink"
	vnetns "github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
)

// DefaultFlowCap bounds each list of flows in the observation; counts stay exact.
const DefaultFlowCap = 50

// Reader reads conntrack in the network namespace NetNS (0: the current one).
type Reader struct {
	// NetNS is a network namespace file descriptor for netlink, 0 for the current namespace.
	NetNS int
	// ProcRoot is where /proc is (empty: /proc). Sysctls are read from
	// <ProcRoot>/sys, the stat table from <ProcRoot>/thread-self/net (falling back to <ProcRoot>/net).
	ProcRoot string
	// FlowCap bounds listed flows (0: DefaultFlowCap).
	FlowCap int
	// Method picks how flows are dumped: MethodAuto (default), MethodTupleFilter
	// or MethodStatusFilter (kept for old kernels and as the benchmark baseline).
	Method string
	// SampleUntil, when set and the request leaves the sample interval to
	// the collector, ends the statistics sample once it is closed, but
	// not before MinSampleMillis: the collector closes it when its other
	// sections are done, so the sample spans their work instead of adding
	// a second of its own. The observation's SampleIntervalMillis is the
	// interval measured between the two samples, whatever ended it.
	SampleUntil <-chan struct{}
}

// MinSampleMillis is the shortest statistics sample SampleUntil may end.
const MinSampleMillis = 300

// MaxFallbackEntries bounds the table size for which MethodAuto falls back
// to the full status-filter dump (≈ 2 KiB per entry; 20,000 ≈ 40 MiB).
const MaxFallbackEntries = 20000

// Flow dump methods.
const (
	// MethodAuto tries MethodTupleFilter and falls back to MethodStatusFilter.
	MethodAuto = ""
	// MethodTupleFilter asks the kernel for each frontend's flows only
	// (CTA_FILTER on the original destination, Linux ≥ 5.9).
	MethodTupleFilter = "tuple-filter"
	// MethodStatusFilter dumps every destination-NATed entry (kernel status
	// filter, Linux ≥ 5.15) and filters addresses in the collector; memory and
	// time grow with the node's table.
	MethodStatusFilter = "status-filter"
)

// Read collects everything with default settings.
func Read(ctx context.Context, req *collectorapi.Request, flowCap int) (*collectorapi.ConntrackObservation, error) {
	return (&Reader{FlowCap: flowCap}).Read(ctx, req)
}

// Read samples statistics twice, reads the table's size and the Service's flows.
// NodePort flows count only when their destination is one of the node's own
// addresses or the Service's externalIPs/loadBalancer IPs (nodePortAddresses).
// Each part records its own error; the returned error is set only when no
// part could be read at all.
func (r *Reader) Read(ctx context.Context, req *collectorapi.Request) (*collectorapi.ConntrackObservation, error) {
	interval := time.Duration(req.ConntrackSampleMillis) * time.Millisecond
	if req.ConntrackSampleMillis == 0 {
		interval = collectorapi.DefaultConntrackSampleMillis * time.Millisecond
	}
	obs := &collectorapi.ConntrackObservation{SampleIntervalMillis: int(interval / time.Millisecond)}

	cfg := r.netlinkConfig()
	conn, dialErr := ct.Dial(cfg)
	if dialErr != nil {
		obs.StatsError = fmt.Sprintf("netlink: %v", dialErr)
		obs.FlowsError = obs.StatsError
	} else {
		defer conn.Close()
	}

	// First samples.
	var stats1 []ct.Stats
	var statsErr error
	if conn != nil {
		stats1, statsErr = conn.Stats()
	}
	proc1, procErr := r.readProcStat()

	// The flow dump runs between the samples, so it costs no extra wall time.
	start := time.Now()
	var early <-chan struct{}
	if r.SampleUntil != nil && req.ConntrackSampleMillis == 0 {
		done := make(chan struct{})
		go func() {
			select {
			case <-r.SampleUntil:
				time.Sleep(time.Until(start.Add(MinSampleMillis * time.Millisecond)))
				close(done)
			case <-ctx.Done():
			}
		}()
		early = done
	}
	if conn != nil {
		npAddrs, npErr := r.nodePortAddresses(req)
		flows, filter, err := r.dumpFlows(conn, cfg, req, npAddrs)
		if err != nil {
			obs.FlowsError = err.Error()
		} else {
			obs.Flows = GroupFlows(flows, req, npAddrs, r.flowCap())
			obs.Flows.DumpFilter = filter
			if hasNodePort(req) {
				obs.Flows.NodePortAddresses = addrStrings(npAddrs)
				if npErr != nil {
					obs.Flows.NodePortAddressesError = npErr.Error()
				}
			}
		}
	}
	select {
	case <-ctx.Done():
		return obs, ctx.Err()
	case <-time.After(interval - time.Since(start)):
	case <-early:
	}

	// Second samples and deltas.
	obs.SampleIntervalMillis = int(time.Since(start) / time.Millisecond)
	if conn != nil && statsErr == nil {
		stats2, err := conn.Stats()
		if err != nil {
			statsErr = err
		} else {
			t1, t2 := sumStats(stats1), sumStats(stats2)
			obs.Stats = &t2
			d := deltaStats(t1, t2)
			obs.StatsDelta = &d
			for _, s := range stats2 {
				obs.StatsPerCPU = append(obs.StatsPerCPU, collectorapi.ConntrackCPU{CPU: s.CPUID, ConntrackCounters: counters(s)})
			}
		}
	}
	if statsErr != nil {
		obs.StatsError = statsErr.Error()
	}
	if procErr == nil {
		proc2, err := r.readProcStat()
		procErr = err
		if err == nil {
			obs.ProcStat = proc2
			obs.ProcStatDelta = DeltaProcStat(proc1, proc2)
		}
	}
	if procErr != nil {
		obs.ProcStatError = procErr.Error()
	}

	var sysErrs []string
	var err error
	if obs.Count, err = r.readSysctlInt("net/netfilter/nf_conntrack_count"); err != nil {
		sysErrs = append(sysErrs, err.Error())
	}
	if obs.Max, err = r.readSysctlInt("net/netfilter/nf_conntrack_max"); err != nil {
		sysErrs = append(sysErrs, err.Error())
	}
	obs.SysctlError = strings.Join(sysErrs, "; ")
	obs.TCPBeLiberal = r.sysctlString("net/netfilter/nf_conntrack_tcp_be_liberal")
	if conn != nil && len(req.ClusterDNS) > 0 {
		obs.DNSFlows, err = r.readDNSFlows(cfg, req)
		if err != nil {
			obs.DNSFlowsError = err.Error()
		}
	}

	if obs.Flows == nil && obs.Stats == nil && obs.ProcStat == nil && obs.SysctlError != "" {
		return obs, fmt.Errorf("conntrack unreadable: %s; %s", obs.StatsError, obs.SysctlError)
	}
	return obs, nil
}

func (r *Reader) netlinkConfig() *netlink.Config {
	if r.NetNS == 0 {
		return nil
	}
	return &netlink.Config{NetNS: r.NetNS}
}

func (r *Reader) flowCap() int {
	if r.FlowCap <= 0 {
		return DefaultFlowCap
	}
	return r.FlowCap
}

// nodePortAddresses is where a flow to one of the Service's NodePorts may be
// addressed: the node's own addresses (every interface's, as `ip addr` lists
// them, in the reader's namespace: kube-proxy's default nodePortAddresses is
// every local address, and --nodeport-addresses picks a subset of them, so
// this is the upper bound), plus the Service's externalIPs and loadBalancer
// ingress IPs from the request. Flows to the NodePort's number on any other
// address (a Pod's own port, another Service's ClusterIP port) are not this
// Service's. On error the node's addresses are missing from the list, so
// NodePort flows to them are not counted; the error says so.
func (r *Reader) nodePortAddresses(req *collectorapi.Request) ([]netip.Addr, error) {
	if !hasNodePort(req) {
		return nil, nil
	}
	local, err := localAddrs(r.NetNS)
	set := map[netip.Addr]bool{}
	for _, a := range local {
		set[a] = true
	}
	for _, list := range [][]string{req.Service.ExternalIPs, req.Service.LoadBalancerIPs} {
		for _, ip := range list {
			if a, perr := netip.ParseAddr(ip); perr == nil {
				set[a.Unmap()] = true
			}
		}
	}
	out := make([]netip.Addr, 0, len(set))
	for a := range set {
		out = append(out, a)
	}
	slices.SortFunc(out, func(a, b netip.Addr) int { return a.Compare(b) })
	if err != nil {
		return out, fmt.Errorf("node addresses unreadable, NodePort flows to them not counted: %w", err)
	}
	return out, nil
}

// localAddrs lists every address on every interface of the namespace netns
// (a file descriptor; 0: the calling thread's namespace), except those of
// kube-proxy's IPVS dummy device: it holds every ClusterIP, and kube-proxy
// itself leaves it out of the NodePort addresses.
func localAddrs(ns int) ([]netip.Addr, error) {
	var h *vnl.Handle
	var err error
	if ns == 0 {
		h, err = vnl.NewHandle(unix.NETLINK_ROUTE)
	} else {
		h, err = vnl.NewHandleAt(vnetns.NsHandle(ns), unix.NETLINK_ROUTE)
	}
	if err != nil {
		return nil, fmt.Errorf("netlink: %w", err)
	}
	defer h.Close()
	list, err := h.AddrList(nil, vnl.FAMILY_ALL)
	if err != nil {
		return nil, fmt.Errorf("list addresses: %w", err)
	}
	ipvsDummy := -1
	if l, err := h.LinkByName("kube-ipvs0"); err == nil {
		ipvsDummy = l.Attrs().Index
	}
	out := make([]netip.Addr, 0, len(list))
	for _, a := range list {
		if a.IPNet == nil || a.LinkIndex == ipvsDummy {
			continue
		}
		if ip, ok := netip.AddrFromSlice(a.IP); ok {
			out = append(out, ip.Unmap())
		}
	}
	return out, nil
}

func hasNodePort(req *collectorapi.Request) bool {
	for _, p := range req.Service.Ports {
		if p.NodePort > 0 {
			return true
		}
	}
	return false
}

func addrStrings(addrs []netip.Addr) []string {
	out := make([]string, len(addrs))
	for i, a := range addrs {
		out[i] = a.String()
	}
	return out
}

// dumpFlows gets the Service's candidate flows with the reader's method;
// nodePortAddrs are the NodePorts' possible destinations (nodePortAddresses).
func (r *Reader) dumpFlows(conn *ct.Conn, cfg *netlink.Config, req *collectorapi.Request, nodePortAddrs []netip.Addr) ([]ct.Flow, string, error) {
	var tupleErr error
	if r.Method == MethodAuto || r.Method == MethodTupleFilter {
		nl, err := netlink.Dial(unix.NETLINK_NETFILTER, cfg)
		if err == nil {
			var flows []ct.Flow
			flows, err = dumpServiceFlowsFiltered(nl, req, nodePortAddrs)
			nl.Close()
			if err == nil {
				return flows, "original destination per frontend (CTA_FILTER, in kernel)", nil
			}
		}
		if r.Method == MethodTupleFilter {
			return nil, "", err
		}
		tupleErr = err
		// The fallback copies every NATed entry into the collector (about
		// 2 KiB of heap each, measured); refuse it on a big table rather
		// than blow the collector's memory budget.
		if n, cerr := r.readSysctlInt("net/netfilter/nf_conntrack_count"); cerr == nil && n > MaxFallbackEntries {
			return nil, "", fmt.Errorf("flows not dumped: the kernel refused the per-frontend filter (%v) and the table holds %d entries (> %d) for a full dump", tupleErr, n, MaxFallbackEntries)
		}
	}
	flows, filter, err := dumpServiceFlows(conn)
	if tupleErr != nil {
		filter += "; tuple filter failed: " + tupleErr.Error()
	}
	return flows, filter, err
}

// dumpServiceFlows dumps only destination-NATed entries, filtered in the
// kernel (Linux ≥ 5.15); kube-proxy DNATs every Service connection, and the
// filter keeps a large table from being copied whole into the collector.
// ti-mo/conntrack cannot filter on addresses, so the rest is done here.
func dumpServiceFlows(conn *ct.Conn) ([]ct.Flow, string, error) {
	filter := ct.NewFilter().Status(ct.StatusDstNAT).StatusMask(uint32(ct.StatusDstNAT))
	flows, err := conn.DumpFilter(filter, nil)
	if err == nil {
		return flows, "status DST_NAT (in kernel)", nil
	}
	// Older kernels reject status filtering: dump everything and filter here.
	flows, err2 := conn.Dump(nil)
	if err2 != nil {
		return nil, "", fmt.Errorf("dump: %v (filtered dump: %v)", err2, err)
	}
	kept := flows[:0]
	for _, f := range flows {
		if f.Status&ct.StatusDstNAT != 0 {
			kept = append(kept, f)
		}
	}
	return kept, "status DST_NAT (in collector; kernel filter failed: " + err.Error() + ")", nil
}

// GroupFlows keeps the flows whose original destination is one of the
// Service's frontends (ClusterIP/externalIP/LB IP and port, or a NodePort on
// one of nodePortAddrs, see Reader.nodePortAddresses) and counts them per
// backend: the reply tuple's source is the address the flow was NATed to.
func GroupFlows(flows []ct.Flow, req *collectorapi.Request, nodePortAddrs []netip.Addr, flowCap int) *collectorapi.ServiceFlows {
	type key struct {
		addr  netip.AddrPort
		proto uint8
	}
	frontends := map[key]string{} // exact frontends
	for _, fe := range req.Service.Frontends() {
		frontends[key{fe.Addr, collectorapi.IPProtoNumber(fe.Protocol)}] = fe.PortName
	}
	for _, p := range req.Service.Ports {
		if p.NodePort <= 0 {
			continue
		}
		for _, a := range nodePortAddrs {
			k := key{netip.AddrPortFrom(a, uint16(p.NodePort)), collectorapi.IPProtoNumber(p.Protocol)}
			if _, ok := frontends[k]; !ok {
				frontends[k] = p.Name
			}
		}
	}
	expected := map[string]bool{}
	out := &collectorapi.ServiceFlows{DumpedEntries: len(flows), Frontends: []collectorapi.FrontendFlows{}}
	for _, p := range req.Service.Ports {
		for _, ep := range req.EndpointAddrs(p.Name) {
			if !expected[ep.String()] {
				expected[ep.String()] = true
				out.ExpectedBackends = append(out.ExpectedBackends, ep.String())
			}
		}
	}
	slices.Sort(out.ExpectedBackends)

	byFrontend := map[string]*collectorapi.FrontendFlows{}
	byBackend := map[string]map[string]*collectorapi.BackendFlows{}
	var order []string
	for _, f := range flows {
		o := f.TupleOrig
		dst := netip.AddrPortFrom(o.IP.DestinationAddress.Unmap(), o.Proto.DestinationPort)
		k := key{dst, o.Proto.Protocol}
		if _, ok := frontends[k]; !ok {
			continue
		}
		feName := dst.String() + "/" + collectorapi.IPProtoName(k.proto)
		fe := byFrontend[feName]
		if fe == nil {
			fe = &collectorapi.FrontendFlows{Frontend: feName}
			byFrontend[feName] = fe
			byBackend[feName] = map[string]*collectorapi.BackendFlows{}
			order = append(order, feName)
		}
		fe.Total++
		backend := netip.AddrPortFrom(f.TupleReply.IP.SourceAddress.Unmap(), f.TupleReply.Proto.SourcePort).String()
		b := byBackend[feName][backend]
		if b == nil {
			b = &collectorapi.BackendFlows{Backend: backend, Expected: expected[backend], States: map[string]int{}}
			byBackend[feName][backend] = b
		}
		b.Count++
		b.States[flowState(f)]++
		if !b.Expected {
			out.UnexpectedTotal++
			if len(out.Unexpected) < flowCap {
				out.Unexpected = append(out.Unexpected, describe(f, backend))
			} else {
				out.Truncated = true
			}
		}
	}
	slices.Sort(order)
	for _, name := range order {
		fe := byFrontend[name]
		for _, b := range byBackend[name] {
			fe.Backends = append(fe.Backends, *b)
		}
		slices.SortFunc(fe.Backends, func(a, b collectorapi.BackendFlows) int { return strings.Compare(a.Backend, b.Backend) })
		out.Frontends = append(out.Frontends, *fe)
	}
	return out
}

func describe(f ct.Flow, backend string) collectorapi.ConntrackFlow {
	tuple := func(t ct.Tuple) string {
		return netip.AddrPortFrom(t.IP.SourceAddress.Unmap(), t.Proto.SourcePort).String() + " -> " +
			netip.AddrPortFrom(t.IP.DestinationAddress.Unmap(), t.Proto.DestinationPort).String()
	}
	c := collectorapi.ConntrackFlow{
		Protocol:       collectorapi.IPProtoName(f.TupleOrig.Proto.Protocol),
		Original:       tuple(f.TupleOrig),
		Reply:          tuple(f.TupleReply),
		Backend:        backend,
		TimeoutSeconds: f.Timeout,
		Mark:           f.Mark,
		Zone:           f.Zone,
	}
	if s := f.Status.String(); s != "" {
		c.Status = strings.Split(s, "|")
	}
	if f.ProtoInfo.TCP != nil {
		c.TCPState = TCPStateName(f.ProtoInfo.TCP.State)
	}
	return c
}

func flowState(f ct.Flow) string {
	if f.ProtoInfo.TCP != nil {
		return TCPStateName(f.ProtoInfo.TCP.State)
	}
	if f.Status&ct.StatusAssured != 0 {
		return "ASSURED"
	}
	if f.Status&ct.StatusSeenReply != 0 {
		return "SEEN_REPLY"
	}
	return "UNREPLIED"
}

// TCPStateName names conntrack's TCP states (nf_conntrack_tcp.h).
func TCPStateName(s uint8) string {
	names := []string{"NONE", "SYN_SENT", "SYN_RECV", "ESTABLISHED", "FIN_WAIT", "CLOSE_WAIT", "LAST_ACK", "TIME_WAIT", "CLOSE", "SYN_SENT2"}
	if int(s) < len(names) {
		return names[s]
	}
	return "STATE_" + strconv.Itoa(int(s))
}

func counters(s ct.Stats) collectorapi.ConntrackCounters {
	return collectorapi.ConntrackCounters{
		Found: uint64(s.Found), Invalid: uint64(s.Invalid), Ignore: uint64(s.Ignore), Insert: uint64(s.Insert),
		InsertFailed: uint64(s.InsertFailed), Drop: uint64(s.Drop), EarlyDrop: uint64(s.EarlyDrop),
		Error: uint64(s.Error), SearchRestart: uint64(s.SearchRestart),
	}
}

func sumStats(per []ct.Stats) collectorapi.ConntrackCounters {
	var t collectorapi.ConntrackCounters
	for _, s := range per {
		c := counters(s)
		t.Found += c.Found
		t.Invalid += c.Invalid
		t.Ignore += c.Ignore
		t.Insert += c.Insert
		t.InsertFailed += c.InsertFailed
		t.Drop += c.Drop
		t.EarlyDrop += c.EarlyDrop
		t.Error += c.Error
		t.SearchRestart += c.SearchRestart
	}
	return t
}

// deltaStats subtracts per counter; the kernel's per-CPU counters are 32-bit
// and wrap, which a modular subtraction on each CPU would handle, but sums
// make that ambiguous, so a counter that went down reports 0.
func deltaStats(a, b collectorapi.ConntrackCounters) collectorapi.ConntrackCounters {
	d := func(x, y uint64) uint64 {
		if y < x {
			return 0
		}
		return y - x
	}
	return collectorapi.ConntrackCounters{
		Found: d(a.Found, b.Found), Invalid: d(a.Invalid, b.Invalid), Ignore: d(a.Ignore, b.Ignore),
		Insert: d(a.Insert, b.Insert), InsertFailed: d(a.InsertFailed, b.InsertFailed), Drop: d(a.Drop, b.Drop),
		EarlyDrop: d(a.EarlyDrop, b.EarlyDrop), Error: d(a.Error, b.Error), SearchRestart: d(a.SearchRestart, b.SearchRestart),
	}
}

func (r *Reader) proc() string {
	if r.ProcRoot == "" {
		return "/proc"
	}
	return r.ProcRoot
}

func (r *Reader) readSysctlInt(path string) (int64, error) {
	b, err := os.ReadFile(filepath.Join(r.proc(), "sys", path))
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
}

// readProcStat reads the per-CPU stat table of this thread's namespace.
func (r *Reader) readProcStat() (map[string]uint64, error) {
	b, err := os.ReadFile(filepath.Join(r.proc(), "thread-self/net/stat/nf_conntrack"))
	if err != nil {
		b, err = os.ReadFile(filepath.Join(r.proc(), "net/stat/nf_conntrack"))
	}
	if err != nil {
		return nil, err
	}
	return ParseProcStat(string(b))
}

// ParseProcStat sums /proc/net/stat/nf_conntrack over CPUs. The file is a
// header of column names and one row of hex numbers per CPU. "entries" is the
// global count repeated on every row, so it is taken once, not summed.
// Column names are kept as the kernel spells them (clashres, chainlength, …).
func ParseProcStat(text string) (map[string]uint64, error) {
	lines := strings.Split(strings.TrimSpace(text), "\n")
	if len(lines) < 2 {
		return nil, fmt.Errorf("nf_conntrack stat: %d lines, want a header and rows", len(lines))
	}
	cols := strings.Fields(lines[0])
	out := make(map[string]uint64, len(cols))
	for i, line := range lines[1:] {
		vals := strings.Fields(line)
		if len(vals) != len(cols) {
			return nil, fmt.Errorf("nf_conntrack stat row %d: %d values for %d columns", i+1, len(vals), len(cols))
		}
		for j, v := range vals {
			n, err := strconv.ParseUint(v, 16, 64)
			if err != nil {
				return nil, fmt.Errorf("nf_conntrack stat row %d column %s: %w", i+1, cols[j], err)
			}
			if cols[j] == "entries" {
				out["entries"] = n
				continue
			}
			out[cols[j]] += n
		}
	}
	return out, nil
}

// DeltaProcStat subtracts two ParseProcStat results; "entries" is kept as
// the second value, since it is a level and not a counter.
func DeltaProcStat(a, b map[string]uint64) map[string]uint64 {
	d := make(map[string]uint64, len(b))
	for k, v := range b {
		switch {
		case k == "entries":
			d[k] = v
		case v >= a[k]:
			d[k] = v - a[k]
		default:
			d[k] = 0
		}
	}
	return d
}
