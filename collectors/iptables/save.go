package iptables

import (
	"bufio"
	"bytes"
	"io"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
)

// saveFilter reads iptables-save output as a stream and keeps only the lines
// that can concern the queried Service: never the whole dump. Lines are kept
// when their chain is one of the Service's hash-named chains, when a shared
// chain's rule names the Service (comment or jump), or when their comment
// names the Service. KUBE-SEP rules without a comment (kube-proxy drops them
// above 1000 endpoints) are kept aside as raw bytes in one arena, because
// iptables-save prints KUBE-SEP-* chains before the KUBE-SVC-* chain that says
// which of them this Service uses; chain declarations go to an arena too.
// Both are searched only for the few chains the assembler asks about, so the
// per-line cost is a few byte comparisons and no allocation.
type saveFilter struct {
	spns   []string
	spnB   [][]byte
	wanted map[string]bool
	table  string
	kept   map[chainKey][]collectorapi.IPTablesRule
	// declared holds "\n<table> <chain>" for every ":chain" line.
	declared []byte
	// orphans holds comment-less KUBE-SEP rule lines, each "<table> <line>\n",
	// in fixed-size chunks: at 10k Services they are 8 MB, and one growing
	// slice would copy them again on every doubling.
	orphans     [][]byte
	orphanIndex map[chainKey][][3]int
}

// orphanChunk is the size of one orphans chunk.
const orphanChunk = 1 << 20

// keepOrphan appends "<table> <line>\n" to the orphans arena.
func (f *saveFilter) keepOrphan(line []byte) {
	n := len(f.table) + 1 + len(line) + 1
	if len(f.orphans) == 0 || cap(f.orphans[len(f.orphans)-1])-len(f.orphans[len(f.orphans)-1]) < n {
		f.orphans = append(f.orphans, make([]byte, 0, max(orphanChunk, n)))
	}
	c := &f.orphans[len(f.orphans)-1]
	*c = append(*c, f.table...)
	*c = append(*c, ' ')
	*c = append(*c, line...)
	*c = append(*c, '\n')
}

func isSharedChain(c []byte) bool {
	switch string(c) {
	case chainServices, chainNodePorts, chainExternalServices, chainProxyFirewall, chainMarkMasq:
		return true
	}
	return false
}

var sharedChains = map[string]bool{
	chainServices: true, chainNodePorts: true, chainExternalServices: true,
	chainProxyFirewall: true, chainMarkMasq: true,
}

func newSaveFilter(plans []portPlan) *saveFilter {
	f := &saveFilter{wanted: map[string]bool{}, kept: map[chainKey][]collectorapi.IPTablesRule{}, declared: []byte{'\n'}}
	for _, p := range plans {
		f.spns = append(f.spns, p.spn)
		f.spnB = append(f.spnB, []byte(p.spn))
		for _, c := range []string{p.chains.Service, p.chains.Local, p.chains.External, p.chains.Firewall} {
			f.wanted[c] = true
		}
		for sep := range p.seps {
			f.wanted[sep] = true
		}
	}
	return f
}

var (
	commentFlag   = []byte("--comment")
	ruleStart     = []byte("-A ")
	jumpNodePorts = []byte("-j " + chainNodePorts)
	// jumpKubePostrouting ends POSTROUTING's jump ("-j KUBE-POSTROUTING"),
	// not KUBE-POSTROUTING's own rules.
	jumpKubePostrouting = []byte("-j " + chainKubePostrouting)
	sepPrefix           = []byte("KUBE-SEP-")
)

// consume reads one iptables-save stream (any number of tables).
func (f *saveFilter) consume(rd io.Reader) error {
	sc := bufio.NewScanner(rd)
	sc.Buffer(make([]byte, 256<<10), 4<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 {
			continue
		}
		switch line[0] {
		case '*':
			f.table = string(line[1:])
			continue
		case ':':
			if i := bytes.IndexByte(line, ' '); i > 1 {
				f.declared = append(f.declared, f.table...)
				f.declared = append(f.declared, ' ')
				f.declared = append(f.declared, line[1:i]...)
				f.declared = append(f.declared, '\n')
			}
			continue
		}
		if !bytes.HasPrefix(line, ruleStart) {
			continue
		}
		rest := line[3:]
		end := bytes.IndexByte(rest, ' ')
		if end < 0 {
			end = len(rest)
		}
		chainB := rest[:end]
		if bytes.HasPrefix(chainB, sepPrefix) && !bytes.Contains(line, commentFlag) {
			// Comment-less endpoint chain: kept aside unless it is wanted.
			if f.wanted[string(chainB)] {
				f.keep(chainKey{f.table, string(chainB)}, line)
				continue
			}
			f.keepOrphan(line)
			continue
		}
		// Map lookups with string(bytes) keys do not allocate; the chain
		// name is copied only for lines that are kept.
		if f.wanted[string(chainB)] {
			f.keep(chainKey{f.table, string(chainB)}, line)
			continue
		}
		if f.table == "filter" && isFilterHook(chainB) {
			// A few rules, where policy enforcers hook their chains.
			f.keep(chainKey{f.table, string(chainB)}, line)
			continue
		}
		namesSpn := false
		for _, s := range f.spnB {
			if bytes.Contains(line, s) {
				namesSpn = true
				break
			}
		}
		if f.table == "nat" && (string(chainB) == chainKubePostrouting ||
			string(chainB) == chainPostrouting && bytes.Contains(line, jumpKubePostrouting)) {
			// The masquerade path: KUBE-POSTROUTING whole, and the jump to it.
			f.keep(chainKey{f.table, string(chainB)}, line)
			continue
		}
		if isSharedChain(chainB) {
			if string(chainB) == chainMarkMasq || namesSpn || bytes.Contains(line, jumpNodePorts) || f.jumpsToWanted(line) {
				f.keepIf(chainKey{f.table, string(chainB)}, line, true)
			}
			continue
		}
		if namesSpn {
			f.keepIf(chainKey{f.table, string(chainB)}, line, false)
		}
	}
	return sc.Err()
}

// ruleFilter says which rules of a chain the readers keep, from a rule's
// jump target and comment: nil keeps them all. Shared kube-proxy chains keep
// what can be about the Service (its comment, a jump to one of its chains,
// the KUBE-NODEPORTS tail); the nat table's built-in POSTROUTING, which other
// programs share, only its jumps to KUBE-POSTROUTING.
func (f *saveFilter) ruleFilter(k chainKey) func(target string, comment []byte) bool {
	switch {
	case k.table == "nat" && k.chain == chainPostrouting:
		return func(target string, _ []byte) bool { return target == chainKubePostrouting }
	case sharedChains[k.chain] && k.chain != chainMarkMasq:
		return func(target string, comment []byte) bool {
			return target == chainNodePorts || f.wanted[target] || f.namesSpn(comment)
		}
	}
	return nil
}

// lineMayPass is ruleFilter's cheap prefilter on a rule's text.
func (f *saveFilter) lineMayPass(k chainKey, line []byte) bool {
	if k.chain == chainPostrouting {
		return bytes.Contains(line, []byte(chainKubePostrouting))
	}
	return f.mayConcern(line)
}

// mayConcern is the cheap test for a shared-chain line: it names one of
// the Service ports, jumps to one of its chains, or is the NodePorts tail.
func (f *saveFilter) mayConcern(line []byte) bool {
	for _, s := range f.spnB {
		if bytes.Contains(line, s) {
			return true
		}
	}
	return bytes.Contains(line, jumpNodePorts) || f.jumpsToWanted(line)
}

// namesSpn reports whether b (a rule's comment) names one of the Service
// ports.
func (f *saveFilter) namesSpn(b []byte) bool {
	for _, s := range f.spnB {
		if bytes.Contains(b, s) {
			return true
		}
	}
	return false
}

func (f *saveFilter) jumpsToWanted(line []byte) bool {
	i := bytes.LastIndex(line, []byte(" -j "))
	if i < 0 {
		i = bytes.LastIndex(line, []byte(" -g "))
	}
	if i < 0 {
		return false
	}
	t := line[i+4:]
	if j := bytes.IndexByte(t, ' '); j >= 0 {
		t = t[:j]
	}
	return f.wanted[string(t)]
}

func (f *saveFilter) keep(k chainKey, line []byte) {
	r, err := ParseRule(string(line))
	if err != nil || r.Chain != k.chain {
		return
	}
	f.kept[k] = append(f.kept[k], r)
}

// keepIf parses the line and keeps it only when it really is about one of
// the Service's ports (the byte search above is only a prefilter).
func (f *saveFilter) keepIf(k chainKey, line []byte, shared bool) {
	r, err := ParseRule(string(line))
	if err != nil || r.Chain != k.chain {
		return
	}
	about := false
	for _, s := range f.spns {
		if commentIsAbout(r.Comment, s) {
			about = true
			break
		}
	}
	if shared && (k.chain == chainMarkMasq || r.Target() == chainNodePorts || f.wanted[r.Target()]) {
		about = true
	}
	if about {
		f.kept[k] = append(f.kept[k], r)
	}
}

// merge adds what another filter (another table's save) kept.
func (f *saveFilter) merge(g *saveFilter) {
	f.declared = append(f.declared, g.declared[1:]...)
	for k, v := range g.kept {
		f.kept[k] = append(f.kept[k], v...)
	}
	f.orphans = append(f.orphans, g.orphans...) // chunks: nothing is copied
}

func (f *saveFilter) isDeclared(k chainKey) bool {
	return bytes.Contains(f.declared, []byte("\n"+k.table+" "+k.chain+"\n"))
}

// orphanRules returns the kept-aside rules of one chain. The first call
// indexes the arena (one pass); the assembler asks only when a selection
// chain jumps to an endpoint chain the query did not predict.
func (f *saveFilter) orphanRules(k chainKey) []collectorapi.IPTablesRule {
	if f.orphanIndex == nil {
		f.orphanIndex = map[chainKey][][3]int{}
		for ci, chunk := range f.orphans {
			for off := 0; off < len(chunk); {
				end := bytes.IndexByte(chunk[off:], '\n')
				if end < 0 {
					break
				}
				line := chunk[off : off+end]
				// "<table> -A <chain> ..."
				if sp := bytes.IndexByte(line, ' '); sp > 0 && bytes.HasPrefix(line[sp+1:], ruleStart) {
					rest := line[sp+1+len(ruleStart):]
					ce := bytes.IndexByte(rest, ' ')
					if ce < 0 {
						ce = len(rest)
					}
					key := chainKey{string(line[:sp]), string(rest[:ce])}
					f.orphanIndex[key] = append(f.orphanIndex[key], [3]int{ci, off + sp + 1, off + end})
				}
				off += end + 1
			}
		}
	}
	var rules []collectorapi.IPTablesRule
	for _, sp := range f.orphanIndex[k] {
		if r, err := ParseRule(string(f.orphans[sp[0]][sp[1]:sp[2]])); err == nil && r.Chain == k.chain {
			rules = append(rules, r)
		}
	}
	return rules
}

// store turns what was kept into a store the assembler reads.
func (f *saveFilter) store() *store {
	st := &store{listings: map[chainKey]*chainListing{}, parallel: 1}
	for k, rules := range f.kept {
		st.listings[k] = &chainListing{exists: true, rules: rules}
	}
	st.lazy = func(k chainKey) *chainListing {
		if rules := f.orphanRules(k); len(rules) > 0 {
			return &chainListing{exists: true, rules: rules}
		}
		if f.isDeclared(k) {
			return &chainListing{exists: true}
		}
		return nil
	}
	return st
}
