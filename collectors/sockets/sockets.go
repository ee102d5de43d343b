// Package sockets reads what the endpoint Pods on a node listen on, so that
// trace can tell "nothing listens on the targetPort" from "it listens, but
// only on 127.0.0.1" without guessing from a refused probe.
//
// It needs the node's PID namespace (the collector Pod runs with hostPID) and
// no capability: /proc/<pid>/net/{tcp,tcp6,udp,udp6} shows the sockets of the
// network namespace of process <pid> to anyone who can see that process, with
// no setns. A Pod's process is found by its cgroup path, which carries the Pod
// UID. The reader observes only: which port is right is trace's business.
package sockets

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
)

// DefaultMaxListeners caps the listeners kept per Pod on ports that are not
// a target port of the request; a Pod with more is marked Truncated (a
// hostNetwork Pod sees the whole node's sockets, a proxy may bind thousands).
const DefaultMaxListeners = 256

// Reader reads the listening sockets of the request's local endpoint Pods.
type Reader struct {
	// ProcRoot is the procfs to read; empty means /proc.
	ProcRoot string
	// MaxListeners caps the listeners kept per Pod; 0 means DefaultMaxListeners.
	MaxListeners int
	// SelfPID is this process's PID as ProcRoot numbers it; 0 means
	// os.Getpid(). PID 1 means the collector is its container's init, so it
	// does not share the node's PID namespace.
	SelfPID int
}

// Read reads the sockets with the default Reader.
func Read(ctx context.Context, req *collectorapi.Request) (*collectorapi.SocketsObservation, error) {
	return (&Reader{}).Read(ctx, req)
}

// table is one socket table of /proc/<pid>/net.
type table struct {
	file, protocol, family string
	// state is the st column (hex) a socket must have: 0A LISTEN for TCP,
	// 07 CLOSE (bound, not connected) for UDP.
	state string
}

var tables = []table{
	{"tcp", "TCP", "IPv4", "0A"},
	{"tcp6", "TCP", "IPv6", "0A"},
	{"udp", "UDP", "IPv4", "07"},
	{"udp6", "UDP", "IPv6", "07"},
}

// Read finds one process of every endpoint Pod on the request's node (one
// scan of /proc that stops when all are found), and reads each network
// namespace's socket tables once.
func (r *Reader) Read(ctx context.Context, req *collectorapi.Request) (*collectorapi.SocketsObservation, error) {
	root := r.ProcRoot
	if root == "" {
		root = "/proc"
	}
	self := r.SelfPID
	if self == 0 {
		self = os.Getpid()
	}
	obs := &collectorapi.SocketsObservation{HostPID: self != 1}
	pods := localPods(req)
	if len(pods) == 0 {
		return obs, nil
	}
	scanned, err := findProcesses(ctx, root, pods)
	obs.ProcessesScanned = scanned
	if err != nil {
		return obs, err
	}
	byNetNS := map[string]*collectorapi.PodSockets{}
	for _, p := range pods {
		ps := p.out
		switch {
		case ps.PID == 0 && !obs.HostPID:
			ps.Reason = "the collector does not see the node's processes: its Pod does not share the host PID namespace (hostPID)"
		case ps.PID == 0:
			ps.Reason = fmt.Sprintf("no process of Pod %s runs on this node (no cgroup path names the Pod UID among %d processes)", ps.PodUID, scanned)
		default:
			pidDir := filepath.Join(root, strconv.Itoa(ps.PID))
			ps.NetNS = netnsID(pidDir)
			if prev, ok := byNetNS[ps.NetNS]; ok && ps.NetNS != "" {
				ps.Found, ps.Listeners, ps.Truncated, ps.Errors, ps.Reason = prev.Found, prev.Listeners, prev.Truncated, prev.Errors, prev.Reason
				break
			}
			r.readTables(pidDir, ps, targetPorts(req))
			byNetNS[ps.NetNS] = ps
		}
		obs.Pods = append(obs.Pods, *ps)
	}
	return obs, ctx.Err()
}

// wantedPod is one Pod to look for and its result.
type wantedPod struct {
	// markers are the strings a cgroup path of the Pod contains: pod<uid>
	// (cgroupfs driver) and pod<uid with _> (systemd driver).
	markers []string
	// settled is true once a non-pause process of the Pod was found.
	settled bool
	out     *collectorapi.PodSockets
}

// localPods groups the request's endpoints on this node by Pod UID.
func localPods(req *collectorapi.Request) []*wantedPod {
	byUID := map[string]*wantedPod{}
	var out []*wantedPod
	for _, ep := range req.Endpoints {
		if ep.PodUID == "" || (req.NodeName != "" && ep.NodeName != req.NodeName) {
			continue
		}
		p := byUID[ep.PodUID]
		if p == nil {
			p = &wantedPod{
				markers: []string{"pod" + ep.PodUID, "pod" + strings.ReplaceAll(ep.PodUID, "-", "_")},
				out:     &collectorapi.PodSockets{PodName: ep.PodName, PodUID: ep.PodUID},
			}
			byUID[ep.PodUID] = p
			out = append(out, p)
		}
		if ep.IP != "" && !slices.Contains(p.out.IPs, ep.IP) {
			p.out.IPs = append(p.out.IPs, ep.IP)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].out.PodUID < out[j].out.PodUID })
	return out
}

// findProcesses reads /proc/<pid>/cgroup of each process until every Pod has
// a process other than the sandbox's pause (any process shares the Pod's
// network namespace; the app's name is the better evidence), and returns how
// many processes it looked at. A Pod with only its pause process left keeps
// that one.
func findProcesses(ctx context.Context, root string, pods []*wantedPod) (int, error) {
	d, err := os.Open(root)
	if err != nil {
		return 0, err
	}
	defer d.Close()
	pending := len(pods)
	scanned := 0
	for pending > 0 {
		names, err := d.Readdirnames(256)
		for _, name := range names {
			pid, perr := strconv.Atoi(name)
			if perr != nil || pid <= 0 {
				continue
			}
			scanned++
			cg, cerr := os.ReadFile(filepath.Join(root, name, "cgroup"))
			if cerr != nil {
				continue // exited meanwhile, or a kernel thread we may not read
			}
			cgroup := string(cg)
			for _, p := range pods {
				if p.settled || !slices.ContainsFunc(p.markers, func(m string) bool { return strings.Contains(cgroup, m) }) {
					continue
				}
				comm := readComm(filepath.Join(root, name))
				if p.out.PID == 0 || comm != "pause" {
					p.out.PID, p.out.Command = pid, comm
				}
				if comm != "pause" {
					p.settled = true
					pending--
				}
				break
			}
			if pending == 0 {
				break
			}
		}
		if errors.Is(err, io.EOF) || (err == nil && len(names) == 0) {
			break
		}
		if err != nil {
			return scanned, err
		}
		if cerr := ctx.Err(); cerr != nil {
			return scanned, cerr
		}
	}
	return scanned, nil
}

// netnsID names a process's network namespace. The ns/net link needs
// ptrace-read access to the process (CAP_SYS_PTRACE for another user's, or
// a process with more capabilities); the inode of its net/tcp file differs
// per namespace too and needs nothing, so it stands in.
func netnsID(pidDir string) string {
	if l, err := os.Readlink(filepath.Join(pidDir, "ns", "net")); err == nil {
		return l
	}
	if fi, err := os.Stat(filepath.Join(pidDir, "net", "tcp")); err == nil {
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			return fmt.Sprintf("procnet:[%d]", st.Ino)
		}
	}
	return ""
}

// targetPorts are the port numbers of every endpoint in the request: the
// listeners on them are kept whatever the cap, so a capped list never hides
// the one socket the judgment needs.
func targetPorts(req *collectorapi.Request) map[uint16]bool {
	out := map[uint16]bool{}
	for _, ep := range req.Endpoints {
		for _, p := range ep.Ports {
			out[uint16(p)] = true
		}
	}
	return out
}

// readTables reads the four socket tables of pidDir's namespace into ps:
// every listener on a target port, and up to MaxListeners others.
func (r *Reader) readTables(pidDir string, ps *collectorapi.PodSockets, target map[uint16]bool) {
	limit := r.MaxListeners
	if limit <= 0 {
		limit = DefaultMaxListeners
	}
	seen := map[collectorapi.Listener]bool{}
	others := 0
	read := 0
	var failures []string
	for _, tb := range tables {
		f, err := os.Open(filepath.Join(pidDir, "net", tb.file))
		if errors.Is(err, fs.ErrNotExist) && tb.family == "IPv6" {
			continue // IPv6 disabled on this node
		}
		if err != nil {
			failures = append(failures, fmt.Sprintf("%s: %v", tb.file, err))
			continue
		}
		ls, err := ParseTable(f, tb.protocol, tb.family, tb.state)
		f.Close()
		if err != nil {
			failures = append(failures, fmt.Sprintf("%s: %v", tb.file, err))
			continue
		}
		read++
		for _, l := range ls {
			if seen[l] {
				continue
			}
			if !target[l.Port] {
				if others >= limit {
					ps.Truncated = true
					continue
				}
				others++
			}
			seen[l] = true
			ps.Listeners = append(ps.Listeners, l)
		}
	}
	ps.ListenOverflows, ps.ListenDrops = readListenCounters(filepath.Join(pidDir, "net", "netstat"))
	ps.Errors = failures
	if read == 0 {
		ps.Reason = fmt.Sprintf("process %d's socket tables are not readable: %s", ps.PID, strings.Join(failures, "; "))
		return
	}
	ps.Found = true
	sort.Slice(ps.Listeners, func(i, j int) bool {
		a, b := ps.Listeners[i], ps.Listeners[j]
		if a.Protocol != b.Protocol {
			return a.Protocol < b.Protocol
		}
		if a.Port != b.Port {
			return a.Port < b.Port
		}
		return a.Address < b.Address
	})
}

// ParseTable parses one /proc/net/{tcp,tcp6,udp,udp6} table and returns the
// sockets in state (hex, as the st column prints it). protocol and family
// label the result.
func ParseTable(rd io.Reader, protocol, family, state string) ([]collectorapi.Listener, error) {
	sc := bufio.NewScanner(rd)
	sc.Buffer(make([]byte, 0, 512), 64<<10)
	var out []collectorapi.Listener
	header := true
	for sc.Scan() {
		if header {
			header = false
			continue
		}
		f := strings.Fields(sc.Text())
		if len(f) < 4 {
			continue
		}
		if !strings.EqualFold(f[3], state) {
			continue
		}
		addr, port, err := parseHexAddrPort(f[1])
		if err != nil {
			return out, fmt.Errorf("line %q: %w", sc.Text(), err)
		}
		l := collectorapi.Listener{Protocol: protocol, Address: addr.Unmap().String(), Port: port, Family: family}
		if protocol == "TCP" && len(f) > 4 {
			// "tx_queue:rx_queue"; for a listener rx_queue is the accept
			// queue (get_tcp4_sock in net/ipv4/tcp_ipv4.c).
			if _, rx, ok := strings.Cut(f[4], ":"); ok {
				if v, err := strconv.ParseUint(rx, 16, 32); err == nil {
					l.AcceptQueue = uint32(v)
				}
			}
		}
		out = append(out, l)
	}
	return out, sc.Err()
}

// parseHexAddrPort decodes "0100007F:1F90" (IPv4) or a 32-digit IPv6 address:
// the kernel prints each 32-bit word of the address as a number in host byte
// order, and the port in network order already converted.
func parseHexAddrPort(s string) (netip.Addr, uint16, error) {
	hexAddr, hexPort, ok := strings.Cut(s, ":")
	if !ok {
		return netip.Addr{}, 0, fmt.Errorf("no port in %q", s)
	}
	port, err := strconv.ParseUint(hexPort, 16, 16)
	if err != nil {
		return netip.Addr{}, 0, fmt.Errorf("port %q: %w", hexPort, err)
	}
	raw, err := hex.DecodeString(hexAddr)
	if err != nil || (len(raw) != 4 && len(raw) != 16) {
		return netip.Addr{}, 0, fmt.Errorf("address %q: want 8 or 32 hex digits", hexAddr)
	}
	b := make([]byte, len(raw))
	for i := 0; i < len(raw); i += 4 {
		binary.NativeEndian.PutUint32(b[i:], binary.BigEndian.Uint32(raw[i:]))
	}
	a, _ := netip.AddrFromSlice(b)
	return a, uint16(port), nil
}

func readComm(pidDir string) string {
	b, err := os.ReadFile(filepath.Join(pidDir, "comm"))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// readListenCounters reads TcpExt ListenOverflows and ListenDrops from a
// /proc/<pid>/net/netstat file: a header line of names, then a line of
// values, per protocol prefix.
func readListenCounters(path string) (overflows, drops *uint64) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil
	}
	return ParseListenCounters(string(b))
}

// ParseListenCounters is readListenCounters on the file's text.
func ParseListenCounters(text string) (overflows, drops *uint64) {
	lines := strings.Split(text, "\n")
	for i := 0; i+1 < len(lines); i++ {
		if !strings.HasPrefix(lines[i], "TcpExt:") || !strings.HasPrefix(lines[i+1], "TcpExt:") {
			continue
		}
		names, values := strings.Fields(lines[i]), strings.Fields(lines[i+1])
		for j := 1; j < len(names) && j < len(values); j++ {
			v, err := strconv.ParseUint(values[j], 10, 64)
			if err != nil {
				continue
			}
			switch names[j] {
			case "ListenOverflows":
				overflows = &v
			case "ListenDrops":
				drops = &v
			}
		}
		return overflows, drops
	}
	return nil, nil
}

// FindPodProcess returns one process of the Pod with this UID (an
// application process when there is one, else the sandbox's pause), found
// by its cgroup path as the sockets section finds endpoint Pods; pid is 0
// when no process of the Pod runs here.
func FindPodProcess(ctx context.Context, procRoot, uid string) (pid int, command string, scanned int, err error) {
	p := &wantedPod{
		markers: []string{"pod" + uid, "pod" + strings.ReplaceAll(uid, "-", "_")},
		out:     &collectorapi.PodSockets{PodUID: uid},
	}
	scanned, err = findProcesses(ctx, procRoot, []*wantedPod{p})
	return p.out.PID, p.out.Command, scanned, err
}

// Connection is one row of a /proc/net/tcp table.
type Connection struct {
	Local, Remote netip.AddrPort
	State         string // hex, as the st column prints it
}

// ParseConnections parses a /proc/net/{tcp,tcp6} table's established
// connections (state 01).
func ParseConnections(rd io.Reader) ([]Connection, error) {
	sc := bufio.NewScanner(rd)
	sc.Buffer(make([]byte, 0, 512), 64<<10)
	var out []Connection
	header := true
	for sc.Scan() {
		if header {
			header = false
			continue
		}
		f := strings.Fields(sc.Text())
		if len(f) < 4 || f[3] != "01" {
			continue
		}
		la, lp, err := parseHexAddrPort(f[1])
		if err != nil {
			return out, err
		}
		ra, rp, err := parseHexAddrPort(f[2])
		if err != nil {
			return out, err
		}
		out = append(out, Connection{Local: netip.AddrPortFrom(la.Unmap(), lp), Remote: netip.AddrPortFrom(ra.Unmap(), rp), State: f[3]})
	}
	return out, sc.Err()
}
