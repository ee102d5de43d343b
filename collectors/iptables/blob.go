package iptables

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
)

// This file decodes a legacy iptables table as the kernel hands it to
// iptables-legacy-save: the IPT_SO_GET_ENTRIES (IP6T_SO_GET_ENTRIES) blob, a
// sequence of struct ipt_entry (ip6t_entry) each followed by its matches and
// its target. User-defined chains start after an ERROR target naming them and
// end with an unconditional RETURN that iptables-save does not print; a jump
// is a standard target whose verdict is the byte offset of the first entry of
// the chain jumped to. Only the chains asked for are rendered, each rule as
// iptables-legacy-save prints it, so that ParseRule sees the same line as
// from the text reader.

// Layout constants (linux/netfilter_ipv4/ip_tables.h,
// linux/netfilter_ipv6/ip6_tables.h, linux/netfilter/x_tables.h).
const (
	xtEntryHeader = 32 // struct xt_entry_match / xt_entry_target: u16 size, char name[29], u8 revision

	ipt4EntrySize = 112 // sizeof(struct ipt_entry)
	ipt6EntrySize = 168 // sizeof(struct ip6t_entry)

	iptFGoto  = 0x08 // IPT_F_GOTO (IP6T_F_GOTO is 0x04)
	ip6FGoto  = 0x04
	ip6FProto = 0x01 // IP6T_F_PROTO: set with -p
	iptFFrag  = 0x01

	iptInvViaIn  = 0x01
	iptInvViaOut = 0x02
	iptInvSrcIP  = 0x08
	iptInvDstIP  = 0x10
	iptInvFrag   = 0x20
	iptInvProto  = 0x40
	// IPv6: IP6T_INV_VIA_IN 0x01, VIA_OUT 0x02, TOS 0x04, SRCIP 0x08,
	// DSTIP 0x10, FRAG 0x20, PROTO 0x40 (the same bits).

	// Standard verdicts: -NF_DROP-1, -NF_ACCEPT-1, XT_RETURN (-NF_REPEAT-1).
	verdictDrop   = -1
	verdictAccept = -2
	verdictReturn = -5
)

// blobTable is one indexed table. At 10k Services the nat table holds
// ~60,000 user chains, so the index is kept compact: one fixed-size record
// per chain in blob order (found by a jump's offset with a binary search)
// and one hash per chain (found by name), with the names left in the blob.
type blobTable struct {
	ipv6 bool
	blob []byte
	// builtin are the built-in chains' [first rule, policy) offsets.
	builtin map[string][2]int
	// user are the user chains in blob order; slots is an open-addressing
	// table (linear probing, a power of two at least twice their number)
	// of their indexes + 1 by the hash of the name, 0 for a free slot.
	user  []blobChain
	slots []uint32
}

// blobChain is one user chain: its first rule, the end of its rules (its
// implicit RETURN), and the offset of the ERROR entry naming it.
type blobChain struct{ start, end, nameAt uint32 }

func nameHash(b []byte) uint64 {
	const offset64, prime64 = 14695981039346656037, 1099511628211
	h := uint64(offset64)
	for _, c := range b {
		h ^= uint64(c)
		h *= prime64
	}
	return h
}

// userName is the name of user chain i, from its ERROR entry.
func (t *blobTable) userName(i int) []byte {
	e, err := t.entryAt(int(t.user[i].nameAt))
	if err != nil {
		return nil
	}
	_, _, data, err := t.target(e)
	if err != nil {
		return nil
	}
	if j := indexNUL(data); j >= 0 {
		data = data[:j]
	}
	return data
}

// chainRange is the [first rule, end) of a chain, ok false when the table
// has no such chain.
func (t *blobTable) chainRange(chain string) ([2]int, bool) {
	if r, ok := t.builtin[chain]; ok {
		return r, true
	}
	if len(t.slots) == 0 {
		return [2]int{}, false
	}
	mask := uint64(len(t.slots) - 1)
	for i := nameHash([]byte(chain)) & mask; t.slots[i] != 0; i = (i + 1) & mask {
		u := t.slots[i] - 1
		if string(t.userName(int(u))) == chain {
			c := t.user[u]
			return [2]int{int(c.start), int(c.end)}, true
		}
	}
	return [2]int{}, false
}

// chainAt names the user chain whose first rule is at off.
func (t *blobTable) chainAt(off int) (string, bool) {
	i, found := slices.BinarySearchFunc(t.user, uint32(off), func(c blobChain, off uint32) int {
		switch {
		case c.start < off:
			return -1
		case c.start > off:
			return 1
		}
		return 0
	})
	if !found {
		return "", false
	}
	return string(t.userName(i)), true
}

// chainNames lists every chain of the table.
func (t *blobTable) chainNames() []string {
	var out []string
	for n := range t.builtin {
		out = append(out, n)
	}
	for i := range t.user {
		out = append(out, string(t.userName(i)))
	}
	return out
}

// entry is one rule's fixed part.
type blobEntry struct {
	off, targetOff, nextOff int
}

func (t *blobTable) entrySize() int {
	if t.ipv6 {
		return ipt6EntrySize
	}
	return ipt4EntrySize
}

// entryAt reads the offsets of the entry at off.
func (t *blobTable) entryAt(off int) (blobEntry, error) {
	es := t.entrySize()
	if off < 0 || off+es > len(t.blob) {
		return blobEntry{}, errors.New("blob: entry out of range")
	}
	to, no := 88, 90
	if t.ipv6 {
		to, no = 140, 142
	}
	e := blobEntry{off: off, targetOff: int(binary.NativeEndian.Uint16(t.blob[off+to:])), nextOff: int(binary.NativeEndian.Uint16(t.blob[off+no:]))}
	if e.targetOff < es || e.targetOff+xtEntryHeader > e.nextOff || off+e.nextOff > len(t.blob) {
		return blobEntry{}, errors.New("blob: bad entry offsets")
	}
	return e, nil
}

// target returns the entry's target name, revision, data.
func (t *blobTable) target(e blobEntry) (name string, rev uint8, data []byte, err error) {
	b := t.blob[e.off+e.targetOff : e.off+e.nextOff]
	size := int(binary.NativeEndian.Uint16(b))
	if size < xtEntryHeader || size > len(b) {
		return "", 0, nil, errors.New("blob: bad target size")
	}
	return cString(b[2:31]), b[31], b[xtEntryHeader:size], nil
}

// parseBlob indexes the chains of a table. hookEntry and underflow are the
// built-in chains' first and policy entries (from IPT_SO_GET_INFO), by hook
// number; validHooks says which are set.
func parseBlob(blob []byte, ipv6 bool, validHooks uint32, hookEntry, underflow [5]uint32) (*blobTable, error) {
	t := &blobTable{ipv6: ipv6, blob: blob, builtin: map[string][2]int{}}
	hookNames := [5]string{"PREROUTING", "INPUT", "FORWARD", "OUTPUT", "POSTROUTING"}
	for h := 0; h < 5; h++ {
		if validHooks&(1<<h) == 0 {
			continue
		}
		if int(hookEntry[h]) > len(blob) || int(underflow[h]) > len(blob) || hookEntry[h] > underflow[h] {
			return nil, errors.New("blob: bad hook offsets")
		}
		t.builtin[hookNames[h]] = [2]int{int(hookEntry[h]), int(underflow[h])}
	}
	// User chains: from the entry after "ERROR <name>" to the entry before
	// the next ERROR (that last one is the chain's implicit RETURN). The
	// target's name is compared in place: nothing is copied per entry.
	errorName := []byte("ERROR")
	cur, curAt, curStart, prev := false, 0, 0, -1
	// The name is hashed while its ERROR entry is in the cache: a second
	// pass over 60,000 of them, spread over the whole blob, cost more than
	// the scan itself.
	var curHash uint64
	// A kube-proxy chain takes 800 bytes of the blob on average (10k
	// Services: 47 MiB, 60,000 chains); room for one per 512 bytes grows
	// the slices at most once.
	t.user = make([]blobChain, 0, len(blob)/512)
	hashes := make([]uint64, 0, len(blob)/512)
	for off := 0; off < len(blob); {
		e, err := t.entryAt(off)
		if err != nil {
			return nil, err
		}
		tb := t.blob[e.off+e.targetOff : e.off+e.nextOff]
		if binary.NativeEndian.Uint16(tb) < xtEntryHeader {
			return nil, errors.New("blob: bad target size")
		}
		if n := tb[2:31]; bytes.HasPrefix(n, errorName) && (len(n) == len(errorName) || n[len(errorName)] == 0) {
			_, _, data, err := t.target(e)
			if err != nil {
				return nil, err
			}
			if cur && prev >= curStart {
				hashes = append(hashes, curHash)
				t.user = append(t.user, blobChain{start: uint32(curStart), end: uint32(prev), nameAt: uint32(curAt)})
			}
			name := data
			if j := indexNUL(name); j >= 0 {
				name = name[:j]
			}
			cur, curAt, curStart = string(name) != "ERROR", off, off+e.nextOff // "ERROR": the table's final entry
			curHash = nameHash(name)
		}
		prev = off
		off += e.nextOff
	}
	size := 2
	for size < 2*len(t.user) {
		size *= 2
	}
	t.slots = make([]uint32, size)
	mask := uint64(size - 1)
	for u, h := range hashes {
		i := h & mask
		for ; t.slots[i] != 0; i = (i + 1) & mask {
			if o := t.slots[i] - 1; hashes[o] == h && bytes.Equal(t.userName(int(o)), t.userName(u)) {
				return nil, fmt.Errorf("blob: chain %q twice", t.userName(u))
			}
		}
		t.slots[i] = uint32(u) + 1
	}
	return t, nil
}

// has reports whether the table holds the chain.
func (t *blobTable) has(chain string) bool {
	_, ok := t.chainRange(chain)
	return ok
}

// rules renders the rules of one chain; keep, when set, sees the jump
// target and the comment of each rule first and says whether to render it.
func (t *blobTable) rules(chain string, keep func(target string, comment []byte) bool) ([]string, error) {
	r, ok := t.chainRange(chain)
	if !ok {
		return nil, nil
	}
	var out []string
	for off := r[0]; off < r[1]; {
		e, err := t.entryAt(off)
		if err != nil {
			return nil, err
		}
		if keep != nil {
			tn, comment, err := t.summary(e)
			if err != nil {
				return nil, err
			}
			if !keep(tn, comment) {
				off += e.nextOff
				continue
			}
		}
		line, err := t.render(chain, e)
		if err != nil {
			return nil, err
		}
		out = append(out, line)
		off += e.nextOff
	}
	return out, nil
}

// jumpTarget names what a standard target's verdict leads to: a built-in
// verdict, a user chain, or "" for a fall-through to the next rule.
func (t *blobTable) jumpTarget(e blobEntry, verdict int32) (string, error) {
	switch verdict {
	case verdictAccept:
		return "ACCEPT", nil
	case verdictDrop:
		return "DROP", nil
	case verdictReturn:
		return "RETURN", nil
	}
	if verdict < 0 {
		return "", errUnsupported // NF_QUEUE and the like
	}
	if int(verdict) == e.off+e.nextOff {
		return "", nil
	}
	if name, ok := t.chainAt(int(verdict)); ok {
		return name, nil
	}
	return "", errors.New("blob: jump to an offset that starts no chain")
}

// matches calls fn for each match of the entry.
func (t *blobTable) matches(e blobEntry, fn func(x xtCall) error) error {
	for m := t.entrySize(); m < e.targetOff; {
		b := t.blob[e.off+m : e.off+e.targetOff]
		if len(b) < xtEntryHeader {
			return errors.New("blob: truncated match")
		}
		size := int(binary.NativeEndian.Uint16(b))
		if size < xtEntryHeader || size > len(b) {
			return errors.New("blob: bad match size")
		}
		if err := fn(xtCall{name: cString(b[2:31]), rev: uint32(b[31]), info: b[xtEntryHeader:size]}); err != nil {
			return err
		}
		m += size
	}
	return nil
}

// summary is the jump target and comment of an entry, for the shared
// chains' filter.
func (t *blobTable) summary(e blobEntry) (string, []byte, error) {
	var comment []byte
	if err := t.matches(e, func(x xtCall) error {
		if x.name == "comment" {
			comment = x.info
			if i := indexNUL(comment); i >= 0 {
				comment = comment[:i]
			}
		}
		return nil
	}); err != nil {
		return "", nil, err
	}
	name, _, data, err := t.target(e)
	if err != nil || name != "" {
		return name, comment, err
	}
	if len(data) < 4 {
		return "", nil, errors.New("blob: short standard target")
	}
	tn, err := t.jumpTarget(e, int32(binary.NativeEndian.Uint32(data)))
	return tn, comment, err
}

// render prints one entry as iptables-legacy-save does (print_rule4 /
// print_rule6): addresses, interfaces, protocol, fragment flag, matches in
// order, target.
func (t *blobTable) render(chain string, e blobEntry) (string, error) {
	b := t.blob[e.off:]
	if !iptablesWord(chain) {
		return "", errUnsupported
	}
	var sb strings.Builder
	sb.WriteString("-A " + chain)
	var proto uint16
	var flags, inv uint8
	if t.ipv6 {
		proto, flags, inv = binary.NativeEndian.Uint16(b[128:]), b[131], b[132]
		if err := saveAddr(&sb, 's', b[0:16], b[32:48], inv&iptInvSrcIP != 0); err != nil {
			return "", err
		}
		if err := saveAddr(&sb, 'd', b[16:32], b[48:64], inv&iptInvDstIP != 0); err != nil {
			return "", err
		}
		if err := saveIface(&sb, 'i', b[64:80], b[96:112], inv&iptInvViaIn != 0); err != nil {
			return "", err
		}
		if err := saveIface(&sb, 'o', b[80:96], b[112:128], inv&iptInvViaOut != 0); err != nil {
			return "", err
		}
		if flags&^(ip6FGoto|ip6FProto) != 0 || inv&^(iptInvViaIn|iptInvViaOut|iptInvSrcIP|iptInvDstIP|iptInvProto) != 0 {
			return "", errUnsupported // TOS, fragment or protocol-header flags
		}
	} else {
		proto, flags, inv = binary.NativeEndian.Uint16(b[80:]), b[82], b[83]
		if err := saveAddr(&sb, 's', b[0:4], b[8:12], inv&iptInvSrcIP != 0); err != nil {
			return "", err
		}
		if err := saveAddr(&sb, 'd', b[4:8], b[12:16], inv&iptInvDstIP != 0); err != nil {
			return "", err
		}
		if err := saveIface(&sb, 'i', b[16:32], b[48:64], inv&iptInvViaIn != 0); err != nil {
			return "", err
		}
		if err := saveIface(&sb, 'o', b[32:48], b[64:80], inv&iptInvViaOut != 0); err != nil {
			return "", err
		}
		if flags&^(iptFGoto|iptFFrag) != 0 || inv&^(iptInvViaIn|iptInvViaOut|iptInvSrcIP|iptInvDstIP|iptInvProto|iptInvFrag) != 0 {
			return "", errUnsupported
		}
	}
	if proto != 0 {
		if inv&iptInvProto != 0 {
			sb.WriteString(" !")
		}
		if proto > 255 {
			return "", errUnsupported
		}
		sb.WriteString(" -p " + protoName(uint8(proto)))
	}
	if !t.ipv6 && flags&iptFFrag != 0 {
		if inv&iptInvFrag != 0 {
			sb.WriteString(" !")
		}
		sb.WriteString(" -f")
	}
	if err := t.matches(e, func(x xtCall) error {
		if !iptablesWord(x.name) {
			return errUnsupported
		}
		s, err := renderMatch(x, t.ipv6)
		if err != nil {
			return err
		}
		sb.WriteString(" -m " + x.name + s)
		return nil
	}); err != nil {
		return "", err
	}
	name, rev, data, err := t.target(e)
	if err != nil {
		return "", err
	}
	if name != "" {
		if !iptablesWord(name) {
			return "", errUnsupported
		}
		s, err := renderTarget(xtCall{name: name, rev: uint32(rev), info: data}, t.ipv6)
		if err != nil {
			return "", err
		}
		sb.WriteString(" -j " + name + s)
		return sb.String(), nil
	}
	if len(data) < 4 {
		return "", errors.New("blob: short standard target")
	}
	tn, err := t.jumpTarget(e, int32(binary.NativeEndian.Uint32(data)))
	if err != nil {
		return "", err
	}
	if tn != "" {
		if !iptablesWord(tn) {
			return "", errUnsupported
		}
		gotoFlag := iptFGoto
		if t.ipv6 {
			gotoFlag = ip6FGoto
		}
		if flags&uint8(gotoFlag) != 0 {
			sb.WriteString(" -g " + tn)
		} else {
			sb.WriteString(" -j " + tn)
		}
	}
	return sb.String(), nil
}

// saveAddr is save_ipv4_addr / save_ipv6_addr: nothing for 0/0, else
// "addr/prefix".
func saveAddr(sb *strings.Builder, letter byte, addr, mask []byte, invert bool) error {
	if allZero(addr) && allZero(mask) && !invert {
		return nil
	}
	plen, ok := prefixLen(mask)
	if !ok {
		return errUnsupported
	}
	a, _ := netip.AddrFromSlice(addr)
	if invert {
		sb.WriteString(" !")
	}
	fmt.Fprintf(sb, " -%c %s/%d", letter, a, plen)
	return nil
}

// saveIface prints an interface match whose mask covers the whole name
// (exact match) or the name without its NUL (a "+" wildcard).
func saveIface(sb *strings.Builder, letter byte, name, mask []byte, invert bool) error {
	n := cString(name)
	if n == "" && allZero(mask) {
		if invert {
			return errUnsupported
		}
		return nil
	}
	if !iptablesWord(n) {
		return errUnsupported
	}
	ones := bytes.IndexByte(mask, 0)
	if ones < 0 {
		ones = len(mask)
	}
	if !allZero(mask[ones:]) {
		return errUnsupported
	}
	switch ones {
	case len(n) + 1:
	case len(n):
		n += "+"
	default:
		return errUnsupported
	}
	if invert {
		sb.WriteString(" !")
	}
	fmt.Fprintf(sb, " -%c %s", letter, n)
	return nil
}
