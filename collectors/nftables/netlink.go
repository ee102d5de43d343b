//go:build linux

package nftables

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"syscall"
	"time"

	gnft "github.com/google/nftables"
	"github.com/google/nftables/expr"
	"github.com/google/nftables/userdata"
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
)

// netlinkSource reads the ruleset through netlink: github.com/google/nftables
// for tables, chains, rules and anonymous sets, and a single-element
// NFT_MSG_GETSETELEM (what `nft get element` sends) for map lookups, which
// google/nftables does not offer: dumping the 10k-element service-ips map to
// find one element would make the cost follow the node's size.
type netlinkSource struct {
	conn *gnft.Conn
	raw  *netlink.Conn
}

func newNetlinkSource(netnsFd int) (*netlinkSource, error) {
	opts := []gnft.ConnOption{gnft.AsLasting()}
	cfg := &netlink.Config{}
	if netnsFd > 0 {
		opts = append(opts, gnft.WithNetNSFd(netnsFd))
		cfg.NetNS = netnsFd
	}
	c, err := gnft.New(opts...)
	if err != nil {
		return nil, err
	}
	raw, err := netlink.Dial(unix.NETLINK_NETFILTER, cfg)
	if err != nil {
		_ = c.CloseLasting()
		return nil, err
	}
	return &netlinkSource{conn: c, raw: raw}, nil
}

func (s *netlinkSource) close() {
	_ = s.conn.CloseLasting()
	_ = s.raw.Close()
}

func familyOf(f string) gnft.TableFamily {
	if f == "ip6" {
		return gnft.TableFamilyIPv6
	}
	return gnft.TableFamilyIPv4
}

func isNotFound(err error) bool {
	return err != nil && (errors.Is(err, unix.ENOENT) || strings.Contains(err.Error(), "no such file or directory"))
}

func (s *netlinkSource) table(f string) *gnft.Table {
	return &gnft.Table{Name: TableName, Family: familyOf(f)}
}

func (s *netlinkSource) tablePresent(f string) (bool, error) {
	_, err := s.conn.ListTableOfFamily(TableName, familyOf(f))
	if err != nil {
		if isNotFound(err) || strings.Contains(err.Error(), "expected table count") {
			return false, nil
		}
		return false, err
	}
	return true, nil
}

func (s *netlinkSource) chain(f, name string) (*collectorapi.NFTablesChain, error) {
	t := s.table(f)
	rules, err := s.conn.GetRules(t, &gnft.Chain{Name: name, Table: t})
	if err != nil && !isNotFound(err) {
		return nil, err
	}
	c := &collectorapi.NFTablesChain{Name: name, Exists: err == nil && len(rules) > 0}
	if !c.Exists {
		// A rule dump filtered by a missing chain is empty, not an error:
		// ask for the chain itself.
		if _, err := s.conn.ListChain(t, name); err == nil {
			c.Exists = true
		} else if !isNotFound(err) {
			return nil, err
		}
	}
	for _, r := range rules {
		rr, err := s.decodeRule(t, r)
		if err != nil {
			return nil, err
		}
		c.Rules = append(c.Rules, rr)
	}
	return c, nil
}

func (s *netlinkSource) affinitySet(f, name string) (collectorapi.NFTablesAffinitySet, error) {
	set, err := s.conn.GetSetByName(s.table(f), name)
	if err != nil {
		if isNotFound(err) {
			return collectorapi.NFTablesAffinitySet{Name: name}, nil
		}
		return collectorapi.NFTablesAffinitySet{Name: name}, err
	}
	return collectorapi.NFTablesAffinitySet{Name: name, Exists: true, TimeoutSeconds: int64(set.Timeout / time.Second)}, nil
}

// element looks one key up with a non-dump NFT_MSG_GETSETELEM.
func (s *netlinkSource) element(f, set string, k elemKey) (collectorapi.NFTablesElement, error) {
	el := collectorapi.NFTablesElement{Map: set, Key: k.String()}
	key, err := k.encode(f)
	if err != nil {
		return el, err
	}
	ae := netlink.NewAttributeEncoder()
	ae.String(unix.NFTA_SET_ELEM_LIST_TABLE, TableName)
	ae.String(unix.NFTA_SET_ELEM_LIST_SET, set)
	ae.Nested(unix.NFTA_SET_ELEM_LIST_ELEMENTS, func(ne *netlink.AttributeEncoder) error {
		ne.Nested(unix.NFTA_LIST_ELEM, func(le *netlink.AttributeEncoder) error {
			le.Nested(unix.NFTA_SET_ELEM_KEY, func(ke *netlink.AttributeEncoder) error {
				ke.Bytes(unix.NFTA_DATA_VALUE, key)
				return nil
			})
			return nil
		})
		return nil
	})
	data, err := ae.Encode()
	if err != nil {
		return el, err
	}
	msg := netlink.Message{
		Header: netlink.Header{
			Type: netlink.HeaderType(unix.NFNL_SUBSYS_NFTABLES<<8 | unix.NFT_MSG_GETSETELEM),
			// No Acknowledge: the kernel answers with exactly one message,
			// the element or an error, so no stray ACK is left on the socket.
			Flags: netlink.Request,
		},
		Data: append([]byte{byte(familyOf(f)), unix.NFNETLINK_V0, 0, 0}, data...),
	}
	replies, err := s.raw.Execute(msg)
	if err != nil {
		if isNotFound(err) {
			return el, nil
		}
		return el, fmt.Errorf("get element %s in %s: %w", el.Key, set, err)
	}
	for _, r := range replies {
		if len(r.Data) < 4 {
			continue
		}
		if err := decodeElemList(r.Data[4:], &el); err != nil {
			return el, err
		}
	}
	return el, nil
}

// decodeElemList fills el from an NFT_MSG_NEWSETELEM payload holding one
// element.
func decodeElemList(b []byte, el *collectorapi.NFTablesElement) error {
	ad, err := netlink.NewAttributeDecoder(b)
	if err != nil {
		return err
	}
	for ad.Next() {
		if ad.Type() != unix.NFTA_SET_ELEM_LIST_ELEMENTS {
			continue
		}
		ad.Nested(func(nd *netlink.AttributeDecoder) error {
			for nd.Next() {
				if nd.Type() != unix.NFTA_LIST_ELEM {
					continue
				}
				el.Found = true
				nd.Nested(func(ed *netlink.AttributeDecoder) error {
					for ed.Next() {
						switch ed.Type() {
						case unix.NFTA_SET_ELEM_DATA:
							ed.Nested(func(dd *netlink.AttributeDecoder) error {
								for dd.Next() {
									if dd.Type() == unix.NFTA_DATA_VERDICT {
										el.Verdict, el.Target = decodeVerdict(dd.Bytes())
									}
								}
								return nil
							})
						case unix.NFTA_SET_ELEM_USERDATA:
							if c, ok := userdata.GetString(ed.Bytes(), userdata.TypeComment); ok {
								el.Comment = c
							}
						}
					}
					return nil
				})
			}
			return nil
		})
	}
	return ad.Err()
}

// decodeVerdict decodes nested NFTA_VERDICT_CODE / NFTA_VERDICT_CHAIN.
func decodeVerdict(b []byte) (verdict, target string) {
	ad, err := netlink.NewAttributeDecoder(b)
	if err != nil {
		return "", ""
	}
	ad.ByteOrder = binary.BigEndian
	var code int32
	for ad.Next() {
		switch ad.Type() {
		case unix.NFTA_VERDICT_CODE:
			code = int32(ad.Uint32())
		case unix.NFTA_VERDICT_CHAIN:
			target = ad.String()
		}
	}
	v := verdictName(expr.VerdictKind(code))
	if target != "" {
		v += " " + target
	}
	return v, target
}

func verdictName(k expr.VerdictKind) string {
	switch k {
	case expr.VerdictReturn:
		return "return"
	case expr.VerdictGoto:
		return "goto"
	case expr.VerdictJump:
		return "jump"
	case expr.VerdictBreak:
		return "break"
	case expr.VerdictContinue:
		return "continue"
	case expr.VerdictDrop:
		return "drop"
	case expr.VerdictAccept:
		return "accept"
	case expr.VerdictQueue:
		return "queue"
	}
	return "verdict(" + strconv.Itoa(int(k)) + ")"
}

// encode lays the key out as the kernel stores a concatenation: each field
// padded to 4 bytes, addresses and ports in network order.
func (k elemKey) encode(f string) ([]byte, error) {
	var b []byte
	if k.IP != "" {
		a, err := netip.ParseAddr(k.IP)
		if err != nil {
			return nil, err
		}
		if f == "ip6" {
			s := a.As16()
			b = append(b, s[:]...)
		} else {
			if !a.Is4() {
				return nil, fmt.Errorf("%s is not IPv4", k.IP)
			}
			s := a.As4()
			b = append(b, s[:]...)
		}
	}
	if k.Proto != "" {
		var p byte
		switch k.Proto {
		case "tcp":
			p = unix.IPPROTO_TCP
		case "udp":
			p = unix.IPPROTO_UDP
		case "sctp":
			p = unix.IPPROTO_SCTP
		default:
			return nil, fmt.Errorf("protocol %q", k.Proto)
		}
		b = append(b, p, 0, 0, 0)
		b = append(b, byte(k.Port>>8), byte(k.Port), 0, 0)
	}
	return b, nil
}

// decodeRule turns a rule's expressions into its meaning and an nft-like text.
func (s *netlinkSource) decodeRule(t *gnft.Table, r *gnft.Rule) (collectorapi.NFTablesRule, error) {
	out := collectorapi.NFTablesRule{Handle: r.Handle}
	if c, ok := userdata.GetString(r.UserData, userdata.TypeComment); ok {
		out.Comment = c
	}
	regs := map[uint32]operand{}
	var words []string
	v6 := t.Family == gnft.TableFamilyIPv6
	for _, e := range r.Exprs {
		switch e := e.(type) {
		case *expr.Meta:
			if e.SourceRegister {
				words = append(words, "meta "+metaName(e.Key)+" set "+regs[e.Register].text)
				if e.Key == expr.MetaKeyMARK {
					out.Mark = regs[e.Register].mark
				}
				continue
			}
			regs[e.Register] = operand{text: "meta " + metaName(e.Key), kind: "meta-" + metaName(e.Key)}
		case *expr.Payload:
			regs[e.DestRegister] = payloadOperand(e, v6)
		case *expr.Fib:
			what := "daddr"
			if e.FlagSADDR {
				what = "saddr"
			}
			regs[e.Register] = operand{text: "fib " + what + " type", kind: "fib"}
		case *expr.Ct:
			regs[e.Register] = operand{text: fmt.Sprintf("ct key %d", e.Key), kind: "ct"}
		case *expr.Bitwise:
			src := regs[e.SourceRegister]
			if (src.kind == "saddr" || src.kind == "daddr") && allBytes(e.Xor, 0) {
				if n, ok := prefixLen(e.Mask); ok {
					regs[e.DestRegister] = operand{text: src.text, kind: src.kind, prefix: n}
					continue
				}
			}
			if src.kind == "meta-mark" && len(e.Xor) == 4 && !allBytes(e.Xor, 0) {
				// "mark | m" is mask ^m, xor m; "mark ^ m" is mask all-ones, xor m.
				m := fmt.Sprintf("0x%x", binary.NativeEndian.Uint32(e.Xor))
				op := " | "
				if allBytes(e.Mask, 0xff) {
					op = " ^ "
				}
				regs[e.DestRegister] = operand{text: src.text + op + m, kind: src.kind, mark: m}
				continue
			}
			txt := src.text
			if src.kind == "meta-mark" && allBytes(e.Xor, 0) && len(e.Mask) == 4 {
				regs[e.DestRegister] = operand{text: txt + " & 0x" + hexBytes(e.Mask), kind: src.kind, markMask: e.Mask}
				continue
			}
			if !allBytes(e.Mask, 0xff) {
				txt += " & 0x" + hexBytes(e.Mask)
			}
			if !allBytes(e.Xor, 0) {
				if allBytes(e.Mask, 0xff) {
					txt += " ^ 0x" + hexBytes(e.Xor)
				} else {
					// mask ~m and xor m is "| m"
					txt = src.text + " | 0x" + hexBytes(e.Xor)
				}
			}
			regs[e.DestRegister] = operand{text: txt, kind: src.kind}
		case *expr.Cmp:
			lhs := regs[e.Register]
			data := e.Data
			if lhs.width > len(data) {
				data = append(append([]byte{}, data...), make([]byte, lhs.width-len(data))...)
			}
			val := renderValue(lhs.kind, data)
			op := cmpOp(e.Op)
			if lhs.prefix > 0 {
				val += "/" + strconv.Itoa(lhs.prefix)
			}
			w := lhs.text + " " + op + val
			words = append(words, w)
			out.Conditions++
			if lhs.kind == "meta-mark" && len(e.Data) == 4 && (e.Op == expr.CmpOpEq || e.Op == expr.CmpOpNeq) {
				mm := &collectorapi.NFTablesMarkMatch{Mask: 0xffffffff, Op: "==", Value: binary.NativeEndian.Uint32(e.Data)}
				if lhs.markMask != nil {
					mm.Mask = binary.NativeEndian.Uint32(lhs.markMask)
				}
				if e.Op == expr.CmpOpNeq {
					mm.Op = "!="
				}
				out.MarkMatch = mm
			}
			if lhs.kind == "saddr" {
				out.SourceMatch = strings.TrimPrefix(w, lhs.text+" ")
			}
		case *expr.Range:
			lhs := regs[e.Register]
			words = append(words, fmt.Sprintf("%s %s-%s", lhs.text, renderValue(lhs.kind, e.FromData), renderValue(lhs.kind, e.ToData)))
			out.Conditions++
		case *expr.Numgen:
			kind := "inc"
			if e.Type == unix.NFT_NG_RANDOM {
				kind = "random"
			}
			regs[e.Register] = operand{text: fmt.Sprintf("numgen %s mod %d", kind, e.Modulus), kind: "numgen", modulus: e.Modulus}
		case *expr.Lookup:
			src := regs[e.SourceRegister]
			setRef := "@" + e.SetName
			anon := strings.HasPrefix(e.SetName, "__")
			switch {
			case e.IsDestRegSet && e.DestRegister == unix.NFT_REG_VERDICT:
				w := src.text + " vmap " + setRef
				if src.kind == "numgen" && anon {
					ng, err := s.numgenMap(t, e.SetName, "vmap", src.modulus, v6)
					if err != nil {
						return out, err
					}
					out.Numgen = ng
					w = src.text + " vmap { " + renderNumgen(ng) + " }"
				}
				words = append(words, w)
			case e.IsDestRegSet:
				regs[e.DestRegister] = operand{text: src.text + " map " + setRef, kind: "map", set: e.SetName, modulus: src.modulus, numgen: src.kind == "numgen"}
			default:
				out.Conditions++
				op := ""
				if e.Invert {
					op = "!= "
				}
				words = append(words, src.text+" "+op+setRef)
				// A lookup keyed by a concatenation starting with saddr
				// (the hairpin-connections set) loads saddr into the same
				// first register: only affinity-… sets are keyed by saddr
				// alone.
				if src.kind == "saddr" && !anon && !e.Invert && strings.HasPrefix(e.SetName, "affinity-") {
					out.AffinityMatch = e.SetName
				}
				if src.kind == "saddr" && e.Invert {
					out.SourceMatch = "!= " + setRef
				}
			}
		case *expr.Immediate:
			regs[e.Register] = operand{text: hexBytes(e.Data), kind: "imm", data: e.Data}
		case *expr.NAT:
			if e.Type != expr.NATTypeDestNAT {
				words = append(words, "snat")
				continue
			}
			addr := regs[e.RegAddrMin]
			if addr.kind == "map" && addr.numgen {
				ng, err := s.numgenMap(t, addr.set, "dnat", addr.modulus, v6)
				if err != nil {
					return out, err
				}
				out.Numgen = ng
				words = append(words, fmt.Sprintf("dnat to numgen random mod %d map { %s }", addr.modulus, renderNumgen(ng)))
				continue
			}
			ip := ipFromBytes(addr.data)
			port := regs[e.RegProtoMin]
			if len(port.data) >= 2 {
				out.DNAT = netipJoin(ip, binary.BigEndian.Uint16(port.data))
			} else {
				out.DNAT = ip
			}
			words = append(words, "dnat to "+out.DNAT)
		case *expr.Dynset:
			op := "add"
			if e.Operation == 1 {
				op = "update"
			}
			words = append(words, fmt.Sprintf("%s @%s { %s }", op, e.SetName, regs[e.SrcRegKey].text))
			out.Update = e.SetName
		case *expr.Verdict:
			v := verdictName(e.Kind)
			if e.Chain != "" {
				v += " " + e.Chain
				out.Target = e.Chain
			}
			out.Verdict = v
			words = append(words, v)
		case *expr.Masq:
			words = append(words, "masquerade")
			out.Masquerade = true
		case *expr.Reject:
			words = append(words, "reject")
			out.Verdict = "reject"
		case *expr.Counter:
			words = append(words, "counter")
		default:
			words = append(words, fmt.Sprintf("%T", e))
		}
	}
	out.Text = strings.Join(words, " ")
	return out, nil
}

type operand struct {
	text, kind string
	data       []byte
	set        string
	modulus    uint32
	numgen     bool
	prefix     int
	width      int // full address width when a prefix match loads fewer bytes
	mark       string
	markMask   []byte // "meta mark & mask" (host byte order)
}

// prefixLen reports whether mask is a network prefix mask, and its length.
func prefixLen(mask []byte) (int, bool) {
	n, seenZero := 0, false
	for _, b := range mask {
		for i := 7; i >= 0; i-- {
			if b&(1<<i) != 0 {
				if seenZero {
					return 0, false
				}
				n++
			} else {
				seenZero = true
			}
		}
	}
	return n, n > 0 && n < 8*len(mask)
}

func payloadOperand(p *expr.Payload, v6 bool) operand {
	switch p.Base {
	case expr.PayloadBaseNetworkHeader:
		// nft shortens byte-aligned prefix matches: "ip saddr 10.0.0.0/8"
		// loads one byte and compares it with 0x0a.
		full := uint32(4)
		sOff, dOff := uint32(12), uint32(16)
		if v6 {
			full, sOff, dOff = 16, 8, 24
		}
		if p.Len < full && p.Len > 0 {
			switch p.Offset {
			case sOff:
				return operand{text: ipWord(v6) + " saddr", kind: "saddr", prefix: int(p.Len) * 8, width: int(full)}
			case dOff:
				return operand{text: ipWord(v6) + " daddr", kind: "daddr", prefix: int(p.Len) * 8, width: int(full)}
			}
		}
		switch {
		case !v6 && p.Offset == 12 && p.Len == 4, v6 && p.Offset == 8 && p.Len == 16:
			return operand{text: ipWord(v6) + " saddr", kind: "saddr"}
		case !v6 && p.Offset == 16 && p.Len == 4, v6 && p.Offset == 24 && p.Len == 16:
			return operand{text: ipWord(v6) + " daddr", kind: "daddr"}
		}
	case expr.PayloadBaseTransportHeader:
		switch {
		case p.Offset == 2 && p.Len == 2:
			return operand{text: "th dport", kind: "port"}
		case p.Offset == 0 && p.Len == 2:
			return operand{text: "th sport", kind: "port"}
		}
	}
	return operand{text: fmt.Sprintf("payload base %d offset %d len %d", p.Base, p.Offset, p.Len)}
}

func ipWord(v6 bool) string {
	if v6 {
		return "ip6"
	}
	return "ip"
}

func metaName(k expr.MetaKey) string {
	switch k {
	case expr.MetaKeyL4PROTO:
		return "l4proto"
	case expr.MetaKeyMARK:
		return "mark"
	case expr.MetaKeyNFPROTO:
		return "nfproto"
	case expr.MetaKeyIIFNAME:
		return "iifname"
	}
	return "key" + strconv.Itoa(int(k))
}

func cmpOp(op expr.CmpOp) string {
	switch op {
	case expr.CmpOpEq:
		return ""
	case expr.CmpOpNeq:
		return "!= "
	case expr.CmpOpLt:
		return "< "
	case expr.CmpOpLte:
		return "<= "
	case expr.CmpOpGt:
		return "> "
	case expr.CmpOpGte:
		return ">= "
	}
	return "? "
}

func renderValue(kind string, b []byte) string {
	switch kind {
	case "saddr", "daddr":
		if len(b) == 4 || len(b) == 16 {
			return ipFromBytes(b)
		}
	case "port":
		if len(b) == 2 {
			return strconv.Itoa(int(binary.BigEndian.Uint16(b)))
		}
	case "meta-l4proto":
		if len(b) == 1 {
			switch b[0] {
			case unix.IPPROTO_TCP:
				return "tcp"
			case unix.IPPROTO_UDP:
				return "udp"
			case unix.IPPROTO_SCTP:
				return "sctp"
			}
		}
	case "fib":
		if len(b) == 4 && binary.NativeEndian.Uint32(b) == unix.RTN_LOCAL {
			return "local"
		}
	}
	return "0x" + hexBytes(b)
}

func ipFromBytes(b []byte) string {
	if a, ok := netip.AddrFromSlice(b); ok {
		return a.String()
	}
	return "0x" + hexBytes(b)
}

func hexBytes(b []byte) string {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, 2*len(b))
	for _, c := range b {
		out = append(out, digits[c>>4], digits[c&0xf])
	}
	return string(out)
}

func allBytes(b []byte, v byte) bool {
	for _, c := range b {
		if c != v {
			return false
		}
	}
	return true
}

// numgenMap reads an anonymous numgen map's elements.
func (s *netlinkSource) numgenMap(t *gnft.Table, name, kind string, modulus uint32, v6 bool) (*collectorapi.NFTablesNumgenMap, error) {
	elems, err := s.conn.GetSetElements(&gnft.Set{Table: t, Name: name})
	if err != nil {
		return nil, fmt.Errorf("elements of %s: %w", name, err)
	}
	ng := &collectorapi.NFTablesNumgenMap{Kind: kind, Modulus: modulus, Set: name}
	for _, el := range elems {
		if len(el.Key) < 4 {
			continue
		}
		ent := collectorapi.NFTablesNumgenEntry{Index: binary.NativeEndian.Uint32(el.Key[:4])}
		if kind == "vmap" {
			ent.Verdict, ent.Target = decodeVerdict(el.Val)
		} else {
			ent.Address = decodeAddrPort(el.Val, v6)
		}
		ng.Entries = append(ng.Entries, ent)
	}
	finishNumgen(ng)
	return ng, nil
}

// decodeAddrPort decodes an "ipv4_addr . inet_service" (or ipv6) value.
func decodeAddrPort(b []byte, v6 bool) string {
	n := 4
	if v6 {
		n = 16
	}
	if len(b) < n+2 {
		return "0x" + hexBytes(b)
	}
	return netipJoin(ipFromBytes(b[:n]), binary.BigEndian.Uint16(b[n:n+2]))
}

// ensure syscall is referenced for platforms where unix.ENOENT aliases it.
var _ = syscall.ENOENT
