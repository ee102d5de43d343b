package cilium

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cilium/hive/cell"
	"golang.org/x/sys/unix"

	cmtypes "github.com/cilium/cilium/pkg/clustermesh/types"
	"github.com/cilium/cilium/pkg/loadbalancer"
	lbmaps "github.com/cilium/cilium/pkg/loadbalancer/maps"
	"github.com/cilium/cilium/pkg/maglev"
	"github.com/cilium/cilium/pkg/option"
	"github.com/cilium/cilium/pkg/u8proto"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
	"github.com/svctrace/kubectl-svctrace/collectors/ebpf"
)

// innerEnv marks the re-executed test binary that runs in its own mount
// namespace.
const innerEnv = "SVBPF_PRIVATE_MOUNT_NS"

// bpffsRoot is the private bpffs the tests pin Cilium's maps in.
var bpffsRoot string

// TestMain re-executes the tests in a new mount namespace with private
// propagation (os/exec remounts / MS_REC|MS_PRIVATE when CLONE_NEWNS is
// unshared), detaches every bpffs visible there, the host's included, and
// mounts a fresh one: Cilium's pkg/bpf pins under the first bpf mount it
// finds in mountinfo, and that must never be the host's /sys/fs/bpf.
func TestMain(m *testing.M) {
	if os.Geteuid() != 0 {
		os.Exit(m.Run()) // the tests skip themselves
	}
	if os.Getenv(innerEnv) == "" {
		cmd := exec.Command(os.Args[0], os.Args[1:]...)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
		cmd.Env = append(os.Environ(), innerEnv+"=1")
		cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS}
		if err := cmd.Run(); err != nil {
			if ee, ok := err.(*exec.ExitError); ok {
				os.Exit(ee.ExitCode())
			}
			fmt.Fprintln(os.Stderr, "re-exec in a mount namespace:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	root, err := privateBPFFS()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bpffsRoot = root
	code := m.Run()
	_ = unix.Unmount(root, unix.MNT_DETACH)
	_ = os.Remove(root)
	os.Exit(code)
}

func privateBPFFS() (string, error) {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return "", fmt.Errorf("make / private: %w", err)
	}
	for _, mp := range bpfMounts() {
		if err := unix.Unmount(mp, unix.MNT_DETACH); err != nil {
			return "", fmt.Errorf("detach %s in the private namespace: %w", mp, err)
		}
	}
	root, err := os.MkdirTemp("", "svbpf-")
	if err != nil {
		return "", err
	}
	if err := unix.Mount("bpf", root, "bpf", 0, "mode=0700"); err != nil {
		return "", fmt.Errorf("mount bpffs at %s: %w", root, err)
	}
	if got := bpfMounts(); len(got) != 1 || got[0] != root {
		return "", fmt.Errorf("bpf mounts in the private namespace are %v, want only %s", got, root)
	}
	return root, nil
}

// bpfMounts lists the mount points of type bpf in this mount namespace.
func bpfMounts() []string {
	raw, _ := os.ReadFile("/proc/self/mountinfo")
	var out []string
	for _, line := range strings.Split(string(raw), "\n") {
		fields := strings.Fields(line)
		for i, f := range fields {
			if f == "-" && i+1 < len(fields) && fields[i+1] == "bpf" {
				out = append(out, fields[4])
			}
		}
	}
	return out
}

// ciliumMaps starts Cilium's own BPFLBMaps (map specs, names, flags and the
// Maglev inner-map spec of pkg/loadbalancer/maps) pinned in the private
// bpffs, and Cilium's Maglev table builder.
func ciliumMaps(t *testing.T) (*lbmaps.BPFLBMaps, *maglev.Maglev) {
	t.Helper()
	if bpffsRoot == "" {
		t.Skip("needs root: creates BPF maps in a private bpffs")
	}
	log := slog.New(slog.DiscardHandler)
	lc := cell.NewDefaultLifecycle(nil, 0, time.Second)
	ml := maglev.New(maglev.DefaultConfig, lc)
	// The agent's own sizing of the maps from its default flags.
	cfg, err := loadbalancer.NewConfig(log, loadbalancer.DefaultUserConfig, option.Config)
	if err != nil {
		t.Fatal(err)
	}
	r := &lbmaps.BPFLBMaps{Log: log, Pinned: true, Cfg: cfg, MaglevCfg: maglev.DefaultConfig,
		ExtCfg: loadbalancer.ExternalConfig{EnableIPv4: true, EnableIPv6: true, KubeProxyReplacement: true}}
	lc.Append(r)
	if err := lc.Start(log, context.Background()); err != nil {
		t.Fatalf("start Cilium's LB maps: %v", err)
	}
	t.Cleanup(func() {
		if err := lc.Stop(log, context.Background()); err != nil {
			t.Errorf("stop: %v", err)
		}
		matches, _ := filepath.Glob(filepath.Join(bpffsRoot, "tc", "globals", "*"))
		for _, p := range matches {
			os.Remove(p)
		}
	})
	return r, ml
}

// backendSpec is one backend of a frontend as the agent's control plane
// hands it to the datapath writer.
type backendSpec struct {
	addr      string
	port      uint16
	state     loadbalancer.BackendState
	unhealthy bool // quarantined by the health checker
}

// frontendSpec is one Cilium frontend (address, port, protocol, scope).
type frontendSpec struct {
	typ      loadbalancer.SVCType
	addr     string
	port     uint16
	proto    loadbalancer.L4Type
	scope    uint8
	extLocal bool
	intLocal bool
	affinity uint32 // seconds, 0 none
	maglev   bool
	backends []backendSpec
}

// written is what the writer put in the maps for one frontend.
type written struct {
	count, qcount int
	revNAT        uint16
	flags         uint16
	lbAlg         loadbalancer.SVCLoadBalancingAlgorithm
	slots         []writtenSlot
	maglevTable   []loadbalancer.BackendID
}

type writtenSlot struct {
	id    loadbalancer.BackendID
	addr  string
	port  uint16
	state string
}

// agent writes frontends the way Cilium's BPF reconciler does
// (pkg/loadbalancer/reconciler/bpf_reconciler.go updateFrontend): backends
// sorted healthy first, then by state, address and port; maintenance
// backends kept out of the slots; count the active backends (the
// terminating ones when none is active), qcount the rest; slot 0 carries
// flags, rev-NAT index, LB algorithm and affinity timeout; the Maglev table
// is built from the active backends. Every key, value and flag is built
// with Cilium's own types and constructors.
type agent struct {
	t       *testing.T
	m       *lbmaps.BPFLBMaps
	ml      *maglev.Maglev
	nextSvc loadbalancer.ServiceID
	nextBe  loadbalancer.BackendID
	beIDs   map[loadbalancer.L3n4Addr]loadbalancer.BackendID
	wrote   map[string]written
}

func newAgent(t *testing.T) *agent {
	m, ml := ciliumMaps(t)
	return &agent{t: t, m: m, ml: ml, nextSvc: 1, nextBe: 1, beIDs: map[loadbalancer.L3n4Addr]loadbalancer.BackendID{}, wrote: map[string]written{}}
}

func feKey(addr string, port uint16, proto string, scope uint8) string {
	return fmt.Sprintf("%s|%d|%s|%d", netip.MustParseAddr(addr), port, strings.ToUpper(proto), scope)
}

func (a *agent) program(fe frontendSpec) {
	t := a.t
	t.Helper()
	feAddr := netip.MustParseAddr(fe.addr)
	proto := loadbalancer.L4TypeAsProtocolNumber(fe.proto)
	id := a.nextSvc
	a.nextSvc++
	var key lbmaps.ServiceKey
	var val lbmaps.ServiceValue
	if feAddr.Is6() {
		key, val = lbmaps.NewService6Key(feAddr.AsSlice(), fe.port, proto, fe.scope, 0), &lbmaps.Service6Value{}
	} else {
		key, val = lbmaps.NewService4Key(feAddr.AsSlice(), fe.port, proto, fe.scope, 0), &lbmaps.Service4Value{}
	}
	flags := loadbalancer.NewSvcFlag(&loadbalancer.SvcFlagParam{SvcType: fe.typ, SvcExtLocal: fe.extLocal, SvcIntLocal: fe.intLocal,
		SessionAffinity: fe.affinity > 0, IsRoutable: !key.IsSurrogate() && fe.typ != loadbalancer.SVCTypeClusterIP})
	val.SetFlags(flags.UInt16())
	val.SetRevNat(int(id))

	bes := slices.Clone(fe.backends)
	sort.SliceStable(bes, func(i, j int) bool {
		x, y := bes[i], bes[j]
		if x.unhealthy != y.unhealthy {
			return !x.unhealthy
		}
		if x.state != y.state {
			return x.state < y.state
		}
		if c := netip.MustParseAddr(x.addr).Compare(netip.MustParseAddr(y.addr)); c != 0 {
			return c < 0
		}
		return x.port < y.port
	})
	w := written{revNAT: uint16(id), flags: flags.UInt16()}
	active, terminating, inactive := 0, 0, 0
	var activeInfos []maglev.BackendInfo
	slot := 1
	for _, be := range bes {
		ac := cmtypes.AddrClusterFrom(netip.MustParseAddr(be.addr), 0)
		l3n4 := loadbalancer.NewL3n4Addr(fe.proto, ac, be.port, loadbalancer.ScopeExternal)
		beID, ok := a.beIDs[l3n4]
		if !ok {
			beID = a.nextBe
			a.nextBe++
			a.beIDs[l3n4] = beID
		}
		var lbbe lbmaps.Backend
		var err error
		if ac.Is6() {
			lbbe, err = lbmaps.NewBackend6V3(beID, ac, be.port, proto, be.state, 0)
		} else {
			lbbe, err = lbmaps.NewBackend4V3(beID, ac, be.port, proto, be.state, 0)
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := a.m.UpdateBackend(lbbe.GetKey(), lbbe.GetValue().ToNetwork()); err != nil {
			t.Fatalf("backend %d: %v", beID, err)
		}
		if be.state == loadbalancer.BackendStateMaintenance {
			continue
		}
		val.SetBackendID(beID)
		val.SetRevNat(int(id))
		key.SetBackendSlot(slot)
		if err := a.m.UpdateService(key.ToNetwork(), val.ToNetwork()); err != nil {
			t.Fatalf("slot %d: %v", slot, err)
		}
		if fe.affinity > 0 && be.state == loadbalancer.BackendStateActive {
			mk := &lbmaps.AffinityMatchKey{BackendID: beID, RevNATID: uint16(id)}
			if err := a.m.UpdateAffinityMatch(mk.ToNetwork(), &lbmaps.AffinityMatchValue{}); err != nil {
				t.Fatal(err)
			}
		}
		state := be.state
		if be.unhealthy {
			state = loadbalancer.BackendStateQuarantined
		}
		switch state {
		case loadbalancer.BackendStateActive:
			active++
			activeInfos = append(activeInfos, maglev.BackendInfo{ID: beID, Addr: l3n4, Weight: loadbalancer.DefaultBackendWeight})
		case loadbalancer.BackendStateTerminating:
			terminating++
		default:
			inactive++
		}
		stateName, _ := loadbalancer.GetBackendStateFromFlags(loadbalancer.NewBackendFlags(be.state)).String()
		w.slots = append(w.slots, writtenSlot{id: beID, addr: netip.MustParseAddr(be.addr).String(), port: be.port, state: stateName})
		slot++
	}
	if active == 0 {
		active = terminating
	} else {
		inactive += terminating
	}
	if fe.maglev && len(activeInfos) > 0 {
		w.maglevTable = a.ml.GetLookupTable(slices.Values(activeInfos))
		if err := a.m.UpdateMaglev(lbmaps.MaglevOuterKey{RevNatID: uint16(id)}, w.maglevTable, feAddr.Is6()); err != nil {
			t.Fatalf("maglev: %v", err)
		}
	}
	var rk lbmaps.RevNatKey
	var rv lbmaps.RevNatValue
	if feAddr.Is6() {
		rk, rv = &lbmaps.RevNat6Key{Key: uint16(id)}, key.RevNatValue()
	} else {
		rk, rv = &lbmaps.RevNat4Key{Key: uint16(id)}, key.RevNatValue()
	}
	if err := a.m.UpdateRevNat(rk.ToNetwork(), rv.ToNetwork()); err != nil {
		t.Fatal(err)
	}
	val.SetCount(active)
	val.SetQCount(inactive)
	key.SetBackendSlot(0)
	val.SetBackendID(0)
	w.lbAlg = loadbalancer.SVCLoadBalancingAlgorithmRandom
	if fe.maglev {
		w.lbAlg = loadbalancer.SVCLoadBalancingAlgorithmMaglev
	}
	val.SetLbAlg(w.lbAlg)
	if fe.affinity > 0 {
		if err := val.SetSessionAffinityTimeoutSec(fe.affinity); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.m.UpdateService(key.ToNetwork(), val.ToNetwork()); err != nil {
		t.Fatalf("master: %v", err)
	}
	w.count, w.qcount = active, inactive
	a.wrote[feKey(fe.addr, fe.port, fe.proto, fe.scope)] = w
}

// web's backends: two active (one on this node), one terminating, one
// quarantined by the health checker, one under maintenance.
var webBackends = []backendSpec{
	{addr: "10.244.2.7", port: 8080, state: loadbalancer.BackendStateActive},
	{addr: "10.244.1.5", port: 8080, state: loadbalancer.BackendStateActive},
	{addr: "10.244.2.8", port: 8080, state: loadbalancer.BackendStateTerminating},
	{addr: "10.244.3.9", port: 8080, state: loadbalancer.BackendStateActive, unhealthy: true},
	{addr: "10.244.3.10", port: 8080, state: loadbalancer.BackendStateMaintenance},
}

var webLocal = []backendSpec{{addr: "10.244.1.5", port: 8080, state: loadbalancer.BackendStateActive}}

// programCluster writes what Cilium v1.20 programs for these Services on a
// kube-proxy-free node (pkg/loadbalancer/reflectors/conversions.go): ClusterIP
// frontends in the external scope only; NodePort on the zero addresses and
// the LoadBalancer and external IPs in both scopes when
// externalTrafficPolicy is Local and internalTrafficPolicy Cluster, the
// external scope holding the node's own backends only.
func programCluster(a *agent) {
	web6 := []backendSpec{{addr: "fd00:244::1:5", port: 8080}, {addr: "fd00:244::2:7", port: 8080}}
	web6Local := web6[:1]
	web := func(typ loadbalancer.SVCType, addr string, port uint16, local, all []backendSpec) {
		a.program(frontendSpec{typ: typ, addr: addr, port: port, proto: loadbalancer.TCP, scope: loadbalancer.ScopeExternal, extLocal: true, affinity: 10800, backends: local})
		a.program(frontendSpec{typ: typ, addr: addr, port: port, proto: loadbalancer.TCP, scope: loadbalancer.ScopeInternal, extLocal: true, affinity: 10800, backends: all})
	}
	a.program(frontendSpec{typ: loadbalancer.SVCTypeClusterIP, addr: "10.96.0.50", port: 80, proto: loadbalancer.TCP, extLocal: true, affinity: 10800, backends: webBackends})
	a.program(frontendSpec{typ: loadbalancer.SVCTypeClusterIP, addr: "fd00:96::50", port: 80, proto: loadbalancer.TCP, extLocal: true, affinity: 10800, backends: web6})
	web(loadbalancer.SVCTypeNodePort, "0.0.0.0", 30080, webLocal, webBackends)
	web(loadbalancer.SVCTypeNodePort, "::", 30080, web6Local, web6)
	web(loadbalancer.SVCTypeExternalIPs, "192.0.2.9", 80, webLocal, webBackends)
	web(loadbalancer.SVCTypeLoadBalancer, "198.51.100.7", 80, webLocal, webBackends)

	dns := []backendSpec{{addr: "10.244.1.20", port: 53}, {addr: "10.244.2.20", port: 53}}
	a.program(frontendSpec{typ: loadbalancer.SVCTypeClusterIP, addr: "10.96.0.10", port: 53, proto: loadbalancer.UDP, backends: dns})
	a.program(frontendSpec{typ: loadbalancer.SVCTypeClusterIP, addr: "10.96.0.10", port: 53, proto: loadbalancer.TCP, backends: dns})

	a.program(frontendSpec{typ: loadbalancer.SVCTypeClusterIP, addr: "10.96.0.60", port: 443, proto: loadbalancer.TCP, maglev: true,
		backends: []backendSpec{{addr: "10.244.1.30", port: 8443}, {addr: "10.244.2.30", port: 8443}, {addr: "10.244.3.30", port: 8443},
			{addr: "10.244.3.31", port: 8443, state: loadbalancer.BackendStateTerminating}}})

	// Only terminating backends: the agent counts them (KEP-1669 fallback).
	a.program(frontendSpec{typ: loadbalancer.SVCTypeClusterIP, addr: "10.96.0.70", port: 80, proto: loadbalancer.TCP,
		backends: []backendSpec{{addr: "10.244.2.40", port: 80, state: loadbalancer.BackendStateTerminating}}})
}

func request(ns, name string, clusterIPs []string, ports []collectorapi.ServicePort, extIPs, lbIPs []string) *collectorapi.Request {
	return &collectorapi.Request{Service: collectorapi.ServiceSpec{Namespace: ns, Name: name, ClusterIPs: clusterIPs,
		ExternalIPs: extIPs, LoadBalancerIPs: lbIPs, Ports: ports}}
}

var (
	webReq = withEndpoints(request("default", "web", []string{"10.96.0.50", "fd00:96::50"},
		[]collectorapi.ServicePort{{Name: "http", Protocol: "TCP", Port: 80, NodePort: 30080}}, []string{"192.0.2.9"}, []string{"198.51.100.7"}),
		"http", 8080, "10.244.1.5", "10.244.2.7", "10.244.2.8", "10.244.3.9", "10.244.3.10", "fd00:244::1:5", "fd00:244::2:7")
	dnsReq = request("kube-system", "kube-dns", []string{"10.96.0.10"},
		[]collectorapi.ServicePort{{Name: "dns", Protocol: "UDP", Port: 53}, {Name: "dns-tcp", Protocol: "TCP", Port: 53}}, nil, nil)
	hashReq  = request("default", "hash", []string{"10.96.0.60"}, []collectorapi.ServicePort{{Name: "https", Protocol: "TCP", Port: 443}}, nil, nil)
	drainReq = request("default", "drain", []string{"10.96.0.70"}, []collectorapi.ServicePort{{Protocol: "TCP", Port: 80}}, nil, nil)
)

func withEndpoints(r *collectorapi.Request, portName string, port int32, ips ...string) *collectorapi.Request {
	for _, ip := range ips {
		r.Endpoints = append(r.Endpoints, collectorapi.Endpoint{IP: ip, Ports: map[string]int32{portName: port}, Ready: true, Serving: true})
	}
	return r
}

func read(t *testing.T, req *collectorapi.Request) *collectorapi.CiliumObservation {
	t.Helper()
	obs, err := ebpf.Read(context.Background(), req, bpffsRoot)
	if err != nil {
		t.Fatal(err)
	}
	c := obs.Cilium
	if !c.Detected || c.Layout != ebpf.LayoutServicesV2BackendsV3 || c.Error != "" {
		t.Fatalf("detected %v layout %q error %q", c.Detected, c.Layout, c.Error)
	}
	return c
}

// checkAgainstWriter compares each frontend svctrace read with what the
// writer put there, slot by slot.
func checkAgainstWriter(t *testing.T, a *agent, c *collectorapi.CiliumObservation) {
	t.Helper()
	for _, fe := range c.Frontends {
		w, ok := a.wrote[feKey(fe.Address, fe.Port, fe.Protocol, fe.Scope)]
		if !ok {
			if fe.Found {
				t.Errorf("%s:%d/%s scope %d read but never written", fe.Address, fe.Port, fe.Protocol, fe.Scope)
			}
			continue
		}
		if !fe.Found {
			t.Errorf("%s:%d/%s scope %d written but not found", fe.Address, fe.Port, fe.Protocol, fe.Scope)
			continue
		}
		if int(fe.BackendCount) != w.count || int(fe.QuarantinedCount) != w.qcount || fe.RevNATIndex != w.revNAT ||
			uint16(fe.Flags)|uint16(fe.Flags2)<<8 != w.flags || loadbalancer.SVCLoadBalancingAlgorithm(fe.LBAlgorithm) != w.lbAlg ||
			fe.KeyProtocol != fe.Protocol {
			t.Errorf("%s:%d/%s scope %d master: read count %d qcount %d revnat %d flags %#x/%#x alg %d key proto %s; wrote %+v",
				fe.Address, fe.Port, fe.Protocol, fe.Scope, fe.BackendCount, fe.QuarantinedCount, fe.RevNATIndex, fe.Flags, fe.Flags2, fe.LBAlgorithm, fe.KeyProtocol, w)
		}
		var got []writtenSlot
		for _, b := range fe.Backends {
			if !b.Found || b.Protocol != fe.Protocol {
				t.Errorf("%s slot %d: %+v", fe.Address, b.Slot, b)
			}
			got = append(got, writtenSlot{id: loadbalancer.BackendID(b.BackendID), addr: b.Address, port: b.Port, state: b.State})
		}
		if !slices.Equal(got, w.slots) {
			t.Errorf("%s:%d/%s scope %d slots:\n read  %+v\n wrote %+v", fe.Address, fe.Port, fe.Protocol, fe.Scope, got, w.slots)
		}
		if w.maglevTable != nil {
			want := map[uint32]int{}
			for _, id := range w.maglevTable {
				want[uint32(id)]++
			}
			if fe.Maglev == nil || fe.Maglev.Error != "" || fe.Maglev.TableSize != len(w.maglevTable) || len(fe.Maglev.Backends) != len(want) {
				t.Fatalf("maglev %+v, wrote a %d-entry table over %d backends", fe.Maglev, len(w.maglevTable), len(want))
			}
			for _, s := range fe.Maglev.Backends {
				if want[s.BackendID] != s.Entries {
					t.Errorf("maglev backend %d: read %d entries, table has %d", s.BackendID, s.Entries, want[s.BackendID])
				}
			}
		} else if fe.Maglev != nil {
			t.Errorf("%s: maglev %+v where none was written", fe.Address, fe.Maglev)
		}
	}
}

func TestCiliumV120MapsReadBySvctrace(t *testing.T) {
	a := newAgent(t)
	programCluster(a)

	web := read(t, webReq)
	checkAgainstWriter(t, a, web)
	// ClusterIPs: external scope only (v4, v6); externalIP, LB and the
	// NodePort on 0.0.0.0 and [::] in two scopes.
	var found []string
	for _, fe := range web.Frontends {
		if fe.Found {
			found = append(found, fmt.Sprintf("%s %s:%d/%d", fe.Frontend, fe.Address, fe.Port, fe.Scope))
		}
	}
	want := []string{"clusterIP 10.96.0.50:80/0", "clusterIP fd00:96::50:80/0", "externalIP 192.0.2.9:80/0", "externalIP 192.0.2.9:80/1",
		"loadBalancerIP 198.51.100.7:80/0", "loadBalancerIP 198.51.100.7:80/1", "nodePort 0.0.0.0:30080/0", "nodePort 0.0.0.0:30080/1",
		"nodePort :::30080/0", "nodePort :::30080/1"}
	if !slices.Equal(found, want) {
		t.Errorf("found frontends\n %v\nwant\n %v", found, want)
	}
	cip := web.Frontends[0]
	if cip.BackendCount != 2 || cip.QuarantinedCount != 2 || len(cip.Backends) != 4 || cip.AffinityTimeoutSecs != 10800 {
		t.Errorf("web ClusterIP: count %d qcount %d slots %d affinity %d, want 2 active, terminating+quarantined after them, maintenance left out, 10800 s",
			cip.BackendCount, cip.QuarantinedCount, len(cip.Backends), cip.AffinityTimeoutSecs)
	}
	if s := []string{cip.Backends[0].State, cip.Backends[2].State, cip.Backends[3].State}; !slices.Equal(s, []string{"active", "terminating", "active"}) {
		// The quarantined backend is active in the backend map: the
		// health checker's verdict is per frontend, in qcount only.
		t.Errorf("web ClusterIP slot states %v", s)
	}

	if len(web.Maintenance) != 1 || web.Maintenance[0].Address != "10.244.3.10" || web.Maintenance[0].State != "maintenance" || web.Maintenance[0].Port != 8080 {
		t.Errorf("maintenance backends %+v, want 10.244.3.10:8080 (in the backends map, in no slot)", web.Maintenance)
	}

	dns := read(t, dnsReq)
	checkAgainstWriter(t, a, dns)
	if len(dns.Frontends) != 2 || dns.Frontends[0].Protocol != "UDP" || dns.Frontends[1].Protocol != "TCP" ||
		dns.Frontends[0].RevNATIndex == dns.Frontends[1].RevNATIndex || dns.Frontends[0].Backends[0].BackendID == dns.Frontends[1].Backends[0].BackendID {
		t.Errorf("kube-dns 53/UDP and 53/TCP must be two frontends with their own backends: %+v", dns.Frontends)
	}

	hash := read(t, hashReq)
	checkAgainstWriter(t, a, hash)
	if hash.Frontends[0].Maglev == nil || hash.Frontends[0].Maglev.TableSize != int(maglev.DefaultTableSize) {
		t.Errorf("maglev table %+v", hash.Frontends[0].Maglev)
	}

	drain := read(t, drainReq)
	checkAgainstWriter(t, a, drain)
	if d := drain.Frontends[0]; d.BackendCount != 1 || d.Backends[0].State != "terminating" {
		t.Errorf("terminating fallback: %+v", d)
	}

	crossCheckBPFTool(t, []*collectorapi.CiliumObservation{web, dns, hash, drain})
	if *update {
		writeFixture(t, map[string]*collectorapi.CiliumObservation{"default/web": web, "kube-system/kube-dns": dns, "default/hash": hash, "default/drain": drain})
	}
}

var update = flag.Bool("update", false, "rewrite "+fixturePath+" from the maps these tests create")

// fixturePath is where the observations read here are kept for trace's
// judge tests: observations of maps Cilium's own code wrote, the pinned
// paths rewritten to the default bpffs.
const fixturePath = "../../../trace/testdata/ebpf/cilium-v1.20.2-observations.json"

func writeFixture(t *testing.T, obs map[string]*collectorapi.CiliumObservation) {
	t.Helper()
	for _, c := range obs {
		for i := range c.Maps {
			c.Maps[i].Path = strings.Replace(c.Maps[i].Path, bpffsRoot, "/sys/fs/bpf", 1)
		}
	}
	b, err := json.MarshalIndent(obs, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(fixturePath), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(fixturePath, append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}

// bpftoolDump runs Debian's bpftool on one pinned map (or a map id).
func bpftoolDump(t *testing.T, args ...string) []struct{ Key, Value []byte } {
	t.Helper()
	path, err := exec.LookPath("bpftool")
	if err != nil {
		t.Skip("bpftool not installed (test/testbed/deps.sh installs it)")
	}
	out, err := exec.Command(path, append([]string{"-j", "map", "dump"}, args...)...).Output()
	if err != nil {
		t.Fatalf("bpftool map dump %v: %v", args, err)
	}
	var raw []struct {
		Key   []string `json:"key"`
		Value []string `json:"value"`
	}
	if err := json.Unmarshal(out, &raw); err != nil {
		t.Fatalf("bpftool output: %v\n%s", err, out)
	}
	hex := func(in []string) []byte {
		b := make([]byte, len(in))
		for i, s := range in {
			v, err := strconv.ParseUint(strings.TrimPrefix(s, "0x"), 16, 8)
			if err != nil {
				t.Fatalf("bpftool byte %q: %v", s, err)
			}
			b[i] = byte(v)
		}
		return b
	}
	var entries []struct{ Key, Value []byte }
	for _, e := range raw {
		entries = append(entries, struct{ Key, Value []byte }{hex(e.Key), hex(e.Value)})
	}
	return entries
}

func pinned(name string) string { return filepath.Join(bpffsRoot, "tc", "globals", name) }

// crossCheckBPFTool decodes bpftool's dump of the same pinned maps with
// Cilium's own key/value types and checks that every entry for the read
// frontends is what svctrace decoded, and that svctrace missed none.
func crossCheckBPFTool(t *testing.T, obs []*collectorapi.CiliumObservation) {
	t.Helper()
	type slotKey struct {
		addr        netip.Addr
		port        uint16
		proto       uint8
		scope, slot uint16
	}
	type svcEntry struct {
		backendID, count, qcount, revNAT, flags uint32
	}
	services := map[slotKey]svcEntry{}
	for _, name := range []string{lbmaps.Service4MapV2Name, lbmaps.Service6MapV2Name} {
		for _, e := range bpftoolDump(t, "pinned", pinned(name)) {
			var k lbmaps.ServiceKey
			var v lbmaps.ServiceValue
			if len(e.Key) == 12 {
				k, v = &lbmaps.Service4Key{}, &lbmaps.Service4Value{}
			} else {
				k, v = &lbmaps.Service6Key{}, &lbmaps.Service6Value{}
			}
			if err := binary.Read(bytes.NewReader(e.Key), binary.NativeEndian, k); err != nil {
				t.Fatal(err)
			}
			if err := binary.Read(bytes.NewReader(e.Value), binary.NativeEndian, v); err != nil {
				t.Fatal(err)
			}
			k, v = k.ToHost(), v.ToHost()
			services[slotKey{k.GetAddress(), k.GetPort(), k.GetProtocol(), uint16(k.GetScope()), uint16(k.GetBackendSlot())}] =
				svcEntry{uint32(v.GetBackendID()), uint32(v.GetCount()), uint32(v.GetQCount()), uint32(v.GetRevNat()), uint32(v.GetFlags())}
		}
	}
	type beEntry struct {
		addr  string
		port  uint16
		state string
	}
	backends := map[uint32]beEntry{}
	for _, name := range []string{lbmaps.Backend4MapV3Name, lbmaps.Backend6MapV3Name} {
		for _, e := range bpftoolDump(t, "pinned", pinned(name)) {
			var v lbmaps.BackendValue = &lbmaps.Backend4ValueV3{}
			if len(e.Value) == 24 {
				v = &lbmaps.Backend6ValueV3{}
			}
			if err := binary.Read(bytes.NewReader(e.Value), binary.NativeEndian, v); err != nil {
				t.Fatal(err)
			}
			v = v.ToHost()
			st, _ := loadbalancer.GetBackendStateFromFlags(v.GetFlags()).String()
			backends[binary.NativeEndian.Uint32(e.Key)] = beEntry{v.GetAddress().Addr().String(), v.GetPort(), st}
		}
	}
	maglevIDs := map[uint16]uint32{}
	for _, name := range []string{lbmaps.MaglevOuter4MapName, lbmaps.MaglevOuter6MapName} {
		for _, e := range bpftoolDump(t, "pinned", pinned(name)) {
			maglevIDs[binary.BigEndian.Uint16(e.Key)] = binary.NativeEndian.Uint32(e.Value)
		}
	}

	seen := map[slotKey]bool{}
	checked := 0
	for _, c := range obs {
		for _, fe := range c.Frontends {
			addr := netip.MustParseAddr(fe.Address)
			proto := uint8(u8proto.ANY)
			if fe.KeyProtocol != "ANY" {
				proto = collectorapi.IPProtoNumber(fe.KeyProtocol)
			}
			k := slotKey{addr, fe.Port, proto, uint16(fe.Scope), 0}
			m, ok := services[k]
			if ok != fe.Found {
				t.Errorf("%+v: bpftool has it %v, svctrace found %v", k, ok, fe.Found)
				continue
			}
			if !ok {
				continue
			}
			seen[k] = true
			checked++
			if m.count != uint32(fe.BackendCount) || m.qcount != uint32(fe.QuarantinedCount) || m.revNAT != uint32(fe.RevNATIndex) ||
				m.flags != uint32(fe.Flags)|uint32(fe.Flags2)<<8 || m.backendID&0xffffff != fe.AffinityTimeoutSecs || m.backendID>>24 != uint32(fe.LBAlgorithm) {
				t.Errorf("%+v master: bpftool %+v, svctrace %+v", k, m, fe)
			}
			for _, b := range fe.Backends {
				k.slot = b.Slot
				s, ok := services[k]
				seen[k] = true
				if !ok || s.backendID != b.BackendID {
					t.Errorf("%+v: bpftool %v %+v, svctrace backend %d", k, ok, s, b.BackendID)
					continue
				}
				if be := backends[b.BackendID]; be != (beEntry{b.Address, b.Port, b.State}) {
					t.Errorf("backend %d: bpftool %+v, svctrace %+v", b.BackendID, be, b)
				}
			}
			if fe.Maglev != nil {
				id, ok := maglevIDs[fe.RevNATIndex]
				if !ok {
					t.Errorf("rev-NAT %d: svctrace read a Maglev table bpftool does not list", fe.RevNATIndex)
					continue
				}
				inner := bpftoolDump(t, "id", strconv.Itoa(int(id)))
				if len(inner) != 1 {
					t.Fatalf("maglev inner map %d: %d entries", id, len(inner))
				}
				count := map[uint32]int{}
				for i := 0; i+4 <= len(inner[0].Value); i += 4 {
					count[binary.NativeEndian.Uint32(inner[0].Value[i:])]++
				}
				for _, s := range fe.Maglev.Backends {
					if count[s.BackendID] != s.Entries {
						t.Errorf("maglev backend %d: bpftool %d entries, svctrace %d", s.BackendID, count[s.BackendID], s.Entries)
					}
				}
				if len(count) != len(fe.Maglev.Backends) {
					t.Errorf("maglev: bpftool %d backends, svctrace %d", len(count), len(fe.Maglev.Backends))
				}
			}
		}
	}
	for _, c := range obs {
		for _, b := range c.Maintenance {
			if be := backends[b.BackendID]; be != (beEntry{b.Address, b.Port, b.State}) {
				t.Errorf("maintenance backend %d: bpftool %+v, svctrace %+v", b.BackendID, be, b)
			}
		}
	}
	for k := range services {
		if !seen[k] {
			t.Errorf("bpftool lists %+v, which svctrace did not read", k)
		}
	}
	if checked < 12 {
		t.Errorf("only %d frontends cross-checked", checked)
	}
}
