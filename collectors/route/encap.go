package route

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
)

// DefaultEncapTimeout is how long the encapsulation probes of one device
// wait for answers, all peers at once. The probe is sent three times in
// that window: the first datagram to a peer may wait for ARP on the underlay.
const DefaultEncapTimeout = time.Second

// maxEncapPeers bounds the remote endpoints probed per device; the peers
// that are gateways of the routes to the Service's endpoints go first.
const maxEncapPeers = 32

// encapPayload marks the probe so that a capture on either node shows whose it is.
var encapPayload = []byte("svctrace encapsulation probe")

// ProbePort is the inner UDP destination port: the first of traceroute's,
// chosen for being unlikely to be listened on.
const ProbePort = 33434

// probeSrcPortBase is the first inner UDP source port; peer i uses base+i,
// which pairs each "port unreachable" with its peer.
const probeSrcPortBase = 47000

type encapPeer struct {
	probe     *collectorapi.EncapProbe
	dst       netip.Addr
	mac       net.HardwareAddr
	overlayIP netip.Addr
	seq       int // the inner UDP source port
	fd        int // connected UDP socket, -1 when none
	sentAt    time.Time
}

// probeEncap sends, through no local FDB or neighbour entry, one UDP probe
// per remote VTEP in o's FDB to that VTEP's overlay address (see
// collectorapi.EncapProbe) and waits up to timeout for the answers.
// gateways are overlay addresses that route the Service's endpoints.
// Every socket is opened on the calling goroutine, in its network
// namespace, and nothing runs on another goroutine.
func probeEncap(o *collectorapi.OverlayDevice, gateways map[string]bool, timeout time.Duration) {
	if o.Kind != "vxlan" {
		return
	}
	if !o.AdminUp || o.OperState == "down" {
		o.EncapSkipped = "the device is down"
		return
	}
	var src netip.Addr
	for _, a := range o.Addresses {
		if p, err := netip.ParsePrefix(a); err == nil && p.Addr().Is4() {
			src = p.Addr()
			break
		}
	}
	srcMAC, _ := net.ParseMAC(o.MAC)
	if !src.IsValid() || len(srcMAC) != 6 {
		o.EncapSkipped = "the device has no IPv4 address or MAC to answer to"
		return
	}
	peers := encapPeers(o, gateways)
	o.EncapPeers, o.EncapTimeoutMillis = len(peers), int(timeout.Milliseconds())
	if len(peers) == 0 {
		return
	}
	if len(peers) > maxEncapPeers {
		peers = peers[:maxEncapPeers]
	}
	defer func() {
		for _, p := range peers {
			o.Encap = append(o.Encap, *p.probe)
		}
	}()
	raw, err := unix.Socket(unix.AF_INET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.IPPROTO_ICMP)
	if err != nil {
		o.EncapSkipped = fmt.Sprintf("raw ICMP socket: %v", err)
		return
	}
	defer unix.Close(raw)
	var local netip.Addr
	if l, err := netip.ParseAddr(o.Local); err == nil && l.Is4() {
		local = l
	}
	for i, p := range peers {
		p.seq = probeSrcPortBase + i
		p.probe.Source = src.String()
		p.fd = -1
		if p.probe.Error != "" {
			continue
		}
		fd, err := dialUDP4(local, p.dst, o.Port)
		if err != nil {
			p.probe.Error = err.Error()
			continue
		}
		p.fd = fd
		defer unix.Close(fd)
	}
	frame := func(p *encapPeer) []byte { return vxlanProbe(o.VNI, srcMAC, p.mac, src, p.overlayIP, p.seq) }
	send := func() {
		for _, p := range peers {
			if p.fd < 0 || p.probe.Answered || p.probe.PortUnreachable {
				continue
			}
			if _, err := unix.Write(p.fd, frame(p)); err != nil {
				// A send reports, and clears, the ICMP error an earlier
				// datagram brought back.
				switch {
				case errors.Is(err, unix.ECONNREFUSED):
					p.probe.PortUnreachable = true
				case p.probe.Sent > 0:
					p.probe.Unreachable = err.Error()
				default:
					p.probe.Error = fmt.Sprintf("send to %s:%d: %v", p.dst, o.Port, err)
				}
				continue
			}
			if p.probe.Sent == 0 {
				p.sentAt = time.Now()
			}
			p.probe.Sent++
		}
	}
	start := time.Now()
	deadline := start.Add(timeout)
	resend := []time.Time{start.Add(timeout / 3), start.Add(2 * timeout / 3)}
	send()
	buf := make([]byte, 1500)
	for pending(peers) && time.Now().Before(deadline) {
		next := deadline
		if len(resend) > 0 && resend[0].Before(next) {
			next = resend[0]
		}
		if wait := time.Until(next); wait > 0 {
			fds := []unix.PollFd{{Fd: int32(raw), Events: unix.POLLIN}}
			n, err := unix.Poll(fds, int(wait.Milliseconds())+1)
			if err != nil && !errors.Is(err, unix.EINTR) {
				break
			}
			if n > 0 {
				readAnswers(raw, buf, peers)
			}
		}
		if len(resend) > 0 && !time.Now().Before(resend[0]) {
			resend = resend[1:]
			send()
		}
	}
	for _, p := range peers {
		if p.fd < 0 || p.probe.Answered {
			continue
		}
		// A connected UDP socket holds the ICMP error the peer (or a
		// router, or this kernel when ARP failed) sent back.
		switch e, err := unix.GetsockoptInt(p.fd, unix.SOL_SOCKET, unix.SO_ERROR); {
		case err != nil:
		case unix.Errno(e) == unix.ECONNREFUSED:
			p.probe.PortUnreachable = true
		case e != 0 && p.probe.Unreachable == "":
			p.probe.Unreachable = unix.Errno(e).Error()
		}
	}
}

// pending says whether a peer may still answer: sent, and neither answered
// nor refused.
func pending(peers []*encapPeer) bool {
	return slices.ContainsFunc(peers, func(p *encapPeer) bool { return p.fd >= 0 && !p.probe.Answered && !p.probe.PortUnreachable })
}

// readAnswers drains the raw socket and marks the peers whose answer came
// back through the tunnel: "port unreachable" from their overlay address
// quoting the probe (this device's address and the peer's source port to
// the peer's overlay address and ProbePort).
func readAnswers(raw int, buf []byte, peers []*encapPeer) {
	for {
		n, _, err := unix.Recvfrom(raw, buf, unix.MSG_DONTWAIT)
		if err != nil || n <= 0 {
			return
		}
		pkt := buf[:n]
		if len(pkt) < 20 || pkt[0]>>4 != 4 {
			continue
		}
		from, _ := netip.AddrFromSlice(pkt[12:16])
		icmpPkt := pkt[int(pkt[0]&0x0f)*4:]
		// ICMP header (8), then the quoted IPv4 header and 8 bytes of UDP.
		if len(icmpPkt) < 8+20+8 || icmpPkt[0] != 3 || icmpPkt[1] != 3 {
			continue
		}
		q := icmpPkt[8:]
		qhl := int(q[0]&0x0f) * 4
		if q[0]>>4 != 4 || q[9] != unix.IPPROTO_UDP || len(q) < qhl+8 {
			continue
		}
		qsrc, _ := netip.AddrFromSlice(q[12:16])
		qdst, _ := netip.AddrFromSlice(q[16:20])
		sport, dport := int(binary.BigEndian.Uint16(q[qhl:])), int(binary.BigEndian.Uint16(q[qhl+2:]))
		for _, p := range peers {
			if p.overlayIP == from && qdst == from && p.probe.Source == qsrc.String() && sport == p.seq && dport == ProbePort && !p.probe.Answered {
				p.probe.Answered = true
				p.probe.RTTMicros = time.Since(p.sentAt).Microseconds()
			}
		}
	}
}

// encapPeers pairs each FDB entry that names a remote underlay address with
// the neighbour entry of the same MAC (the remote device's overlay address),
// gateways first.
func encapPeers(o *collectorapi.OverlayDevice, gateways map[string]bool) []*encapPeer {
	var out []*encapPeer
	seen := map[string]bool{}
	for _, f := range o.FDB {
		dst, err := netip.ParseAddr(f.Dst)
		mac, merr := net.ParseMAC(f.MAC)
		// All-zero MAC entries are default destinations (flooding), not a peer.
		if err != nil || merr != nil || !dst.Is4() || f.MAC == "00:00:00:00:00:00" || seen[f.MAC+f.Dst] {
			continue
		}
		seen[f.MAC+f.Dst] = true
		p := &encapPeer{probe: &collectorapi.EncapProbe{Peer: dst.String(), Port: o.Port, PeerMAC: mac.String()}, dst: dst, mac: mac}
		for _, n := range o.Neighbours {
			if a, err := netip.ParseAddr(n.IP); err == nil && a.Is4() && strings.EqualFold(n.MAC, f.MAC) {
				p.overlayIP = a
				p.probe.PeerOverlayIP = a.String()
				break
			}
		}
		if !p.overlayIP.IsValid() {
			p.probe.Error = "no neighbour entry with this MAC: the remote device's overlay address is unknown here"
		}
		out = append(out, p)
	}
	slices.SortStableFunc(out, func(a, b *encapPeer) int {
		ga, gb := gateways[a.probe.PeerOverlayIP], gateways[b.probe.PeerOverlayIP]
		switch {
		case ga && !gb:
			return -1
		case gb && !ga:
			return 1
		}
		return 0
	})
	return out
}

// dialUDP4 opens a UDP socket from local (when valid, the tunnel's source
// address) connected to dst:port, so that ICMP errors land on it.
func dialUDP4(local, dst netip.Addr, port int) (int, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, unix.IPPROTO_UDP)
	if err != nil {
		return -1, fmt.Errorf("UDP socket: %w", err)
	}
	if local.IsValid() {
		if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: local.As4()}); err != nil {
			unix.Close(fd)
			return -1, fmt.Errorf("bind %s: %w", local, err)
		}
	}
	if err := unix.Connect(fd, &unix.SockaddrInet4{Addr: dst.As4(), Port: port}); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("connect %s:%d: %w", dst, port, err)
	}
	return fd, nil
}

// vxlanProbe is a VXLAN datagram's payload (RFC 7348: flags with the I bit,
// VNI) around an Ethernet frame from srcMAC to dstMAC carrying an IPv4 UDP
// datagram from src:srcPort to dst:ProbePort, a port nothing listens on, so
// that the remote kernel answers "port unreachable". An ICMP error is
// tracked as related to a connection or not at all; an echo reply to an
// echo request conntrack never saw (it left this node inside the VXLAN
// datagram) would be counted INVALID on this node, in the very counter the
// conntrack layer judges.
func vxlanProbe(vni int, srcMAC, dstMAC net.HardwareAddr, src, dst netip.Addr, srcPort int) []byte {
	udp := make([]byte, 8, 8+len(encapPayload))
	binary.BigEndian.PutUint16(udp[0:], uint16(srcPort))
	binary.BigEndian.PutUint16(udp[2:], ProbePort)
	binary.BigEndian.PutUint16(udp[4:], uint16(8+len(encapPayload)))
	udp = append(udp, encapPayload...) // checksum 0: none (IPv4)
	ip := make([]byte, 20, 20+len(udp))
	ip[0] = 0x45
	binary.BigEndian.PutUint16(ip[2:], uint16(20+len(udp)))
	binary.BigEndian.PutUint16(ip[4:], uint16(srcPort))
	ip[6] = 0x40 // don't fragment
	ip[8] = 64
	ip[9] = unix.IPPROTO_UDP
	s4, d4 := src.As4(), dst.As4()
	copy(ip[12:16], s4[:])
	copy(ip[16:20], d4[:])
	binary.BigEndian.PutUint16(ip[10:], checksum(ip))
	ip = append(ip, udp...)

	out := make([]byte, 8, 8+14+len(ip))
	out[0] = 0x08 // I flag: the VNI is valid
	binary.BigEndian.PutUint32(out[4:], uint32(vni)<<8)
	out = append(out, dstMAC...)
	out = append(out, srcMAC...)
	out = append(out, 0x08, 0x00)
	return append(out, ip...)
}

// checksum is the Internet checksum (RFC 1071) of b.
func checksum(b []byte) uint16 {
	var sum uint32
	for i := 0; i+1 < len(b); i += 2 {
		sum += uint32(b[i])<<8 | uint32(b[i+1])
	}
	if len(b)%2 == 1 {
		sum += uint32(b[len(b)-1]) << 8
	}
	for sum > 0xffff {
		sum = sum>>16 + sum&0xffff
	}
	return ^uint16(sum)
}
