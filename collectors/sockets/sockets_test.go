package sockets

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
	"github.com/svctrace/kubectl-svctrace/internal/testutil/netns"
)

// The testdata tree is /proc content recorded on the testbed: PID 27995 is
// CoreDNS in Pod 6f95efc2-… (cgroupfs driver, cgroup v1 hybrid), listening on
// :53 (TCP and UDP), :8080 and :8181 through tcp6 wildcard sockets, with
// TIME_WAIT connections to 127.0.0.1:8080 in its IPv4 table.
const corednsUID = "6f95efc2-3a6a-4938-ad42-bb9ab812f943"

func TestReadRecordedProc(t *testing.T) {
	req := &collectorapi.Request{NodeName: "svtb-node2", Endpoints: []collectorapi.Endpoint{
		{IP: "10.244.2.2", NodeName: "svtb-node2", PodName: "coredns-x", PodUID: corednsUID},
		{IP: "10.244.2.2", NodeName: "svtb-node2", PodName: "coredns-x", PodUID: corednsUID}, // a second slice port
		{IP: "10.244.2.9", NodeName: "svtb-node2", PodName: "gone", PodUID: "00000000-0000-0000-0000-000000000000"},
		{IP: "10.244.1.2", NodeName: "svtb-node1", PodName: "elsewhere", PodUID: "11111111-1111-1111-1111-111111111111"},
		{IP: "10.244.2.3", NodeName: "svtb-node2", PodName: "no-uid"},
	}}
	r := &Reader{ProcRoot: "testdata/proc", SelfPID: 4242}
	obs, err := r.Read(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if !obs.HostPID {
		t.Error("HostPID false with a self PID other than 1")
	}
	if len(obs.Pods) != 2 {
		t.Fatalf("pods %+v, want the local CoreDNS Pod and the gone one (not the other node's, not the one without UID)", obs.Pods)
	}
	gone, dns := obs.Pods[0], obs.Pods[1]
	if gone.Found || !strings.Contains(gone.Reason, "no process of Pod") {
		t.Errorf("gone Pod: %+v", gone)
	}
	if !dns.Found || dns.PID != 27995 || dns.Command != "coredns" || len(dns.IPs) != 1 {
		t.Fatalf("CoreDNS Pod: %+v", dns)
	}
	// A recorded tree has no ns/net link: the identity falls back to the
	// inode of net/tcp.
	if !strings.HasPrefix(dns.NetNS, "procnet:[") {
		t.Errorf("netns identity %q, want the net/tcp inode fallback", dns.NetNS)
	}
	got := map[string]bool{}
	for _, l := range dns.Listeners {
		got[fmt.Sprintf("%s %s %d %s", l.Protocol, l.Address, l.Port, l.Family)] = true
	}
	for _, want := range []string{"TCP :: 53 IPv6", "TCP :: 8080 IPv6", "UDP :: 53 IPv6"} {
		if !got[want] {
			t.Errorf("missing listener %q in %v", want, dns.Listeners)
		}
	}
	for _, l := range dns.Listeners {
		if l.Address == "127.0.0.1" {
			t.Errorf("a TIME_WAIT connection was taken for a listener: %+v", l)
		}
	}
}

func TestReadWithoutHostPID(t *testing.T) {
	req := &collectorapi.Request{Endpoints: []collectorapi.Endpoint{{IP: "10.244.2.2", PodUID: corednsUID}}}
	// The collector is PID 1 and sees only itself: an empty /proc.
	obs, err := (&Reader{ProcRoot: t.TempDir(), SelfPID: 1}).Read(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if obs.HostPID || len(obs.Pods) != 1 || obs.Pods[0].Found || !strings.Contains(obs.Pods[0].Reason, "hostPID") {
		t.Errorf("observation without hostPID: %+v", obs)
	}
}

func TestSystemdCgroupAndDedupe(t *testing.T) {
	root := t.TempDir()
	uid := "7d1c0a3e-52b3-4d7e-9a55-0123456789ab"
	under := strings.ReplaceAll(uid, "-", "_")
	tcp := "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n" +
		"   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1 0 100 0 0 10 0\n" +
		"   1: 0501F40A:1F91 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 2 1 0 100 0 0 10 0\n" +
		"   2: 0501F40A:1F91 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 3 1 0 100 0 0 10 0\n" +
		"   3: 00000000:270F 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4 1 0 100 0 0 10 0\n"
	write(t, filepath.Join(root, "10", "net", "tcp"), tcp)
	write(t, filepath.Join(root, "10", "net", "udp"), "  sl  local_address rem_address   st\n")
	for _, pid := range []string{"10", "11"} {
		write(t, filepath.Join(root, pid, "cgroup"), "0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod"+under+".slice/cri-containerd-abc.scope\n")
	}
	if err := os.Symlink(filepath.Join(root, "10", "net"), filepath.Join(root, "11", "net")); err != nil {
		t.Fatal(err)
	}
	// 10 is the sandbox's pause process, 11 the app: the app is named
	// whichever comes first in the directory.
	write(t, filepath.Join(root, "10", "comm"), "pause\n")
	write(t, filepath.Join(root, "11", "comm"), "app\n")
	// A second Pod on the host network shares a namespace with the first:
	// same netns identity, read once.
	write(t, filepath.Join(root, "20", "cgroup"), "0::/kubepods.slice/kubepods-pod"+strings.ReplaceAll("9d1c0a3e-52b3-4d7e-9a55-0123456789ab", "-", "_")+".slice/x.scope\n")
	if err := os.Symlink(filepath.Join(root, "10", "net"), filepath.Join(root, "20", "net")); err != nil {
		t.Fatal(err)
	}
	req := &collectorapi.Request{Endpoints: []collectorapi.Endpoint{
		{IP: "10.244.1.5", PodUID: uid, Ports: map[string]int32{"http": 8081}},
		{IP: "10.244.1.6", PodUID: "9d1c0a3e-52b3-4d7e-9a55-0123456789ab", Ports: map[string]int32{"http": 8081}},
	}}
	obs, err := (&Reader{ProcRoot: root, SelfPID: 99, MaxListeners: 1}).Read(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if len(obs.Pods) != 2 {
		t.Fatalf("pods: %+v", obs.Pods)
	}
	a, b := obs.Pods[0], obs.Pods[1]
	if !a.Found || a.PID != 11 || a.Command != "app" {
		t.Fatalf("systemd-driver Pod not found through its cgroup, or its pause process preferred over the app: %+v", a)
	}
	// Capped at one listener besides those on the target port 8081, which
	// are always kept: 127.0.0.1:8080 (first in the table) stays, :9999 goes.
	if len(a.Listeners) != 2 || !a.Truncated || a.Listeners[0] != (collectorapi.Listener{Protocol: "TCP", Address: "127.0.0.1", Port: 8080, Family: "IPv4"}) ||
		a.Listeners[1].Port != 8081 {
		t.Errorf("listeners capped at 1 + target port: %+v truncated=%v", a.Listeners, a.Truncated)
	}
	if a.NetNS == "" || a.NetNS != b.NetNS || !b.Found || len(b.Listeners) != 2 {
		t.Errorf("Pods sharing a namespace: %+v / %+v", a, b)
	}
	// Without a cap: 10.244.1.5:8081 once (the duplicate SO_REUSEPORT line
	// is folded).
	obs, _ = (&Reader{ProcRoot: root, SelfPID: 99}).Read(context.Background(), req)
	if l := obs.Pods[0].Listeners; len(l) != 3 || l[1].Address != "10.244.1.5" || l[1].Port != 8081 || obs.Pods[0].Truncated {
		t.Errorf("listeners: %+v", l)
	}
	if obs.ProcessesScanned < 2 {
		t.Errorf("scanned %d", obs.ProcessesScanned)
	}
}

func TestParseHexAddrPort(t *testing.T) {
	for in, want := range map[string]string{
		"0100007F:1F90":                         "127.0.0.1:8080",
		"00000000:0035":                         "0.0.0.0:53",
		"00000000000000000000000000000000:0050": "[::]:80",
		"00000000000000000000000001000000:1F90": "[::1]:8080",
		"0000000000000000FFFF00000100007F:1F90": "127.0.0.1:8080",
	} {
		a, p, err := parseHexAddrPort(in)
		if err != nil {
			t.Errorf("%s: %v", in, err)
			continue
		}
		if got := net.JoinHostPort(a.Unmap().String(), strconv.Itoa(int(p))); got != want {
			t.Errorf("%s = %s, want %s", in, got, want)
		}
	}
	for _, bad := range []string{"0100007F", "0100007:1F90", "0100007F:XYZ", "zz00007F:0050"} {
		if _, _, err := parseHexAddrPort(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

// TestReadRealNamespace starts listeners inside a network namespace the test
// creates (TCP on 127.0.0.1 only, UDP on any address) and reads them through
// the /proc of the process in it, as the collector reads a Pod's. The
// process's cgroup is not a Pod's, so the test's procfs view maps a fake Pod
// directory onto the real process: cgroup faked, net/ and ns/ the real ones.
func TestReadRealNamespace(t *testing.T) {
	n := netns.New(t, "sock")
	cmd := n.Start(t, nil, "socat", "TCP-LISTEN:18080,bind=127.0.0.1,reuseaddr,fork", "STDOUT")
	// A second process in the same namespace binds UDP: the tables read
	// through the first one show the whole namespace.
	n.Start(t, nil, "socat", "-u", "UDP-RECV:18081", "STDOUT")
	netns.WaitListen(t, n, "127.0.0.1:18080")
	for i := 0; i < 100; i++ {
		if out, _ := n.Run("ss", "-Hlun", "sport", "= :18081"); strings.TrimSpace(out) != "" {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	pid := strconv.Itoa(cmd.Process.Pid)
	// nsenter execs socat in place, so the PID is socat's.
	deadline := time.Now().Add(5 * time.Second)
	for {
		if b, _ := os.ReadFile("/proc/" + pid + "/comm"); strings.TrimSpace(string(b)) == "socat" || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	root := t.TempDir()
	uid := "3f0c3c43-8c0c-4d4e-9b43-5a2d0a4b6c01"
	write(t, filepath.Join(root, pid, "cgroup"), "4:memory:/kubepods/besteffort/pod"+uid+"/c0ffee\n")
	for _, sub := range []string{"net", "ns", "comm"} {
		if err := os.Symlink(filepath.Join("/proc", pid, sub), filepath.Join(root, pid, sub)); err != nil {
			t.Fatal(err)
		}
	}
	req := &collectorapi.Request{Endpoints: []collectorapi.Endpoint{{IP: "10.250.0.2", PodUID: uid}}}
	obs, err := (&Reader{ProcRoot: root, SelfPID: 99}).Read(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	ps := obs.Pods[0]
	if !ps.Found {
		t.Fatalf("not read: %+v", ps)
	}
	want := map[collectorapi.Listener]bool{
		{Protocol: "TCP", Address: "127.0.0.1", Port: 18080, Family: "IPv4"}: false,
		{Protocol: "UDP", Address: "0.0.0.0", Port: 18081, Family: "IPv4"}:   false,
	}
	for _, l := range ps.Listeners {
		if _, ok := want[l]; ok {
			want[l] = true
		}
		if l.Port == 18080 && l.Address != "127.0.0.1" {
			t.Errorf("18080 reported on %s", l.Address)
		}
	}
	for l, ok := range want {
		if !ok {
			t.Errorf("listener %+v not found in %+v", l, ps.Listeners)
		}
	}
	self, _ := os.Readlink("/proc/self/ns/net")
	if ps.NetNS == "" || ps.NetNS == self {
		t.Errorf("netns %q: want the test namespace's, not the test's own (%s)", ps.NetNS, self)
	}
	// The root namespace's own sockets are not the namespace's: a listener
	// opened here must not show up.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := uint16(ln.Addr().(*net.TCPAddr).Port)
	obs, _ = (&Reader{ProcRoot: root, SelfPID: 99}).Read(context.Background(), req)
	for _, l := range obs.Pods[0].Listeners {
		if l.Port == port {
			t.Errorf("the test's own listener %d leaked into the namespace's table", port)
		}
	}
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkScanWholeProc is the worst case: a Pod with no process on this
// node makes the reader look at every /proc/<pid>/cgroup once.
func BenchmarkScanWholeProc(b *testing.B) {
	req := &collectorapi.Request{Endpoints: []collectorapi.Endpoint{{IP: "10.244.9.9", PodUID: "00000000-dead-beef-0000-000000000000"}}}
	r := &Reader{SelfPID: 99}
	var scanned int
	for b.Loop() {
		obs, err := r.Read(context.Background(), req)
		if err != nil {
			b.Fatal(err)
		}
		scanned = obs.ProcessesScanned
	}
	b.ReportMetric(float64(scanned), "procs")
}

// TestAcceptQueueAndListenCounters reads this process's own socket table
// with three connections completed and not accepted: the kernel reports
// them as the listener's rx_queue. The TcpExt counters come from the same
// namespace's real /proc/self/net/netstat.
func TestAcceptQueueAndListenCounters(t *testing.T) {
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := uint16(l.Addr().(*net.TCPAddr).Port)
	for range 3 {
		c, err := net.Dial("tcp4", l.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
	}
	var queue uint32
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		f, err := os.Open("/proc/self/net/tcp")
		if err != nil {
			t.Skip(err)
		}
		ls, err := ParseTable(f, "TCP", "IPv4", "0A")
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range ls {
			if x.Port == port {
				queue = x.AcceptQueue
			}
		}
		if queue == 3 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if queue != 3 {
		t.Errorf("accept queue %d, want 3", queue)
	}
	ov, drops := readListenCounters("/proc/self/net/netstat")
	if ov == nil || drops == nil {
		t.Errorf("TcpExt ListenOverflows/ListenDrops not parsed from /proc/self/net/netstat")
	}
}
