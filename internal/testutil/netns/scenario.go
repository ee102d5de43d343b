package netns

import (
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Scenario is a miniature node: namespace Node reaches namespace Pod over a
// veth pair, and an nftables table inside Node DNATs a fake ClusterIP to the
// Pod, the way kube-proxy would. Nothing outside the two namespaces changes.
type Scenario struct {
	Node, Pod *NS
	NodeIP    string // 10.250.0.1, on Node's veth
	PodIP     string // 10.250.0.2, on Pod's eth0
	ClusterIP string // 10.96.0.50 (routed via the Pod, DNATed in Node's output hook)
	// ServicePort is the ClusterIP port; BackendPort the live backend;
	// StalePort a second listener that is not in the endpoint set.
	ServicePort, BackendPort, StalePort int
	// OtherServicePort is a second DNATed ClusterIP port (another Service's
	// traffic, to the same backend) that readers must leave out.
	OtherServicePort int
	// ClosedPort has no listener (connection refused), DroppedPort is dropped
	// by an nft rule in Node (timeout).
	ClosedPort, DroppedPort int
}

// NewScenario builds the namespaces, addresses, routes, listeners and the
// DNAT rule. It needs root, nft and socat.
func NewScenario(t testing.TB) *Scenario {
	t.Helper()
	s := NewPlainScenario(t)
	s.SetBackend(t, s.BackendPort)
	return s
}

// NewPlainScenario is NewScenario without the test's own nftables table, for
// tests where a real kube-proxy programs the ClusterIP.
func NewPlainScenario(t testing.TB) *Scenario {
	t.Helper()
	RequireRoot(t)
	RequireTools(t, "nft", "socat", "nsenter")
	s := &Scenario{
		Node: New(t, "node"), Pod: New(t, "pod"),
		NodeIP: "10.250.0.1", PodIP: "10.250.0.2", ClusterIP: "10.96.0.50",
		ServicePort: 80, OtherServicePort: 81, BackendPort: 8080, StalePort: 8081, ClosedPort: 9999, DroppedPort: 7777,
	}
	VethPair(t, s.Node, "veth-pod", s.NodeIP+"/24", s.Pod, "eth0", s.PodIP+"/24")
	s.Node.MustRun(t, "ip", "route", "add", "default", "via", s.PodIP)
	s.Pod.MustRun(t, "ip", "route", "add", "default", "via", s.NodeIP)
	for _, port := range []int{s.BackendPort, s.StalePort} {
		s.Pod.Start(t, nil, "socat", "-u", fmt.Sprintf("TCP-LISTEN:%d,bind=%s,fork,reuseaddr", port, s.PodIP), "OPEN:/dev/null")
		WaitListen(t, s.Pod, fmt.Sprintf("%s:%d", s.PodIP, port))
	}
	return s
}

// SetBackend points the ClusterIP's DNAT rule at PodIP:port (as a kube-proxy
// resync would) and keeps the drop rule for DroppedPort.
func (s *Scenario) SetBackend(t testing.TB, port int) {
	t.Helper()
	ruleset := fmt.Sprintf(`table ip svctrace-test
delete table ip svctrace-test
table ip svctrace-test {
	chain out {
		type nat hook output priority -100; policy accept;
		ip daddr %s tcp dport %d dnat to %s:%d
		ip daddr %s tcp dport %d dnat to %s:%d
	}
	chain filter-out {
		type filter hook output priority 0; policy accept;
		ip daddr %s tcp dport %d drop
	}
}
`, s.ClusterIP, s.ServicePort, s.PodIP, port, s.ClusterIP, s.OtherServicePort, s.PodIP, s.BackendPort, s.PodIP, s.DroppedPort)
	cmd := exec.Command("ip", "netns", "exec", s.Node.Name, "nft", "-f", "-")
	cmd.Stdin = stringsReader(ruleset)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("nft: %v\n%s", err, out)
	}
}

// Connect opens and closes one TCP connection from Node to addr (ip:port).
func (s *Scenario) Connect(t testing.TB, addr string) {
	t.Helper()
	s.Node.MustRun(t, "socat", "-u", "OPEN:/dev/null", "TCP:"+addr+",connect-timeout=2")
}

// FloodPrefix is the /16 whose UDP traffic Flood DNATs to the Pod.
const FloodPrefix = "10.97"

// Flood fills Node's conntrack table with n destination-NATed UDP entries
// (unreplied, 30 s timeout) to other "Services": one datagram to each of n
// distinct FloodPrefix.x.y:port destinations, all DNATed to PodIP:9. It
// stands in for a busy node's table in benchmarks.
func (s *Scenario) Flood(t testing.TB, n int) {
	t.Helper()
	rule := fmt.Sprintf("add rule ip svctrace-test out ip daddr %s.0.0/16 meta l4proto udp dnat to %s:9\n", FloodPrefix, s.PodIP)
	cmd := exec.Command("ip", "netns", "exec", s.Node.Name, "nft", "-f", "-")
	cmd.Stdin = stringsReader(rule)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("nft: %v\n%s", err, out)
	}
	Do(t, s.Node, func() {
		fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_DGRAM, 0)
		if err != nil {
			t.Errorf("socket: %v", err)
			return
		}
		defer syscall.Close(fd)
		for i := 0; i < n; i++ {
			host := 1 + i/60000
			port := 1024 + i%60000
			sa := &syscall.SockaddrInet4{Port: port, Addr: [4]byte{10, 97, byte(host >> 8), byte(host)}}
			if err := syscall.Sendto(fd, []byte{0}, 0, sa); err != nil {
				// EPERM: conntrack refused a new entry (table full).
				t.Errorf("sendto %v after %d entries: %v", sa.Addr, i, err)
				return
			}
		}
	})
}

// IPv6 addresses EnableIPv6 adds to a Scenario.
const (
	NodeIP6    = "fd00:250::1"
	PodIP6     = "fd00:250::2"
	ClusterIP6 = "fd00:96::50" // routed via the Pod, like ClusterIP
)

// EnableIPv6 gives the Scenario's veth pair IPv6 addresses (NodeIP6 on Node,
// PodIP6 on Pod; no duplicate address detection, so they are usable at
// once), default routes both ways, and a listener on [PodIP6]:BackendPort in
// Pod. It changes only the two namespaces.
func (s *Scenario) EnableIPv6(t testing.TB) {
	t.Helper()
	s.Node.MustRun(t, "ip", "-6", "addr", "add", NodeIP6+"/64", "dev", "veth-pod", "nodad")
	s.Pod.MustRun(t, "ip", "-6", "addr", "add", PodIP6+"/64", "dev", "eth0", "nodad")
	s.Node.MustRun(t, "ip", "-6", "route", "add", "default", "via", PodIP6)
	s.Pod.MustRun(t, "ip", "-6", "route", "add", "default", "via", NodeIP6)
	s.Pod.Start(t, nil, "socat", "-u", fmt.Sprintf("TCP6-LISTEN:%d,bind=[%s],fork,reuseaddr", s.BackendPort, PodIP6), "OPEN:/dev/null")
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if out, _ := s.Pod.Run("ss", "-Hltn", "src", "["+PodIP6+"]", "sport", fmt.Sprintf("= :%d", s.BackendPort)); strings.TrimSpace(out) != "" {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("nothing listens on [%s]:%d in %s", PodIP6, s.BackendPort, s.Pod.Name)
}
