package cilium115

import (
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	cmtypes "github.com/cilium/cilium/pkg/clustermesh/types"
	datapathTypes "github.com/cilium/cilium/pkg/datapath/types"
	"github.com/cilium/cilium/pkg/loadbalancer"
	"github.com/cilium/cilium/pkg/maps/lbmap"
)

const innerEnv = "SVBPF_PRIVATE_MOUNT_NS"

var bpffsRoot string

// TestMain runs the tests in a new mount namespace with a fresh bpffs and
// no other bpf mount (see ../cilium: Cilium pins under the first bpf mount
// in mountinfo, which must never be the host's).
func TestMain(m *testing.M) {
	if os.Geteuid() != 0 {
		os.Exit(m.Run())
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
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		fmt.Fprintln(os.Stderr, "make / private:", err)
		os.Exit(1)
	}
	for _, mp := range bpfMounts() {
		if err := unix.Unmount(mp, unix.MNT_DETACH); err != nil {
			fmt.Fprintln(os.Stderr, "detach", mp, err)
			os.Exit(1)
		}
	}
	root, err := os.MkdirTemp("", "svbpf-")
	if err == nil {
		err = unix.Mount("bpf", root, "bpf", 0, "mode=0700")
	}
	if got := bpfMounts(); err == nil && (len(got) != 1 || got[0] != root) {
		err = fmt.Errorf("bpf mounts %v, want only %s", got, root)
	}
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

var update = flag.Bool("update", false, "rewrite "+fixturePath)

const fixturePath = "../../../collectors/ebpf/testdata/cilium-v1.15.19-maps.json"

// dumpedMap is one pinned map as bpftool shows it.
type dumpedMap struct {
	Name       string        `json:"name"`
	Type       string        `json:"type"`
	KeySize    uint32        `json:"keySize"`
	ValueSize  uint32        `json:"valueSize"`
	MaxEntries uint32        `json:"maxEntries"`
	Entries    []dumpedEntry `json:"entries"`
}

type dumpedEntry struct {
	Key   []string `json:"key"`
	Value []string `json:"value"`
}

func backend(id loadbalancer.BackendID, ip string, port uint16, state loadbalancer.BackendState) *loadbalancer.Backend {
	return &loadbalancer.Backend{ID: id, State: state, L3n4Addr: loadbalancer.L3n4Addr{
		AddrCluster: cmtypes.MustParseAddrCluster(ip), L4Addr: loadbalancer.L4Addr{Protocol: loadbalancer.TCP, Port: port}}}
}

// TestCiliumV115Writer writes default/web (10.96.0.50:80 and
// fd00:96::50:80, ClientIP affinity 10800 s; two active backends, one
// terminating, one quarantined) and a NodePort surrogate 0.0.0.0:30080 in
// two scopes, with v1.15's LBBPFMap, and checks bpftool sees them.
func TestCiliumV115Writer(t *testing.T) {
	if bpffsRoot == "" {
		t.Skip("needs root: creates BPF maps in a private bpffs")
	}
	bpftool, err := exec.LookPath("bpftool")
	if err != nil {
		t.Skip("bpftool not installed")
	}
	lbmap.Init(lbmap.InitParams{IPv4: true, IPv6: true, ServiceMapMaxEntries: 65536, BackEndMapMaxEntries: 65536,
		RevNatMapMaxEntries: 65536, AffinityMapMaxEntries: 65536, SourceRangeMapMaxEntries: 1024, MaglevMapMaxEntries: 1024,
		MaxSockRevNatMapEntries: 65536})
	for _, m := range []interface{ OpenOrCreate() error }{lbmap.Service4MapV2, lbmap.Backend4MapV3, lbmap.RevNat4Map,
		lbmap.Service6MapV2, lbmap.Backend6MapV3, lbmap.RevNat6Map, lbmap.AffinityMatchMap} {
		if err := m.OpenOrCreate(); err != nil {
			t.Fatal(err)
		}
	}
	lb := lbmap.New()
	active := []*loadbalancer.Backend{
		backend(1, "10.244.1.5", 8080, loadbalancer.BackendStateActive),
		backend(2, "10.244.2.7", 8080, loadbalancer.BackendStateActive)}
	inactive := []*loadbalancer.Backend{
		backend(3, "10.244.2.8", 8080, loadbalancer.BackendStateTerminating),
		backend(4, "10.244.3.9", 8080, loadbalancer.BackendStateQuarantined)}
	v6 := []*loadbalancer.Backend{backend(5, "fd00:244::1:5", 8080, loadbalancer.BackendStateActive)}
	for _, b := range append(append(active, inactive...), v6...) {
		if err := lb.AddBackend(b, b.AddrCluster.Is6()); err != nil {
			t.Fatalf("backend %d: %v", b.ID, err)
		}
	}
	byAddr := func(bs ...*loadbalancer.Backend) map[string]*loadbalancer.Backend {
		out := map[string]*loadbalancer.Backend{}
		for _, b := range bs {
			out[b.String()] = b
		}
		return out
	}
	ids := func(bs ...*loadbalancer.Backend) []loadbalancer.BackendID {
		var out []loadbalancer.BackendID
		for _, b := range bs {
			out = append(out, b.ID)
		}
		return out
	}
	svcs := []*datapathTypes.UpsertServiceParams{
		{ID: 1, IP: net.ParseIP("10.96.0.50"), Port: 80, Type: loadbalancer.SVCTypeClusterIP, SessionAffinity: true, SessionAffinityTimeoutSec: 10800,
			ActiveBackends: byAddr(active...), NonActiveBackends: ids(inactive...)},
		{ID: 2, IP: net.ParseIP("fd00:96::50"), Port: 80, IPv6: true, Type: loadbalancer.SVCTypeClusterIP, SessionAffinity: true, SessionAffinityTimeoutSec: 10800,
			ActiveBackends: byAddr(v6...)},
		{ID: 3, IP: net.IPv4zero, Port: 30080, Type: loadbalancer.SVCTypeNodePort, ExtLocal: true, Scope: loadbalancer.ScopeExternal,
			SessionAffinity: true, SessionAffinityTimeoutSec: 10800, ActiveBackends: byAddr(active[0])},
		{ID: 4, IP: net.IPv4zero, Port: 30080, Type: loadbalancer.SVCTypeNodePort, ExtLocal: true, Scope: loadbalancer.ScopeInternal,
			SessionAffinity: true, SessionAffinityTimeoutSec: 10800, ActiveBackends: byAddr(active...), NonActiveBackends: ids(inactive...)},
	}
	for _, p := range svcs {
		if err := lb.UpsertService(p); err != nil {
			t.Fatalf("service %d: %v", p.ID, err)
		}
	}

	var dumped []dumpedMap
	for _, name := range []string{"cilium_lb4_services_v2", "cilium_lb4_backends_v3", "cilium_lb4_reverse_nat",
		"cilium_lb6_services_v2", "cilium_lb6_backends_v3", "cilium_lb6_reverse_nat", "cilium_lb_affinity_match"} {
		path := filepath.Join(bpffsRoot, "tc", "globals", name)
		var info struct {
			Type       string `json:"type"`
			KeySize    uint32 `json:"bytes_key"`
			ValueSize  uint32 `json:"bytes_value"`
			MaxEntries uint32 `json:"max_entries"`
		}
		out, err := exec.Command(bpftool, "-j", "map", "show", "pinned", path).Output()
		if err != nil {
			t.Fatalf("bpftool map show %s: %v", name, err)
		}
		if err := json.Unmarshal(out, &info); err != nil {
			t.Fatal(err)
		}
		d := dumpedMap{Name: name, Type: info.Type, KeySize: info.KeySize, ValueSize: info.ValueSize, MaxEntries: info.MaxEntries}
		out, err = exec.Command(bpftool, "-j", "map", "dump", "pinned", path).Output()
		if err != nil {
			t.Fatalf("bpftool map dump %s: %v", name, err)
		}
		if err := json.Unmarshal(out, &d.Entries); err != nil {
			t.Fatal(err)
		}
		dumped = append(dumped, d)
	}
	// 10.96.0.50: master + 4 slots; fd00:96::50: master + 1; NodePort: master + 1, master + 4.
	if n := len(dumped[0].Entries); n != 5+2+5 {
		t.Errorf("cilium_lb4_services_v2 holds %d entries, want 12", n)
	}
	if n := len(dumped[3].Entries); n != 2 {
		t.Errorf("cilium_lb6_services_v2 holds %d entries, want 2", n)
	}
	if *update {
		b, err := json.MarshalIndent(dumped, "", "  ")
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
}
