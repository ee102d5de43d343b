//go:build linux

package iptables

import (
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"sync"

	"golang.org/x/sys/unix"
)

// nfnlConn is a NETLINK_NETFILTER socket opened in the target network
// namespace. It issues one request at a time: a chain dump is a few
// round trips of 32 KiB, and the kernel serves them faster than a second
// socket would be set up.
//
// The rule dump is done here rather than with github.com/google/nftables
// (which the nftables reader uses): for a 10k-rule KUBE-SERVICES its
// GetRules spends ~0.5 s building expression objects and copying messages,
// against ~0.08 s for the kernel's own part.
type nfnlConn struct {
	mu  sync.Mutex
	fd  int
	seq uint32
	buf []byte
}

// openNFNL opens the socket in netns (a path such as /var/run/netns/x; empty
// means the caller's namespace). The socket keeps the namespace it was
// created in, so only its creation runs on a thread moved into netns.
func openNFNL(netns string) (*nfnlConn, error) {
	fd, err := socketIn(netns)
	if err != nil {
		return nil, err
	}
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		unix.Close(fd)
		return nil, err
	}
	// The kernel fills dump replies up to 32 KiB each.
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, 1<<20)
	return &nfnlConn{fd: fd, buf: make([]byte, 64<<10)}, nil
}

func socketIn(netns string) (int, error) {
	return inNetNS(netns, func() (int, error) {
		return unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_NETFILTER)
	})
}

// inNetNS runs open (a socket call) on a thread moved into netns; the socket
// keeps that namespace after the thread moves back.
func inNetNS(netns string, open func() (int, error)) (int, error) {
	if netns == "" {
		return open()
	}
	target, err := unix.Open(netns, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	defer unix.Close(target)
	runtime.LockOSThread()
	orig, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		runtime.UnlockOSThread()
		return -1, err
	}
	defer unix.Close(orig)
	if err := unix.Setns(target, unix.CLONE_NEWNET); err != nil {
		runtime.UnlockOSThread()
		return -1, fmt.Errorf("setns %s: %w", netns, err)
	}
	fd, serr := open()
	if err := unix.Setns(orig, unix.CLONE_NEWNET); err != nil {
		// The thread stays locked, so the runtime retires it instead of
		// reusing it in the wrong namespace.
		if serr == nil {
			unix.Close(fd)
		}
		return -1, fmt.Errorf("setns back: %w", err)
	}
	runtime.UnlockOSThread()
	return fd, serr
}

func (c *nfnlConn) close() { unix.Close(c.fd) }

// request sends one nf_tables request and calls fn for each reply message's
// payload (after the nfgenmsg header) until the dump ends or, for a plain
// request, the first reply. An NLMSG_ERROR with a non-zero code is returned
// as that errno.
func (c *nfnlConn) request(msgType uint16, flags uint16, family uint8, attrs []byte, fn func([]byte) error) error {
	return c.requestGen(msgType, flags, family, attrs, func(_ uint16, b []byte) error { return fn(b) })
}

// requestGen is request handing fn each reply's generation (the low 16 bits
// of the ruleset generation, nfgenmsg.res_id) with its payload. A dump the
// kernel marks interrupted fails with errDumpInterrupted.
func (c *nfnlConn) requestGen(msgType uint16, flags uint16, family uint8, attrs []byte, fn func(gen uint16, payload []byte) error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	seq := c.seq
	msg := make([]byte, 20+len(attrs))
	binary.NativeEndian.PutUint32(msg, uint32(len(msg)))
	binary.NativeEndian.PutUint16(msg[4:], uint16(unix.NFNL_SUBSYS_NFTABLES)<<8|msgType)
	binary.NativeEndian.PutUint16(msg[6:], unix.NLM_F_REQUEST|flags)
	binary.NativeEndian.PutUint32(msg[8:], seq)
	msg[16] = family
	msg[17] = unix.NFNETLINK_V0
	copy(msg[20:], attrs)
	if err := unix.Sendto(c.fd, msg, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return err
	}
	dump := flags&unix.NLM_F_DUMP != 0
	var cbErr error
	for {
		n, _, err := unix.Recvfrom(c.fd, c.buf, 0)
		if err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			return err
		}
		b := c.buf[:n]
		for len(b) >= unix.NLMSG_HDRLEN {
			l := int(binary.NativeEndian.Uint32(b))
			typ := binary.NativeEndian.Uint16(b[4:])
			mflags := binary.NativeEndian.Uint16(b[6:])
			mseq := binary.NativeEndian.Uint32(b[8:])
			if l < unix.NLMSG_HDRLEN || l > len(b) {
				return errors.New("netlink: truncated message")
			}
			body := b[unix.NLMSG_HDRLEN:l]
			if al := (l + 3) &^ 3; al <= len(b) {
				b = b[al:]
			} else {
				b = b[len(b):]
			}
			if mseq != seq {
				continue // a stale reply of an earlier, abandoned request
			}
			switch typ {
			case unix.NLMSG_DONE:
				return cbErr
			case unix.NLMSG_ERROR:
				if len(body) < 4 {
					return errors.New("netlink: short error message")
				}
				if code := int32(binary.NativeEndian.Uint32(body)); code != 0 {
					return unix.Errno(-code)
				}
				return cbErr
			}
			if mflags&unix.NLM_F_DUMP_INTR != 0 && cbErr == nil {
				cbErr = errDumpInterrupted
			}
			if len(body) >= 4 && cbErr == nil {
				cbErr = fn(binary.BigEndian.Uint16(body[2:]), body[4:])
			}
			if !dump {
				return cbErr
			}
		}
	}
}

func nlAttr(typ uint16, s string) []byte {
	l := 4 + len(s) + 1
	b := make([]byte, (l+3)&^3)
	binary.NativeEndian.PutUint16(b, uint16(l))
	binary.NativeEndian.PutUint16(b[2:], typ)
	copy(b[4:], s)
	return b
}

// nftFamily is the nf_tables family of an iptables-nft table.
func nftFamily(family string) uint8 {
	if family == "IPv6" {
		return unix.NFPROTO_IPV6
	}
	return unix.NFPROTO_IPV4
}

// dumpChain lists one chain of iptables-nft's table, handing each rule to
// visit while its bytes are valid (they alias the receive buffer), and
// reports whether the chain exists.
func (c *nfnlConn) dumpChain(family, table, chain string, visit func(nfRule) error) (exists bool, err error) {
	return c.dumpChainMsgs(family, table, chain, func(b []byte) error {
		r, err := parseRuleMsg(b)
		if err != nil {
			return err
		}
		return visit(r)
	})
}

// dumpChainRaw hands each rule message's payload to fn as the kernel sent it
// (the tests record them).
func (c *nfnlConn) dumpChainRaw(family, table, chain string, fn func([]byte)) (bool, error) {
	return c.dumpChainMsgs(family, table, chain, func(b []byte) error {
		fn(b)
		return nil
	})
}

func (c *nfnlConn) dumpChainMsgs(family, table, chain string, fn func([]byte) error) (exists bool, err error) {
	attrs := append(nlAttr(unix.NFTA_RULE_TABLE, table), nlAttr(unix.NFTA_RULE_CHAIN, chain)...)
	err = c.request(unix.NFT_MSG_GETRULE, unix.NLM_F_DUMP, nftFamily(family), attrs, func(b []byte) error {
		exists = true
		return fn(b)
	})
	if errors.Is(err, unix.ENOENT) {
		return false, nil
	}
	if err != nil || exists {
		return exists, err
	}
	// An empty chain dumps no rules: ask for the chain itself (no ACK
	// requested: the reply is the chain or an error, nothing else).
	attrs = append(nlAttr(unix.NFTA_CHAIN_TABLE, table), nlAttr(unix.NFTA_CHAIN_NAME, chain)...)
	err = c.request(unix.NFT_MSG_GETCHAIN, 0, nftFamily(family), attrs, func([]byte) error {
		exists = true
		return nil
	})
	if errors.Is(err, unix.ENOENT) {
		return false, nil
	}
	return exists, err
}

// nfChainInfo is what NFT_MSG_GETCHAIN says of one chain.
type nfChainInfo struct {
	exists bool
	// use is the kernel's reference count of the chain (NFTA_CHAIN_USE):
	// one per rule in the chain plus one per jump or goto to it.
	use uint32
	// gen is the low 16 bits of the ruleset generation the reply was taken
	// from (nfgenmsg.res_id).
	gen uint16
}

// chainInfo asks the kernel for one chain of iptables-nft's table.
func (c *nfnlConn) chainInfo(family, table, chain string) (nfChainInfo, error) {
	var ci nfChainInfo
	attrs := append(nlAttr(unix.NFTA_CHAIN_TABLE, table), nlAttr(unix.NFTA_CHAIN_NAME, chain)...)
	err := c.requestGen(unix.NFT_MSG_GETCHAIN, 0, nftFamily(family), attrs, func(gen uint16, b []byte) error {
		use, err := parseChainUse(b)
		ci.exists, ci.gen, ci.use = true, gen, use
		return err
	})
	if errors.Is(err, unix.ENOENT) {
		return nfChainInfo{}, nil
	}
	return ci, err
}

// generation is the ruleset generation (NFTA_GEN_ID): it changes with
// every committed transaction, so equal values before and after a series
// of requests mean they all saw the same ruleset.
func (c *nfnlConn) generation() (uint32, error) {
	var gen uint32
	found := false
	err := c.request(unix.NFT_MSG_GETGEN, 0, unix.AF_UNSPEC, nil, func(b []byte) error {
		return nlAttrs(b, func(typ uint16, d []byte) error {
			if typ == unix.NFTA_GEN_ID {
				v, err := be32(d)
				gen, found = v, true
				return err
			}
			return nil
		})
	})
	if err == nil && !found {
		err = errors.New("netlink: no generation in NFT_MSG_NEWGEN")
	}
	return gen, err
}
