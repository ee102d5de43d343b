package trace

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"sigs.k8s.io/yaml"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
	ebpfreader "github.com/svctrace/kubectl-svctrace/collectors/ebpf"
	"github.com/svctrace/kubectl-svctrace/trace/input"
	"github.com/svctrace/kubectl-svctrace/trace/plan"
	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// recordedDir holds what the real Cilium v1.20.2 agent wrote in the UML
// guest (test/testbed/cilium/record.sh): bpftool dumps of its LB maps and
// the API objects they were programmed from.
const recordedDir = "../test/testbed/cilium/testdata"

const recordedNode = "svcil-node1"

// privateNSEnv marks the re-executed test binary running in its own mount
// namespace.
const privateNSEnv = "SVCTRACE_TEST_PRIVATE_MNTNS"

// bpftoolEntry is one element of `bpftool -j map dump` without BTF.
type bpftoolEntry struct {
	Key   []string `json:"key"`
	Value []string `json:"value"`
}

func hexBytes(t *testing.T, in []string) []byte {
	t.Helper()
	out := make([]byte, len(in))
	for i, s := range in {
		v, err := strconv.ParseUint(strings.TrimPrefix(s, "0x"), 16, 8)
		if err != nil {
			t.Fatalf("byte %q: %v", s, err)
		}
		out[i] = byte(v)
	}
	return out
}

// recordedMap is one map of one step: its geometry (maps.json) and entries.
type recordedMap struct {
	Type       string            `json:"type"`
	KeySize    uint32            `json:"bytes_key"`
	ValueSize  uint32            `json:"bytes_value"`
	MaxEntries uint32            `json:"max_entries"`
	Flags      uint32            `json:"flags"`
	Pinned     string            `json:"pinned"`
	entries    map[string][]byte // key bytes (as string) -> value
	keys       [][]byte
}

func loadRecordedMaps(t *testing.T, step string) map[string]*recordedMap {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(recordedDir, step, "maps.json"))
	if err != nil {
		t.Fatal(err)
	}
	var list []*recordedMap
	if err := json.Unmarshal(raw, &list); err != nil {
		t.Fatal(err)
	}
	out := map[string]*recordedMap{}
	for _, m := range list {
		raw, err := os.ReadFile(filepath.Join(recordedDir, step, m.Pinned+".json"))
		if err != nil {
			t.Fatal(err)
		}
		var es []bpftoolEntry
		if err := json.Unmarshal(raw, &es); err != nil {
			t.Fatalf("%s/%s: %v", step, m.Pinned, err)
		}
		m.entries = map[string][]byte{}
		for _, e := range es {
			k, v := hexBytes(t, e.Key), hexBytes(t, e.Value)
			if uint32(len(k)) != m.KeySize || uint32(len(v)) != m.ValueSize {
				t.Fatalf("%s/%s: entry %d/%d bytes, map %d/%d", step, m.Pinned, len(k), len(v), m.KeySize, m.ValueSize)
			}
			m.entries[string(k)] = v
			m.keys = append(m.keys, k)
		}
		out[m.Pinned] = m
	}
	return out
}

var bpftoolTypes = map[string]ebpf.MapType{"hash": ebpf.Hash, "lru_hash": ebpf.LRUHash, "lpm_trie": ebpf.LPMTrie}

// pinRecordedMaps creates each recorded map with its recorded geometry
// under root/tc/globals and writes the recorded bytes into it.
func pinRecordedMaps(t *testing.T, root string, maps map[string]*recordedMap) {
	t.Helper()
	dir := filepath.Join(root, "tc", "globals")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for name, rm := range maps {
		typ, ok := bpftoolTypes[rm.Type]
		if !ok {
			t.Fatalf("%s: map type %s", name, rm.Type)
		}
		m, err := ebpf.NewMap(&ebpf.MapSpec{Name: name[:min(len(name), 15)], Type: typ, KeySize: rm.KeySize, ValueSize: rm.ValueSize,
			MaxEntries: rm.MaxEntries, Flags: rm.Flags})
		if err != nil {
			t.Fatalf("create %s: %v", name, err)
		}
		t.Cleanup(func() { m.Close() })
		for _, k := range rm.keys {
			if err := m.Put(k, rm.entries[string(k)]); err != nil {
				t.Fatalf("%s put: %v", name, err)
			}
		}
		if err := m.Pin(filepath.Join(dir, name)); err != nil {
			t.Fatalf("pin %s: %v", name, err)
		}
	}
}

// recordedInput is the trace Input of default/SERVICE from a step's
// api.yaml (Services and EndpointSlices) and the guest's Node.
func recordedInput(t *testing.T, step, service string) *input.Input {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(recordedDir, step, "api.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Items []json.RawMessage `json:"items"`
	}
	if err := yaml.Unmarshal(raw, &list); err != nil {
		t.Fatal(err)
	}
	in := &input.Input{Namespace: "default", Name: service, Nodes: map[string]*corev1.Node{}}
	for _, item := range list.Items {
		var meta struct {
			Kind string `json:"kind"`
		}
		if err := json.Unmarshal(item, &meta); err != nil {
			t.Fatal(err)
		}
		switch meta.Kind {
		case "Service":
			var s corev1.Service
			if err := json.Unmarshal(item, &s); err != nil {
				t.Fatal(err)
			}
			if s.Name == service {
				in.Service = &s
			}
		case "EndpointSlice":
			var sl discoveryv1.EndpointSlice
			if err := json.Unmarshal(item, &sl); err != nil {
				t.Fatal(err)
			}
			if sl.Labels[discoveryv1.LabelServiceName] == service {
				in.Slices = append(in.Slices, sl)
			}
		}
	}
	if in.Service == nil || len(in.Slices) == 0 {
		t.Fatalf("%s: no Service or EndpointSlices for %s", step, service)
	}
	nodeFile := filepath.Join(recordedDir, step, "node.yaml")
	if _, err := os.Stat(nodeFile); err != nil {
		nodeFile = filepath.Join(recordedDir, "initial", "node.yaml")
	}
	raw, err = os.ReadFile(nodeFile)
	if err != nil {
		t.Fatal(err)
	}
	var n corev1.Node
	if err := yaml.Unmarshal(raw, &n); err != nil {
		t.Fatal(err)
	}
	in.Nodes[n.Name] = &n
	return in
}

// inPrivateMountNS re-executes this one test in a new mount namespace with
// private propagation and reports whether the caller is that copy; the
// outer call waits for it and fails with it. The bpffs mounted there is
// seen by no other process.
func inPrivateMountNS(t *testing.T) bool {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root to mount a bpffs and create maps")
	}
	if os.Getenv(privateNSEnv) == "1" {
		if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
			t.Fatalf("make / private: %v", err)
		}
		return true
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^"+t.Name()+"$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), privateNSEnv+"=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS}
	out, err := cmd.CombinedOutput()
	t.Logf("in a private mount namespace:\n%s", out)
	if err != nil {
		t.Fatalf("re-executed test: %v", err)
	}
	if !bytes.Contains(out, []byte("--- PASS: "+t.Name())) {
		t.Fatalf("re-executed test did not pass")
	}
	return false
}

func privateBPFFS(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	if err := unix.Mount("bpf", root, "bpf", 0, "mode=0700"); err != nil {
		t.Fatalf("mount bpffs: %v", err)
	}
	t.Cleanup(func() { _ = unix.Unmount(root, unix.MNT_DETACH) })
	return root
}

// expectFrontend decodes one frontend of the recorded services map, with
// the recorded backends map, independently of the reader.
func expectFrontend(t *testing.T, maps map[string]*recordedMap, addr netip.Addr, port uint16, proto, scope uint8) (collectorapi.CiliumFrontend, bool) {
	t.Helper()
	svc, be := maps["cilium_lb4_services_v2"], maps["cilium_lb4_backends_v3"]
	key := func(slot uint16) string {
		k := append(addr.AsSlice(), byte(port>>8), byte(port), 0, 0, proto, scope, 0, 0)
		binary.LittleEndian.PutUint16(k[6:], slot)
		return string(k)
	}
	v, ok := svc.entries[key(0)]
	if !ok {
		return collectorapi.CiliumFrontend{}, false
	}
	f := collectorapi.CiliumFrontend{Found: true, Address: addr.String(), Port: port, Scope: scope,
		BackendCount: binary.LittleEndian.Uint16(v[4:]), RevNATIndex: binary.BigEndian.Uint16(v[6:]),
		Flags: v[8], Flags2: v[9], QuarantinedCount: binary.LittleEndian.Uint16(v[10:]),
		AffinityTimeoutSecs: binary.LittleEndian.Uint32(v[0:]) & 0xffffff}
	states := []string{"active", "terminating", "quarantined", "maintenance"}
	for slot := uint16(1); ; slot++ {
		sv, ok := svc.entries[key(slot)]
		if !ok {
			break
		}
		b := collectorapi.CiliumBackend{Slot: slot, BackendID: binary.LittleEndian.Uint32(sv)}
		if bv, ok := be.entries[string(sv[:4])]; ok {
			a, _ := netip.AddrFromSlice(bv[:4])
			b.Found, b.Address, b.Port = true, a.String(), binary.BigEndian.Uint16(bv[4:])
			b.Protocol, b.State = collectorapi.IPProtoName(bv[6]), states[bv[7]]
		}
		f.Backends = append(f.Backends, b)
	}
	return f, true
}

func frontendString(f collectorapi.CiliumFrontend) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s:%d scope %d count %d q %d revnat %d flags %#x/%#x affinity %d:", f.Address, f.Port, f.Scope,
		f.BackendCount, f.QuarantinedCount, f.RevNATIndex, f.Flags, f.Flags2, f.AffinityTimeoutSecs)
	for _, be := range f.Backends {
		fmt.Fprintf(&b, " [%d id %d %v %s:%d/%s %s]", be.Slot, be.BackendID, be.Found, be.Address, be.Port, be.Protocol, be.State)
	}
	return b.String()
}

// recordedFrontendKeys are the services-map master keys of a Service:
// address:port/proto of every entry with slot 0 whose address is one of
// the Service's ClusterIPs, or (NodePorts) 0.0.0.0 or the node's address.
func recordedFrontendKeys(t *testing.T, maps map[string]*recordedMap, in *input.Input, nodeIP string) (real []string, wildcard []string) {
	t.Helper()
	ips := map[string]bool{}
	for _, ip := range in.Service.Spec.ClusterIPs {
		ips[ip] = true
	}
	nodePorts := map[uint16]bool{}
	for _, p := range in.Service.Spec.Ports {
		if p.NodePort > 0 {
			nodePorts[uint16(p.NodePort)] = true
		}
	}
	for _, k := range maps["cilium_lb4_services_v2"].keys {
		a, _ := netip.AddrFromSlice(k[:4])
		port, slot := binary.BigEndian.Uint16(k[4:]), binary.LittleEndian.Uint16(k[6:])
		if slot != 0 {
			continue
		}
		s := fmt.Sprintf("%s:%d/%s scope %d", a, port, collectorapi.IPProtoName(k[8]), k[9])
		switch {
		case ips[a.String()] && port == 0:
			wildcard = append(wildcard, s)
		case ips[a.String()], nodePorts[port] && (a.IsUnspecified() || a.String() == nodeIP):
			real = append(real, s)
		}
	}
	return real, wildcard
}

// TestCiliumRecordedAgentMaps loads the maps the real Cilium v1.20.2 agent
// programmed (initial, scaled, stale, restarted) into a private bpffs, reads
// them with the collector's reader for requests built from the recorded API
// objects, compares what it decoded with the recorded dumps and judges it.
func TestCiliumRecordedAgentMaps(t *testing.T) {
	if !inPrivateMountNS(t) {
		return
	}
	nodeIP := "10.77.0.11"
	steps := []string{"initial", "scaled", "stale", "restarted"}
	services := []string{"web", "web-np", "dns", "sticky"}
	for _, step := range steps {
		maps := loadRecordedMaps(t, step)
		root := privateBPFFS(t)
		pinRecordedMaps(t, root, maps)
		for _, svc := range services {
			t.Run(step+"/"+svc, func(t *testing.T) {
				in := recordedInput(t, step, svc)
				req := plan.CollectRequest(in, recordedNode, "cluster.local")
				obs, err := ebpfreader.Read(context.Background(), req, root)
				if err != nil {
					t.Fatal(err)
				}
				c := obs.Cilium
				if !c.Detected || c.Layout != ebpfreader.LayoutServicesV2BackendsV3 || c.Error != "" {
					t.Fatalf("cilium detected %v layout %q error %q", c.Detected, c.Layout, c.Error)
				}
				listed := map[string]collectorapi.PinnedMap{}
				for _, m := range c.Maps {
					listed[m.Name] = m
				}
				for name, rm := range maps {
					if m, ok := listed[name]; !ok || m.KeySize != rm.KeySize || m.ValueSize != rm.ValueSize || m.MaxEntries != rm.MaxEntries {
						t.Errorf("map %s listed as %+v, recorded %d/%d/%d", name, m, rm.KeySize, rm.ValueSize, rm.MaxEntries)
					}
				}
				// Every frontend the reader found is what the dump holds.
				seen := map[string]bool{}
				for _, f := range c.Frontends {
					a := netip.MustParseAddr(f.Address)
					want, ok := expectFrontend(t, maps, a, f.Port, collectorapi.IPProtoNumber(f.Protocol), f.Scope)
					if ok != f.Found {
						t.Errorf("%s %s:%d/%s scope %d: found %v, in the dump %v", f.Frontend, f.Address, f.Port, f.Protocol, f.Scope, f.Found, ok)
						continue
					}
					if !ok {
						continue
					}
					if got, w := frontendString(f), frontendString(want); got != w {
						t.Errorf("%s decoded\n got %s\nwant %s", f.Frontend, got, w)
					}
					seen[fmt.Sprintf("%s:%d/%s scope %d", f.Address, f.Port, f.Protocol, f.Scope)] = true
				}
				// And every frontend of this Service in the dump was read.
				real, wildcard := recordedFrontendKeys(t, maps, in, nodeIP)
				if len(real) == 0 {
					t.Fatalf("no frontend of %s in the %s dump", svc, step)
				}
				for _, k := range real {
					if !seen[k] {
						t.Errorf("%s in the dump, not read", k)
					}
				}
				if len(wildcard) != len(in.Service.Spec.ClusterIPs) {
					t.Errorf("want one ClusterIP:0/ANY wildcard entry per ClusterIP, dump has %v", wildcard)
				}
				if svc == "web-np" && !seen[nodeIP+":30080/TCP scope 0"] {
					t.Errorf("NodePort at the node's address %s not read", nodeIP)
				}
				if svc == "sticky" {
					for _, f := range c.Frontends {
						if f.Found && f.AffinityTimeoutSecs != 600 {
							t.Errorf("sticky %s:%d affinity %d, want 600", f.Address, f.Port, f.AffinityTimeoutSecs)
						}
					}
				}

				tr := judgeViews(t, in, plan.NodeView{Node: recordedNode, Observation: ebpfObservation(t, c, nil)})
				got := nodeCodes(tr, report.LayerDatapath, recordedNode)
				if o, ok := got[report.CodeDPEBPFOwner]; !ok || !strings.Contains(o.Message, "Cilium") {
					t.Errorf("DP018 owner: %+v", o)
				}
				requireNoNodeCheck(t, tr, recordedNode, report.CodeDPNoRules, report.CodeDPNodePortMissing, report.CodeDPProxyUnreachable,
					report.CodeDPEBPFLayoutUnknown, report.CodeDPEBPFUnreadable, report.CodeDPUnequalShares, report.CodeDPEBPFBrokenSlot, report.CodeDPAffinityTimeout, report.CodeDPAffinityMissing)
				if _, ok := got[report.CodeDPAffinityOK]; ok != (svc == "sticky") {
					t.Errorf("affinity judged %v for %s: %v", ok, svc, codesOf(got))
				}
				stale, isStale := got[report.CodeDPStaleEndpoints]
				if step == "stale" && (svc == "web" || svc == "dns") {
					// The agent was stopped: the maps hold the scaled backends, the API the new ones.
					if !isStale {
						t.Fatalf("stale backends not reported: %v", codesOf(got))
					}
					want := map[string]string{"web": "10.78.1.10:8080", "dns": "10.78.1.20:53"}[svc]
					if !strings.Contains(stale.Message, want) {
						t.Errorf("DP008 does not name %s: %s", want, stale.Message)
					}
					if _, ok := got[report.CodeDPMissingEndpoints]; !ok {
						t.Errorf("the new endpoint is in no slot, want DP007: %v", codesOf(got))
					}
					if s := tr.Layer(report.LayerDatapath).Status; s != report.StatusFail {
						t.Errorf("datapath %s with stale backends", s)
					}
					return
				}
				if isStale {
					t.Errorf("unexpected DP008: %s", stale.Message)
				}
				if c, ok := got[report.CodeDPMissingEndpoints]; ok {
					t.Errorf("unexpected DP007: %s", c.Message)
				}
				if s := tr.Layer(report.LayerDatapath).Status; s == report.StatusFail {
					t.Errorf("datapath %s: %v", s, codesOf(got))
				}
			})
		}
	}
}

func codesOf(m map[string]report.Check) []string {
	var out []string
	for code, c := range m {
		out = append(out, code+" "+string(c.Status)+": "+c.Message)
	}
	return out
}
