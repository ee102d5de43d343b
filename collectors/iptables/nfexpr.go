package iptables

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"net/netip"
	"strconv"
	"strings"
)

// This file turns one nf_tables rule written by iptables-nft (a
// NFT_MSG_NEWRULE payload, as the kernel dumps it) back into the line
// `iptables-nft -S` prints for it, so that the netlink reader and the text
// reader hand the same rule to ParseRule. iptables-nft stores what it can as
// native expressions (meta l4proto, payload/bitwise/cmp for addresses and
// ports, meta mark, immediate verdicts) and everything else as
// xtables-compat `match`/`target` expressions carrying the xt extension's
// info blob. Anything outside what kube-proxy writes makes the decoder fail
// with errUnsupported, and the reader lists that chain with iptables instead:
// a rule is never rendered half-understood.

// errUnsupported is a rule the decoder does not render exactly as iptables
// would.
var errUnsupported = errors.New("expression not rendered by the netlink reader")

// Netlink attribute types (linux/netfilter/nf_tables.h,
// linux/netfilter/nfnetlink_compat.h).
const (
	nftaRuleChain       = 2
	nftaRuleExpressions = 4
	nftaListElem        = 1
	nftaExprName        = 1
	nftaExprData        = 2
	nftaDataValue       = 1
	nftaDataVerdict     = 2
	nftaVerdictCode     = 1
	nftaVerdictChain    = 2

	nftaMetaDreg = 1
	nftaMetaKey  = 2

	nftaCmpSreg = 1
	nftaCmpOp   = 2
	nftaCmpData = 3

	nftaPayloadDreg   = 1
	nftaPayloadBase   = 2
	nftaPayloadOffset = 3
	nftaPayloadLen    = 4

	nftaBitwiseSreg = 1
	nftaBitwiseDreg = 2
	nftaBitwiseLen  = 3
	nftaBitwiseMask = 4
	nftaBitwiseXor  = 5
	nftaBitwiseOp   = 6

	nftaImmediateDreg = 1
	nftaImmediateData = 2

	nftaRangeSreg     = 1
	nftaRangeOp       = 2
	nftaRangeFromData = 3
	nftaRangeToData   = 4

	// NFTA_MATCH_* and NFTA_TARGET_* share their numbering.
	nftaXTName = 1
	nftaXTRev  = 2
	nftaXTInfo = 3

	nftMetaMark     = 3
	nftMetaIIFName  = 6
	nftMetaOIFName  = 7
	nftMetaL4Proto  = 16
	nftPayloadNet   = 1
	nftPayloadTrans = 2
	nftCmpEq        = 0
	nftCmpNeq       = 1
	nftRangeEq      = 0
	nftRangeNeq     = 1
	nftRegVerdict   = 0

	// Verdict codes (linux/netfilter.h, nf_tables.h).
	nfDrop    = 0
	nfAccept  = 1
	nftJump   = -3
	nftGoto   = -4
	nftReturn = -5
)

// nlAttrs walks netlink attributes in b; fn gets each type (nested flag and
// byte-order flag cleared) and payload. It returns an error on a truncated
// attribute.
func nlAttrs(b []byte, fn func(typ uint16, data []byte) error) error {
	for len(b) > 0 {
		if len(b) < 4 {
			return errors.New("truncated netlink attribute")
		}
		l := int(binary.LittleEndian.Uint16(b))
		typ := binary.LittleEndian.Uint16(b[2:]) & 0x3fff
		if l < 4 || l > len(b) {
			return errors.New("bad netlink attribute length")
		}
		if err := fn(typ, b[4:l]); err != nil {
			return err
		}
		al := (l + 3) &^ 3
		if al > len(b) {
			al = len(b)
		}
		b = b[al:]
	}
	return nil
}

func be32(b []byte) (uint32, error) {
	if len(b) != 4 {
		return 0, errors.New("bad u32 attribute")
	}
	return binary.BigEndian.Uint32(b), nil
}

// nlString is a NUL-terminated netlink string attribute.
func nlString(b []byte) string {
	if i := indexNUL(b); i >= 0 {
		b = b[:i]
	}
	return string(b)
}

func indexNUL(b []byte) int {
	for i, c := range b {
		if c == 0 {
			return i
		}
	}
	return -1
}

// nfExpr is one expression of a rule.
type nfExpr struct {
	name string
	data []byte
}

// nfRule is a rule message split into its chain and expressions; data
// slices alias the message.
type nfRule struct {
	chain string
	exprs []nfExpr
}

// parseRuleMsg splits an NFT_MSG_NEWRULE payload (after the nfgenmsg
// header).
func parseRuleMsg(b []byte) (nfRule, error) {
	var r nfRule
	err := nlAttrs(b, func(typ uint16, data []byte) error {
		switch typ {
		case nftaRuleChain:
			r.chain = nlString(data)
		case nftaRuleExpressions:
			return nlAttrs(data, func(typ uint16, elem []byte) error {
				if typ != nftaListElem {
					return nil
				}
				var e nfExpr
				if err := nlAttrs(elem, func(typ uint16, d []byte) error {
					switch typ {
					case nftaExprName:
						e.name = nlString(d)
					case nftaExprData:
						e.data = d
					}
					return nil
				}); err != nil {
					return err
				}
				r.exprs = append(r.exprs, e)
				return nil
			})
		}
		return nil
	})
	return r, err
}

// nftaChainUse is NFTA_CHAIN_USE (linux/netfilter/nf_tables.h).
const nftaChainUse = 6

// parseChainUse reads NFTA_CHAIN_USE out of an NFT_MSG_NEWCHAIN payload
// (after the nfgenmsg header); a chain reply without it is an error.
func parseChainUse(b []byte) (uint32, error) {
	var use uint32
	found := false
	err := nlAttrs(b, func(typ uint16, d []byte) error {
		if typ != nftaChainUse {
			return nil
		}
		v, err := be32(d)
		use, found = v, err == nil
		return err
	})
	if err == nil && !found {
		err = errors.New("netlink: chain reply without NFTA_CHAIN_USE")
	}
	return use, err
}

// xtCall is a compat match or target.
type xtCall struct {
	name string
	rev  uint32
	info []byte
}

func parseXT(b []byte) (xtCall, error) {
	var x xtCall
	err := nlAttrs(b, func(typ uint16, d []byte) error {
		var err error
		switch typ {
		case nftaXTName:
			x.name = nlString(d)
		case nftaXTRev:
			x.rev, err = be32(d)
		case nftaXTInfo:
			x.info = d
		}
		return err
	})
	return x, err
}

// nestedValue reads NFTA_DATA_VALUE out of an NFTA_*_DATA attribute.
func nestedValue(b []byte) ([]byte, error) {
	var v []byte
	err := nlAttrs(b, func(typ uint16, d []byte) error {
		if typ == nftaDataValue {
			v = d
		}
		return nil
	})
	if v == nil && err == nil {
		err = errUnsupported
	}
	return v, err
}

// regLoad is what a register holds: a meta key or a payload field, possibly
// masked by a bitwise.
type regLoad struct {
	meta         uint32 // meta key, when isMeta
	isMeta       bool
	base, offset uint32
	length       uint32
	mask         []byte
}

// ruleLine accumulates the parts iptables prints in a fixed order: the
// address/interface/protocol header, then the matches in their order, then
// the target.
type ruleLine struct {
	ipv6     bool
	src, dst string
	notSrc   bool
	notDst   bool
	in, out  string
	notIn    bool
	notOut   bool
	proto    uint8
	notProto bool
	matches  []string // each " -m name ..."
	target   string   // " -j X ..." or " -g X"
	// portMatch is the index in matches of a native tcp/udp port match,
	// so that --sport and --dport of one rule land in one "-m tcp".
	portMatch int
	sport     string
	dport     string
	notSport  bool
	notDport  bool
}

// renderRule renders one iptables-nft rule of chain as `iptables -S` would
// ("-A CHAIN ..."). ipv6 selects the address family of the table.
func renderRule(r nfRule, ipv6 bool) (string, error) {
	l := ruleLine{ipv6: ipv6, portMatch: -1}
	regs := map[uint32]regLoad{}
	for _, e := range r.exprs {
		if err := l.add(e, regs); err != nil {
			return "", err
		}
	}
	if !iptablesWord(r.chain) {
		return "", errUnsupported
	}
	var b strings.Builder
	b.WriteString("-A ")
	b.WriteString(r.chain)
	if l.src != "" {
		if l.notSrc {
			b.WriteString(" !")
		}
		b.WriteString(" -s " + l.src)
	}
	if l.dst != "" {
		if l.notDst {
			b.WriteString(" !")
		}
		b.WriteString(" -d " + l.dst)
	}
	if l.in != "" {
		if l.notIn {
			b.WriteString(" !")
		}
		b.WriteString(" -i " + l.in)
	}
	if l.out != "" {
		if l.notOut {
			b.WriteString(" !")
		}
		b.WriteString(" -o " + l.out)
	}
	if l.proto != 0 {
		if l.notProto {
			b.WriteString(" !")
		}
		b.WriteString(" -p " + protoName(l.proto))
	}
	for i, m := range l.matches {
		if i == l.portMatch {
			m = l.portMatchText()
		}
		b.WriteString(m)
	}
	b.WriteString(l.target)
	return b.String(), nil
}

// iptablesWord reports whether a name from the kernel (chain, extension,
// interface, recent list) prints as one word that reads back as itself: what
// iptables itself accepts in those places. Anything else (nft can name a chain
// "a b") is left to iptables' own listing.
func iptablesWord(s string) bool {
	if s == "" || s[0] == '-' || s[0] == '!' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c == '"' || c == '\\' || c == '\'' || c >= 0x7f {
			return false
		}
	}
	return true
}

// protoName is iptables' proto_to_name for the protocols it names.
func protoName(p uint8) string {
	switch p {
	case 6:
		return "tcp"
	case 17:
		return "udp"
	case 132:
		return "sctp"
	case 1:
		return "icmp"
	case 58:
		return "ipv6-icmp"
	case 136:
		return "udplite"
	case 50:
		return "esp"
	case 51:
		return "ah"
	case 135:
		return "mh"
	}
	return strconv.Itoa(int(p))
}

func (l *ruleLine) portMatchText() string {
	s := " -m " + protoName(l.proto)
	if l.sport != "" {
		if l.notSport {
			s += " !"
		}
		s += " --sport " + l.sport
	}
	if l.dport != "" {
		if l.notDport {
			s += " !"
		}
		s += " --dport " + l.dport
	}
	return s
}

func (l *ruleLine) add(e nfExpr, regs map[uint32]regLoad) error {
	switch e.name {
	case "counter":
		return nil
	case "meta":
		var key, dreg uint32
		hasDreg := false
		if err := nlAttrs(e.data, func(typ uint16, d []byte) error {
			var err error
			switch typ {
			case nftaMetaKey:
				key, err = be32(d)
			case nftaMetaDreg:
				dreg, err = be32(d)
				hasDreg = true
			default:
				err = errUnsupported // a meta set
			}
			return err
		}); err != nil {
			return err
		}
		if !hasDreg {
			return errUnsupported
		}
		regs[dreg] = regLoad{isMeta: true, meta: key}
	case "payload":
		var ld regLoad
		var dreg uint32
		hasDreg := false
		if err := nlAttrs(e.data, func(typ uint16, d []byte) error {
			var err error
			switch typ {
			case nftaPayloadDreg:
				dreg, err = be32(d)
				hasDreg = true
			case nftaPayloadBase:
				ld.base, err = be32(d)
			case nftaPayloadOffset:
				ld.offset, err = be32(d)
			case nftaPayloadLen:
				ld.length, err = be32(d)
			default:
				err = errUnsupported // payload writes
			}
			return err
		}); err != nil {
			return err
		}
		if !hasDreg {
			return errUnsupported
		}
		regs[dreg] = ld
	case "bitwise":
		var sreg, dreg, length uint32
		var mask, xor []byte
		if err := nlAttrs(e.data, func(typ uint16, d []byte) error {
			var err error
			switch typ {
			case nftaBitwiseSreg:
				sreg, err = be32(d)
			case nftaBitwiseDreg:
				dreg, err = be32(d)
			case nftaBitwiseLen:
				length, err = be32(d)
			case nftaBitwiseMask:
				mask, err = nestedValue(d)
			case nftaBitwiseXor:
				xor, err = nestedValue(d)
			case nftaBitwiseOp:
				var op uint32
				if op, err = be32(d); err == nil && op != 0 { // NFT_BITWISE_MASK_XOR
					err = errUnsupported
				}
			default:
				err = errUnsupported // shifts, operation variants
			}
			return err
		}); err != nil {
			return err
		}
		ld, ok := regs[sreg]
		if !ok || ld.mask != nil || len(mask) != int(length) || len(xor) != int(length) || !allZero(xor) {
			return errUnsupported
		}
		ld.mask = mask
		regs[dreg] = ld
	case "cmp":
		var sreg, op uint32
		var data []byte
		if err := nlAttrs(e.data, func(typ uint16, d []byte) error {
			var err error
			switch typ {
			case nftaCmpSreg:
				sreg, err = be32(d)
			case nftaCmpOp:
				op, err = be32(d)
			case nftaCmpData:
				data, err = nestedValue(d)
			}
			return err
		}); err != nil {
			return err
		}
		ld, ok := regs[sreg]
		if !ok || (op != nftCmpEq && op != nftCmpNeq) {
			return errUnsupported
		}
		return l.cmp(ld, op == nftCmpNeq, data)
	case "range":
		var sreg, op uint32
		var from, to []byte
		if err := nlAttrs(e.data, func(typ uint16, d []byte) error {
			var err error
			switch typ {
			case nftaRangeSreg:
				sreg, err = be32(d)
			case nftaRangeOp:
				op, err = be32(d)
			case nftaRangeFromData:
				from, err = nestedValue(d)
			case nftaRangeToData:
				to, err = nestedValue(d)
			}
			return err
		}); err != nil {
			return err
		}
		ld, ok := regs[sreg]
		if !ok || ld.isMeta || ld.mask != nil || ld.base != nftPayloadTrans || ld.length != 2 || len(from) != 2 || len(to) != 2 ||
			(op != nftRangeEq && op != nftRangeNeq) {
			return errUnsupported
		}
		return l.port(ld.offset, op == nftRangeNeq, fmt.Sprintf("%d:%d", binary.BigEndian.Uint16(from), binary.BigEndian.Uint16(to)))
	case "immediate":
		return l.immediate(e.data)
	case "match":
		x, err := parseXT(e.data)
		if err != nil {
			return err
		}
		if !iptablesWord(x.name) {
			return errUnsupported
		}
		s, err := renderMatch(x, l.ipv6)
		if err != nil {
			return err
		}
		l.matches = append(l.matches, " -m "+x.name+s)
	case "target":
		x, err := parseXT(e.data)
		if err != nil {
			return err
		}
		if !iptablesWord(x.name) {
			return errUnsupported
		}
		if l.target != "" {
			return errUnsupported
		}
		s, err := renderTarget(x, l.ipv6)
		if err != nil {
			return err
		}
		l.target = " -j " + x.name + s
	default:
		return errUnsupported
	}
	return nil
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// cmp turns a comparison of a loaded register into the option it stands
// for.
func (l *ruleLine) cmp(ld regLoad, neg bool, data []byte) error {
	if ld.isMeta {
		switch ld.meta {
		case nftMetaL4Proto:
			if len(data) != 1 || ld.mask != nil || l.proto != 0 || data[0] == 0 {
				return errUnsupported
			}
			l.proto, l.notProto = data[0], neg
			return nil
		case nftMetaIIFName, nftMetaOIFName:
			if ld.mask != nil || len(data) == 0 || len(data) > 16 {
				return errUnsupported
			}
			name := nlString(data)
			if !iptablesWord(name) {
				return errUnsupported
			}
			if indexNUL(data) < 0 {
				name += "+" // a prefix match: iptables compares without the NUL
			}
			if ld.meta == nftMetaIIFName {
				if l.in != "" {
					return errUnsupported
				}
				l.in, l.notIn = name, neg
			} else {
				if l.out != "" {
					return errUnsupported
				}
				l.out, l.notOut = name, neg
			}
			return nil
		case nftMetaMark:
			// -m mark --mark, stored natively: meta mark, bitwise mask, cmp
			// (host byte order).
			if len(data) != 4 {
				return errUnsupported
			}
			mark := binary.NativeEndian.Uint32(data)
			mask := uint32(0xffffffff)
			if ld.mask != nil {
				if len(ld.mask) != 4 {
					return errUnsupported
				}
				mask = binary.NativeEndian.Uint32(ld.mask)
			}
			s := " -m mark"
			if neg {
				s += " !"
			}
			l.matches = append(l.matches, s+" --mark "+markText(mark, mask))
			return nil
		}
		return errUnsupported
	}
	switch ld.base {
	case nftPayloadNet:
		return l.addr(ld, neg, data)
	case nftPayloadTrans:
		if ld.mask != nil || ld.length != 2 || len(data) != 2 {
			return errUnsupported
		}
		return l.port(ld.offset, neg, strconv.Itoa(int(binary.BigEndian.Uint16(data))))
	}
	return errUnsupported
}

// markText is libxt_mark's print_mark.
func markText(mark, mask uint32) string {
	if mask != 0xffffffff {
		return fmt.Sprintf("0x%x/0x%x", mark, mask)
	}
	return fmt.Sprintf("0x%x", mark)
}

// addr is a source or destination address match: payload of the network
// header, a length of whole bytes (iptables-nft shortens byte-aligned
// prefixes) or a bitwise mask.
func (l *ruleLine) addr(ld regLoad, neg bool, data []byte) error {
	size, srcOff, dstOff := 4, uint32(12), uint32(16)
	if l.ipv6 {
		size, srcOff, dstOff = 16, 8, 24
	}
	if ld.offset != srcOff && ld.offset != dstOff {
		return errUnsupported
	}
	if int(ld.length) != len(data) || ld.length == 0 || int(ld.length) > size {
		return errUnsupported
	}
	full := make([]byte, size)
	copy(full, data)
	maskBytes := make([]byte, size)
	if ld.mask != nil {
		if len(ld.mask) != len(data) {
			return errUnsupported
		}
		copy(maskBytes, ld.mask)
	} else {
		for i := 0; i < int(ld.length); i++ {
			maskBytes[i] = 0xff
		}
	}
	plen, ok := prefixLen(maskBytes)
	if !ok {
		return errUnsupported // non-contiguous masks print as dotted masks
	}
	a, _ := netip.AddrFromSlice(full)
	s := a.String() + "/" + strconv.Itoa(plen)
	if ld.offset == srcOff {
		if l.src != "" {
			return errUnsupported
		}
		l.src, l.notSrc = s, neg
	} else {
		if l.dst != "" {
			return errUnsupported
		}
		l.dst, l.notDst = s, neg
	}
	return nil
}

func prefixLen(mask []byte) (int, bool) {
	n, done := 0, false
	for _, c := range mask {
		if done && c != 0 {
			return 0, false
		}
		ones := bits.LeadingZeros8(^c)
		if c<<ones != 0 {
			return 0, false
		}
		n += ones
		if ones < 8 {
			done = true
		}
	}
	return n, true
}

// port is a tcp/udp port match stored natively (iptables-nft turns
// "-m tcp --dport N" into payload/cmp); it prints as the tcp or udp match
// at the position of its first expression.
func (l *ruleLine) port(offset uint32, neg bool, val string) error {
	if l.proto != 6 && l.proto != 17 || l.notProto {
		return errUnsupported
	}
	if l.portMatch < 0 {
		l.portMatch = len(l.matches)
		l.matches = append(l.matches, "")
	}
	switch offset {
	case 0:
		if l.sport != "" {
			return errUnsupported
		}
		l.sport, l.notSport = val, neg
	case 2:
		if l.dport != "" {
			return errUnsupported
		}
		l.dport, l.notDport = val, neg
	default:
		return errUnsupported
	}
	return nil
}

func (l *ruleLine) immediate(b []byte) error {
	var dreg uint32
	var code int32
	var chain string
	var hasVerdict bool
	err := nlAttrs(b, func(typ uint16, d []byte) error {
		switch typ {
		case nftaImmediateDreg:
			v, err := be32(d)
			dreg = v
			return err
		case nftaImmediateData:
			return nlAttrs(d, func(typ uint16, d []byte) error {
				if typ != nftaDataVerdict {
					return errUnsupported
				}
				hasVerdict = true
				return nlAttrs(d, func(typ uint16, d []byte) error {
					switch typ {
					case nftaVerdictCode:
						v, err := be32(d)
						code = int32(v)
						return err
					case nftaVerdictChain:
						chain = nlString(d)
					}
					return nil
				})
			})
		}
		return nil
	})
	if err != nil {
		return err
	}
	if dreg != nftRegVerdict || !hasVerdict || l.target != "" {
		return errUnsupported
	}
	switch code {
	case nfAccept:
		l.target = " -j ACCEPT"
	case nfDrop:
		l.target = " -j DROP"
	case nftReturn:
		l.target = " -j RETURN"
	case nftJump:
		l.target = " -j " + chain
	case nftGoto:
		l.target = " -g " + chain
	default:
		return errUnsupported
	}
	if (code == nftJump || code == nftGoto) && !iptablesWord(chain) {
		return errUnsupported
	}
	return nil
}

// saveString is libxtables' xtables_save_string: a word of only letters,
// digits, '_' and '-' is printed bare, anything else in double quotes with
// '"', '\' and '\” escaped by a backslash.
func saveString(v string) string {
	bare := v != ""
	for i := 0; i < len(v) && bare; i++ {
		c := v[i]
		bare = c == '_' || c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
	}
	if bare {
		return " " + v
	}
	var b strings.Builder
	b.WriteString(` "`)
	for i := 0; i < len(v); i++ {
		if c := v[i]; c == '"' || c == '\\' || c == '\'' {
			b.WriteByte('\\')
		}
		b.WriteByte(v[i])
	}
	b.WriteByte('"')
	return b.String()
}

// cString is a fixed-size C char array.
func cString(b []byte) string {
	if i := indexNUL(b); i >= 0 {
		return string(b[:i])
	}
	return string(b)
}

// renderMatch prints an xt match's options the way its libxt_*.c save
// function does.
func renderMatch(x xtCall, ipv6 bool) (string, error) {
	info := x.info
	switch x.name {
	case "comment":
		// struct xt_comment_info { char comment[XT_MAX_COMMENT_LEN=256]; }
		if x.rev != 0 || len(info) < 256 {
			return "", errUnsupported
		}
		return " --comment" + saveString(cString(info[:256])), nil
	case "statistic":
		return statisticText(x)
	case "recent":
		return recentText(x, ipv6)
	case "addrtype":
		return addrtypeText(x)
	case "tcp", "udp":
		return tcpudpText(x)
	case "nfacct":
		// struct xt_nfacct_match_info { char name[NFACCT_NAME_MAX=32];
		// struct nf_acct *nfacct; } (revision 1 aligns the pointer to 8).
		// libxt_nfacct prints " --nfacct-name " and then the saved string
		// with its own leading space.
		if x.rev > 1 || len(info) < 32 {
			return "", errUnsupported
		}
		name := cString(info[:32])
		if name == "" || !iptablesWord(name) {
			return "", errUnsupported
		}
		return " --nfacct-name " + saveString(name), nil
	case "mark":
		// struct xt_mark_mtinfo1 { __u32 mark, mask; __u8 invert; }
		if x.rev != 1 || len(info) < 9 {
			return "", errUnsupported
		}
		s := ""
		if info[8] != 0 {
			s = " !"
		}
		return s + " --mark " + markText(binary.NativeEndian.Uint32(info), binary.NativeEndian.Uint32(info[4:])), nil
	}
	return "", errUnsupported
}

// statisticText: struct xt_statistic_info { __u16 mode, flags; union {
// struct { __u32 probability; } random; struct { __u32 every, packet,
// count; } nth; } u; struct xt_statistic_priv *master; }.
func statisticText(x xtCall) (string, error) {
	info := x.info
	if x.rev != 0 || len(info) < 16 {
		return "", errUnsupported
	}
	mode := binary.NativeEndian.Uint16(info)
	flags := binary.NativeEndian.Uint16(info[2:])
	inv := ""
	if flags&1 != 0 { // XT_STATISTIC_INVERT
		inv = " !"
	}
	switch mode {
	case 0: // XT_STATISTIC_MODE_RANDOM
		p := binary.NativeEndian.Uint32(info[4:])
		return fmt.Sprintf(" --mode random%s --probability %.11f", inv, float64(p)/0x80000000), nil
	case 1: // XT_STATISTIC_MODE_NTH
		every := binary.NativeEndian.Uint32(info[4:])
		packet := binary.NativeEndian.Uint32(info[8:])
		s := fmt.Sprintf(" --mode nth%s --every %d", inv, uint64(every)+1)
		if packet != 0 {
			s += fmt.Sprintf(" --packet %d", packet)
		}
		return s, nil
	}
	return "", errUnsupported
}

// recentText: struct xt_recent_mtinfo { __u32 seconds, hit_count; __u8
// check_set, invert; char name[XT_RECENT_NAME_LEN=200]; __u8 side; }, and
// revision 1 adds union nf_inet_addr mask (at offset 212, 4-aligned).
func recentText(x xtCall, ipv6 bool) (string, error) {
	info := x.info
	if x.rev != 1 || len(info) < 228 {
		return "", errUnsupported
	}
	const (
		check  = 1 << 0
		set    = 1 << 1
		update = 1 << 2
		remove = 1 << 3
		ttl    = 1 << 4
		reap   = 1 << 5
	)
	seconds := binary.NativeEndian.Uint32(info)
	hits := binary.NativeEndian.Uint32(info[4:])
	cs, invert := info[8], info[9]
	name := cString(info[10:210])
	side := info[210]
	var b strings.Builder
	if invert != 0 {
		b.WriteString(" !")
	}
	if cs&set != 0 {
		b.WriteString(" --set")
	}
	if cs&check != 0 {
		b.WriteString(" --rcheck")
	}
	if cs&update != 0 {
		b.WriteString(" --update")
	}
	if cs&remove != 0 {
		b.WriteString(" --remove")
	}
	if seconds != 0 {
		fmt.Fprintf(&b, " --seconds %d", seconds)
	}
	if cs&reap != 0 {
		b.WriteString(" --reap")
	}
	if hits != 0 {
		fmt.Fprintf(&b, " --hitcount %d", hits)
	}
	if cs&ttl != 0 {
		b.WriteString(" --rttl")
	}
	if !iptablesWord(name) {
		return "", errUnsupported
	}
	b.WriteString(" --name " + name)
	mask := info[212:228]
	if ipv6 {
		b.WriteString(" --mask " + netip.AddrFrom16([16]byte(mask)).String())
	} else {
		b.WriteString(" --mask " + netip.AddrFrom4([4]byte(mask[:4])).String())
	}
	switch side {
	case 0: // XT_RECENT_SOURCE
		b.WriteString(" --rsource")
	case 1: // XT_RECENT_DEST
		b.WriteString(" --rdest")
	}
	return b.String(), nil
}

// addrtypeText: struct xt_addrtype_info_v1 { __u16 source, dest; __u32
// flags; }.
func addrtypeText(x xtCall) (string, error) {
	info := x.info
	if x.rev != 1 || len(info) < 8 {
		return "", errUnsupported
	}
	src := binary.NativeEndian.Uint16(info)
	dst := binary.NativeEndian.Uint16(info[2:])
	flags := binary.NativeEndian.Uint32(info[4:])
	var b strings.Builder
	if src != 0 {
		if flags&1 != 0 { // XT_ADDRTYPE_INVERT_SOURCE
			b.WriteString(" !")
		}
		b.WriteString(" --src-type " + addrTypes(src))
	}
	if dst != 0 {
		if flags&2 != 0 { // XT_ADDRTYPE_INVERT_DEST
			b.WriteString(" !")
		}
		b.WriteString(" --dst-type " + addrTypes(dst))
	}
	if flags&4 != 0 {
		b.WriteString(" --limit-iface-in")
	}
	if flags&8 != 0 {
		b.WriteString(" --limit-iface-out")
	}
	return b.String(), nil
}

// addrTypeNames are the XT_ADDRTYPE_* bits in order (libxt_addrtype.c).
var addrTypeNames = []string{"UNSPEC", "UNICAST", "LOCAL", "BROADCAST", "ANYCAST", "MULTICAST",
	"BLACKHOLE", "UNREACHABLE", "PROHIBIT", "THROW", "NAT", "XRESOLVE"}

func addrTypes(mask uint16) string {
	var names []string
	for i, n := range addrTypeNames {
		if mask&(1<<i) != 0 {
			names = append(names, n)
		}
	}
	return strings.Join(names, ",")
}

// tcpudpText: struct xt_tcp { __u16 spts[2], dpts[2]; __u8 option,
// flg_mask, flg_cmp, invflags; } and struct xt_udp { __u16 spts[2],
// dpts[2]; __u8 invflags; }. Only ports are rendered; kube-proxy writes
// no TCP flags or options.
func tcpudpText(x xtCall) (string, error) {
	info := x.info
	if x.rev != 0 || len(info) < 9 {
		return "", errUnsupported
	}
	inv := info[8]
	if x.name == "tcp" {
		if len(info) < 12 || info[8] != 0 || info[9] != 0 || info[10] != 0 {
			return "", errUnsupported
		}
		inv = info[11]
	}
	var b strings.Builder
	for i, opt := range []string{"--sport", "--dport"} {
		lo := binary.NativeEndian.Uint16(info[4*i:])
		hi := binary.NativeEndian.Uint16(info[4*i+2:])
		if lo == 0 && hi == 0xffff {
			continue
		}
		if inv&(1<<i) != 0 { // XT_TCP_INV_SRCPT, XT_TCP_INV_DSTPT
			b.WriteString(" !")
		}
		if lo != hi {
			fmt.Fprintf(&b, " %s %d:%d", opt, lo, hi)
		} else {
			fmt.Fprintf(&b, " %s %d", opt, lo)
		}
	}
	if inv&^3 != 0 {
		return "", errUnsupported
	}
	return b.String(), nil
}

// renderTarget prints an xt target's options the way its libxt_*.c save
// function does.
func renderTarget(x xtCall, ipv6 bool) (string, error) {
	info := x.info
	switch x.name {
	case "DNAT":
		return natText(x, ipv6, "--to-destination ", false)
	case "MASQUERADE":
		return natText(x, ipv6, "--to-ports ", true)
	case "MARK":
		// struct xt_mark_tginfo2 { __u32 mark, mask; }: libxt_MARK always
		// saves --set-xmark.
		if x.rev != 2 || len(info) < 8 {
			return "", errUnsupported
		}
		return fmt.Sprintf(" --set-xmark 0x%x/0x%x", binary.NativeEndian.Uint32(info), binary.NativeEndian.Uint32(info[4:])), nil
	case "REJECT":
		// struct ipt_reject_info / ip6t_reject_info { __u32 with; }
		if x.rev != 0 || len(info) < 4 {
			return "", errUnsupported
		}
		names := rejectNames4
		if ipv6 {
			names = rejectNames6
		}
		w := binary.NativeEndian.Uint32(info)
		if int(w) >= len(names) || names[w] == "" {
			return "", errUnsupported
		}
		return " --reject-with " + names[w], nil
	}
	return "", errUnsupported
}

// Reject types by value (libipt_REJECT.c, libip6t_REJECT.c).
var (
	rejectNames4 = []string{"icmp-net-unreachable", "icmp-host-unreachable", "icmp-proto-unreachable", "icmp-port-unreachable",
		"", "icmp-net-prohibited", "icmp-host-prohibited", "tcp-reset", "icmp-admin-prohibited"}
	rejectNames6 = []string{"icmp6-no-route", "icmp6-adm-prohibited", "icmp6-not-neighbour", "icmp6-addr-unreachable",
		"icmp6-port-unreachable", "", "tcp-reset", "icmp6-policy-fail", "icmp6-reject-route"}
)

// natRange is struct nf_nat_range2 (and its prefixes nf_nat_range and the
// IPv4 multi-range compat): flags, address range, port range, base port.
type natRange struct {
	flags            uint32
	minAddr, maxAddr netip.Addr
	minPort, maxPort uint16
	basePort         uint16
}

// NF_NAT_RANGE_* flags (linux/netfilter/nf_nat.h).
const (
	natMapIPs       = 1 << 0
	natProtoSpec    = 1 << 1
	natRandom       = 1 << 2
	natPersistent   = 1 << 3
	natRandomFully  = 1 << 4
	natProtoOffset  = 1 << 5
	natKnownFlagSet = natMapIPs | natProtoSpec | natRandom | natPersistent | natRandomFully | natProtoOffset
)

// decodeNAT reads the target info by revision: IPv4 revision 0 is struct
// nf_nat_ipv4_multi_range_compat { unsigned int rangesize; struct
// nf_nat_ipv4_range { unsigned int flags; __be32 min_ip, max_ip; union
// nf_conntrack_man_proto min, max; } range[1]; }; IPv6 revision 0 and any
// revision 1 is struct nf_nat_range { unsigned int flags; union nf_inet_addr
// min_addr, max_addr; union nf_conntrack_man_proto min_proto, max_proto; };
// revision 2 appends base_proto (struct nf_nat_range2).
func decodeNAT(x xtCall, ipv6 bool) (natRange, error) {
	info := x.info
	var r natRange
	if !ipv6 && x.rev == 0 {
		if len(info) < 20 || binary.NativeEndian.Uint32(info) != 1 {
			return r, errUnsupported
		}
		r.flags = binary.NativeEndian.Uint32(info[4:])
		r.minAddr = netip.AddrFrom4([4]byte(info[8:12]))
		r.maxAddr = netip.AddrFrom4([4]byte(info[12:16]))
		r.minPort = binary.BigEndian.Uint16(info[16:])
		r.maxPort = binary.BigEndian.Uint16(info[18:])
	} else {
		if x.rev > 2 || len(info) < 40 || (x.rev == 2 && len(info) < 42) {
			return r, errUnsupported
		}
		r.flags = binary.NativeEndian.Uint32(info)
		if ipv6 {
			r.minAddr = netip.AddrFrom16([16]byte(info[4:20]))
			r.maxAddr = netip.AddrFrom16([16]byte(info[20:36]))
		} else {
			r.minAddr = netip.AddrFrom4([4]byte(info[4:8]))
			r.maxAddr = netip.AddrFrom4([4]byte(info[20:24]))
		}
		r.minPort = binary.BigEndian.Uint16(info[36:])
		r.maxPort = binary.BigEndian.Uint16(info[38:])
		if x.rev == 2 {
			r.basePort = binary.BigEndian.Uint16(info[40:])
		}
	}
	if r.flags&^natKnownFlagSet != 0 {
		return r, errUnsupported
	}
	return r, nil
}

// natText is libxt_NAT.c's __NAT_print in save form.
func natText(x xtCall, ipv6 bool, rangeOpt string, skipColon bool) (string, error) {
	r, err := decodeNAT(x, ipv6)
	if err != nil {
		return "", err
	}
	var rs strings.Builder
	brackets := ipv6 && r.flags&natProtoSpec != 0
	if r.flags&natMapIPs != 0 {
		if brackets {
			rs.WriteByte('[')
		}
		rs.WriteString(r.minAddr.String())
		if r.minAddr != r.maxAddr {
			rs.WriteString("-" + r.maxAddr.String())
		}
		if brackets {
			rs.WriteByte(']')
		}
	}
	if r.flags&natProtoSpec != 0 {
		fmt.Fprintf(&rs, ":%d", r.minPort)
		if r.maxPort != r.minPort {
			fmt.Fprintf(&rs, "-%d", r.maxPort)
		}
		if r.flags&natProtoOffset != 0 {
			fmt.Fprintf(&rs, "/%d", r.basePort)
		}
	}
	var b strings.Builder
	if s := rs.String(); s != "" {
		if skipColon && s[0] == ':' {
			s = s[1:]
		}
		b.WriteString(" " + rangeOpt + s)
	}
	if r.flags&natRandom != 0 {
		b.WriteString(" --random")
	}
	if r.flags&natRandomFully != 0 {
		b.WriteString(" --random-fully")
	}
	if r.flags&natPersistent != 0 {
		b.WriteString(" --persistent")
	}
	return b.String(), nil
}

// ruleSummary is what the shared-chain filter needs before rendering: the
// verdict's chain and the comment.
func ruleSummary(r nfRule) (target string, comment []byte) {
	for _, e := range r.exprs {
		switch e.name {
		case "immediate":
			_ = nlAttrs(e.data, func(typ uint16, d []byte) error {
				if typ == nftaImmediateData {
					_ = nlAttrs(d, func(typ uint16, d []byte) error {
						if typ == nftaDataVerdict {
							_ = nlAttrs(d, func(typ uint16, d []byte) error {
								if typ == nftaVerdictChain {
									target = nlString(d)
								}
								return nil
							})
						}
						return nil
					})
				}
				return nil
			})
		case "match":
			if x, err := parseXT(e.data); err == nil && x.name == "comment" && len(x.info) > 0 {
				comment = x.info
				if i := indexNUL(comment); i >= 0 {
					comment = comment[:i]
				}
			}
		}
	}
	return target, comment
}
