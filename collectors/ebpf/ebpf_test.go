package ebpf

import (
	"context"
	"encoding/binary"
	"net/netip"
	"os"
	"path/filepath"
	"testing"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
)

// mountBPFFS mounts a private bpffs at a temp dir and unmounts it after the test.
func mountBPFFS(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount bpffs and create maps")
	}
	root := t.TempDir()
	if err := unix.Mount("bpf", root, "bpf", 0, "mode=0700"); err != nil {
		t.Skipf("mount bpffs: %v", err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(root, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", root, err)
		}
	})
	if err := os.MkdirAll(filepath.Join(root, "tc", "globals"), 0o700); err != nil {
		t.Fatal(err)
	}
	return root
}

func pinMap(t *testing.T, root, name string, keySize, valueSize uint32) *ebpf.Map {
	t.Helper()
	m, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.Hash, KeySize: keySize, ValueSize: valueSize, MaxEntries: 64})
	if err != nil {
		t.Fatalf("create %s: %v", name, err)
	}
	t.Cleanup(func() { m.Close() })
	if err := m.Pin(filepath.Join(root, "tc", "globals", name)); err != nil {
		t.Fatalf("pin %s: %v", name, err)
	}
	return m
}

func put(t *testing.T, m *ebpf.Map, k, v []byte) {
	t.Helper()
	if err := m.Put(k, v); err != nil {
		t.Fatal(err)
	}
}

func webRequest() *collectorapi.Request {
	return &collectorapi.Request{Service: collectorapi.ServiceSpec{Namespace: "default", Name: "web",
		ClusterIPs: []string{"10.96.0.50"}, ExternalIPs: []string{"192.0.2.9"},
		Ports: []collectorapi.ServicePort{{Name: "http", Protocol: "TCP", Port: 80, NodePort: 30080}}}}
}

// TestCiliumMapsInOwnBPFFS writes default/web the way Cilium's agent would
// (documented layout): two backends, one terminating, session affinity, a
// second (internal) scope, a missing slot, plus a Calico frontend map.
func TestCiliumMapsInOwnBPFFS(t *testing.T) {
	root := mountBPFFS(t)
	svc := pinMap(t, root, CiliumServices4, 12, 12)
	be := pinMap(t, root, CiliumBackends4, 4, 12)
	pinMap(t, root, "cilium_lb4_reverse_nat", 2, 6)
	pinMap(t, root, "cali_v4_nat_fe3", 16, 20)

	ip := netip.MustParseAddr("10.96.0.50")
	// Slot 0: 3 slots, rev-NAT 42, affinity 10800 s, lb_alg 1.
	put(t, svc, ServiceKey(ip, 80, 0, 6, 0), EncodeServiceValue(ServiceValue{BackendID: 10800 | 1<<24, Count: 3, RevNATIndex: 42, Flags: 0x10}))
	put(t, svc, ServiceKey(ip, 80, 1, 6, 0), EncodeServiceValue(ServiceValue{BackendID: 7}))
	put(t, svc, ServiceKey(ip, 80, 2, 6, 0), EncodeServiceValue(ServiceValue{BackendID: 9}))
	// Slot 3 missing on purpose.
	// Internal scope (two-scope ITP=Local): one local backend.
	put(t, svc, ServiceKey(ip, 80, 0, 6, 1), EncodeServiceValue(ServiceValue{Count: 1, RevNATIndex: 42}))
	put(t, svc, ServiceKey(ip, 80, 1, 6, 1), EncodeServiceValue(ServiceValue{BackendID: 7}))
	key := func(id uint32) []byte { k := make([]byte, 4); binary.NativeEndian.PutUint32(k, id); return k }
	// NodePort surrogate frontend 0.0.0.0:30080, older key layout without the protocol.
	put(t, svc, ServiceKey(netip.IPv4Unspecified(), 30080, 0, 0, 0), EncodeServiceValue(ServiceValue{Count: 1, RevNATIndex: 43}))
	put(t, svc, ServiceKey(netip.IPv4Unspecified(), 30080, 1, 0, 0), EncodeServiceValue(ServiceValue{BackendID: 9}))
	put(t, be, key(7), EncodeBackend(Backend{Addr: netip.MustParseAddr("10.244.1.5"), Port: 8080, Proto: 6}))
	put(t, be, key(9), EncodeBackend(Backend{Addr: netip.MustParseAddr("10.244.2.7"), Port: 8080, Proto: 6, State: 1, Zone: 2}))

	obs, err := Read(context.Background(), webRequest(), root)
	if err != nil {
		t.Fatal(err)
	}
	c := obs.Cilium
	if !c.Detected || c.Error != "" || len(c.Maps) != 3 {
		t.Fatalf("cilium %+v", c)
	}
	if !obs.Calico.Detected || len(obs.Calico.Maps) != 1 || obs.Calico.Maps[0].KeySize != 16 {
		t.Errorf("calico %+v", obs.Calico)
	}
	if len(c.Frontends) != 4 {
		t.Fatalf("want ClusterIP ext scope, ClusterIP int scope, externalIP, NodePort; got %+v", c.Frontends)
	}
	ext, in, eip, np := c.Frontends[0], c.Frontends[1], c.Frontends[2], c.Frontends[3]
	if !np.Found || np.Frontend != "nodePort" || np.Address != "0.0.0.0" || np.RevNATIndex != 43 || len(np.Backends) != 1 || np.Backends[0].Address != "10.244.2.7" {
		t.Errorf("nodePort surrogate %+v", np)
	}
	if !ext.Found || ext.Scope != 0 || ext.RevNATIndex != 42 || ext.BackendCount != 3 || ext.AffinityTimeoutSecs != 10800 || ext.LBAlgorithm != 1 || ext.Flags != 0x10 {
		t.Errorf("master entry %+v", ext)
	}
	if len(ext.Backends) != 3 {
		t.Fatalf("backends %+v", ext.Backends)
	}
	b1, b2, hole := ext.Backends[0], ext.Backends[1], ext.Backends[2]
	if !b1.Found || b1.BackendID != 7 || b1.Address != "10.244.1.5" || b1.Port != 8080 || b1.State != "active" || b1.Protocol != "TCP" {
		t.Errorf("backend 1 %+v", b1)
	}
	if !b2.Found || b2.Address != "10.244.2.7" || b2.State != "terminating" || b2.Zone != 2 {
		t.Errorf("backend 2 %+v", b2)
	}
	if hole.Found || hole.BackendID != 0 || hole.Slot != 3 {
		t.Errorf("missing slot %+v", hole)
	}
	if !in.Found || in.Scope != 1 || len(in.Backends) != 1 || in.Backends[0].Address != "10.244.1.5" {
		t.Errorf("internal scope %+v", in)
	}
	if eip.Found || eip.Frontend != "externalIP" || eip.Address != "192.0.2.9" {
		t.Errorf("unprogrammed externalIP %+v", eip)
	}
}

func TestCiliumLayoutMismatch(t *testing.T) {
	root := mountBPFFS(t)
	pinMap(t, root, CiliumServices4, 12, 8) // an older/newer layout
	obs, err := Read(context.Background(), webRequest(), root)
	if err != nil {
		t.Fatal(err)
	}
	if !obs.Cilium.Detected || obs.Cilium.Error == "" || len(obs.Cilium.Frontends) != 0 {
		t.Fatalf("%+v", obs.Cilium)
	}
}

func TestNoBPFFS(t *testing.T) {
	obs, err := Read(context.Background(), webRequest(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if obs.Cilium.Detected || obs.Calico.Detected {
		t.Fatalf("%+v", obs)
	}
}

func TestValueRoundTrip(t *testing.T) {
	v := ServiceValue{BackendID: 0xabcdef, Count: 4, RevNATIndex: 0x1234, Flags: 1, Flags2: 2, QCount: 1}
	if got := DecodeServiceValue(EncodeServiceValue(v)); got != v {
		t.Fatalf("%+v", got)
	}
	// rev_nat_index is stored in network byte order.
	if b := EncodeServiceValue(v); b[6] != 0x12 || b[7] != 0x34 {
		t.Fatalf("rev nat bytes % x", b[6:8])
	}
	b := Backend{Addr: netip.MustParseAddr("fd00::5"), Port: 443, Proto: 6, State: 2, ClusterID: 3, Zone: 1}
	if got := DecodeBackend(EncodeBackend(b), 16); got != b {
		t.Fatalf("%+v", got)
	}
	if k := ServiceKey(netip.MustParseAddr("10.96.0.50"), 80, 0, 6, 1); len(k) != 12 || k[4] != 0 || k[5] != 80 || k[8] != 6 || k[9] != 1 {
		t.Fatalf("key % x", k)
	}
}
