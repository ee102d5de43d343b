package iptables

import (
	"bufio"
	"bytes"
	"io"
)

// saveFilter reads iptables-save output as a stream and keeps only the lines
// that can concern the queried Service: never the whole dump. Lines are kept
// when their chain is one of the Service's hash-named chains, when a shared
// chain's rule names the Service (comment or jump), or when their comment
// names the Service. KUBE-SEP rules without a comment (kube-proxy drops them
// above 1000 endpoints) are kept aside as raw text, because iptables-save
// prints KUBE-SEP-* chains before the KUBE-SVC-* chain that says which of them
// this Service uses.
type saveFilter struct {
	spns     []string
	wanted   map[string]bool
	table    string
	declared map[chainKey]bool
	kept     map[chainKey][]Rule
	orphans  map[chainKey][]string
}

var sharedChains = map[string]bool{
	chainServices: true, chainNodePorts: true, chainExternalServices: true,
	chainProxyFirewall: true, chainMarkMasq: true,
}

func newSaveFilter(plans []portPlan) *saveFilter {
	f := &saveFilter{wanted: map[string]bool{}, declared: map[chainKey]bool{},
		kept: map[chainKey][]Rule{}, orphans: map[chainKey][]string{}}
	for _, p := range plans {
		f.spns = append(f.spns, p.spn)
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
	sepPrefix     = []byte("KUBE-SEP-")
)

// consume reads one iptables-save stream (any number of tables).
func (f *saveFilter) consume(rd io.Reader) error {
	sc := bufio.NewScanner(rd)
	sc.Buffer(make([]byte, 256<<10), 4<<20)
	spnBytes := make([][]byte, len(f.spns))
	for i, s := range f.spns {
		spnBytes[i] = []byte(s)
	}
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
				f.declared[chainKey{f.table, string(line[1:i])}] = true
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
		// Map lookups with string(bytes) keys do not allocate; the chain
		// name is copied only for lines that are kept.
		if f.wanted[string(chainB)] {
			f.keep(chainKey{f.table, string(chainB)}, line)
			continue
		}
		namesSpn := false
		for _, s := range spnBytes {
			if bytes.Contains(line, s) {
				namesSpn = true
				break
			}
		}
		if sharedChains[string(chainB)] {
			if string(chainB) == chainMarkMasq || namesSpn || bytes.Contains(line, jumpNodePorts) || f.jumpsToWanted(line) {
				f.keepIf(chainKey{f.table, string(chainB)}, line, true)
			}
			continue
		}
		if namesSpn {
			f.keepIf(chainKey{f.table, string(chainB)}, line, false)
			continue
		}
		if bytes.HasPrefix(chainB, sepPrefix) && !bytes.Contains(line, commentFlag) {
			k := chainKey{f.table, string(chainB)}
			f.orphans[k] = append(f.orphans[k], string(line))
		}
	}
	return sc.Err()
}

// mayConcern is the cheap test for a shared-chain line: it names one of
// the Service ports, jumps to one of its chains, or is the NodePorts tail.
func (f *saveFilter) mayConcern(line []byte) bool {
	for _, s := range f.spns {
		if bytes.Contains(line, []byte(s)) {
			return true
		}
	}
	return bytes.Contains(line, jumpNodePorts) || f.jumpsToWanted(line)
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
	for k := range g.declared {
		f.declared[k] = true
	}
	for k, v := range g.kept {
		f.kept[k] = append(f.kept[k], v...)
	}
	for k, v := range g.orphans {
		f.orphans[k] = append(f.orphans[k], v...)
	}
}

// store turns what was kept into a store the assembler reads.
func (f *saveFilter) store() *store {
	st := &store{listings: map[chainKey]*chainListing{}, parallel: 1}
	for k := range f.declared {
		st.listings[k] = &chainListing{exists: true, rules: f.kept[k]}
	}
	orphans := f.orphans
	st.fetch = nil
	st.lazy = func(k chainKey) *chainListing {
		raw, ok := orphans[k]
		if !ok {
			return nil
		}
		l := &chainListing{exists: true}
		for _, line := range raw {
			if r, err := ParseRule(line); err == nil {
				l.rules = append(l.rules, r)
			}
		}
		return l
	}
	return st
}
