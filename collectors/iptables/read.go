package iptables

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"golang.org/x/sync/errgroup"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
	"github.com/svctrace/kubectl-svctrace/collectors/kubeproxy"
)

// Shared kube-proxy chains whose rules are filtered down to this Service.
const (
	chainServices         = "KUBE-SERVICES"
	chainNodePorts        = "KUBE-NODEPORTS"
	chainExternalServices = "KUBE-EXTERNAL-SERVICES"
	chainProxyFirewall    = "KUBE-PROXY-FIREWALL"
	chainMarkMasq         = "KUBE-MARK-MASQ"
	chainCanary           = "KUBE-PROXY-CANARY"
	chainKubePostrouting  = "KUBE-POSTROUTING"
	chainPostrouting      = "POSTROUTING"
)

// Read reads the kube-proxy iptables state of q.Service on the node (or in
// q.NetNS). Errors of one backend are reported in that backend's entry; Read
// itself fails only on a malformed query.
func Read(ctx context.Context, q Query) (*collectorapi.IPTablesObservation, error) {
	if q.Service.Namespace == "" || q.Service.Name == "" {
		return nil, errors.New("iptables: query names no Service")
	}
	r := q.Runner
	if r == nil {
		r = ExecRunner{NetNS: q.NetNS}
	}
	obs := &collectorapi.IPTablesObservation{}
	backends := q.Backends
	if len(backends) == 0 {
		backends = []string{collectorapi.IPTablesBackendNFTables, collectorapi.IPTablesBackendLegacy}
	}
	// Backends and families are independent: read them concurrently, so
	// probing the backend that holds nothing costs no wall time.
	type job struct {
		fam, backend string
	}
	var jobs []job
	for _, fam := range families(q) {
		for _, b := range backends {
			switch b {
			case collectorapi.IPTablesBackendNFTables, collectorapi.IPTablesBackendLegacy:
				jobs = append(jobs, job{fam, b})
			default:
				obs.Errors = append(obs.Errors, fmt.Sprintf("unknown backend %q", b))
			}
		}
	}
	results := make([]collectorapi.IPTablesBackendObservation, len(jobs))
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if q.Runner == nil && q.Reader != ReaderText {
			if mode := linkedMode(); mode != "" {
				obs.DefaultMode = mode
				return
			}
		}
		obs.DefaultVersion, obs.DefaultMode = defaultMode(ctx, r)
	}()
	for i, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if j.backend == collectorapi.IPTablesBackendNFTables {
				results[i] = readNFT(ctx, r, q, j.fam)
			} else {
				results[i] = readLegacy(ctx, r, q, j.fam)
			}
		}()
	}
	wg.Wait()
	obs.Backends = results
	return obs, nil
}

// linkedMode is the mode of the `iptables` command named by the binary it
// links to (Debian's alternatives: iptables-nft or iptables-legacy, each a
// link to xtables-nft-multi or xtables-legacy-multi), "" when the name does
// not say (a wrapper script that picks the mode when first run). The
// kernel readers run no command, so they do not start one only for this.
func linkedMode() string {
	p, err := exec.LookPath("iptables")
	if err != nil {
		return ""
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return ""
	}
	switch base := filepath.Base(real); {
	case strings.Contains(base, "nft"):
		return collectorapi.IPTablesBackendNFTables
	case strings.Contains(base, "legacy"):
		return collectorapi.IPTablesBackendLegacy
	}
	return ""
}

// defaultMode runs `iptables -V`: "iptables v1.8.9 (nf_tables)".
func defaultMode(ctx context.Context, r Runner) (version, mode string) {
	var out strings.Builder
	err := r.Stream(ctx, Command{Name: "iptables", Args: []string{"-V"}}, func(rd io.Reader) error {
		_, err := io.Copy(&out, io.LimitReader(rd, 4096))
		return err
	})
	if err != nil {
		return "", ""
	}
	version = strings.TrimSpace(out.String())
	mode = collectorapi.IPTablesBackendLegacy
	if i := strings.Index(version, "("); i >= 0 {
		mode = strings.Trim(version[i:], "()")
	}
	return version, mode
}

func families(q Query) []string {
	if len(q.Families) > 0 {
		return q.Families
	}
	return q.Service.IPFamilies()
}

// familyOf is collectorapi.AddrFamily ("IPv4", "IPv6").
var familyOf = collectorapi.AddrFamily

// portPlan is what the reader looks for for one Service port.
type portPlan struct {
	spn, proto string
	port       collectorapi.ServicePort
	chains     kubeproxy.IPTablesChains
	// seps maps the KUBE-SEP names predicted from the query's endpoints to
	// their endpoint strings.
	seps map[string]string
}

func plan(q Query, family string) []portPlan {
	var out []portPlan
	for _, p := range q.Service.Ports {
		spn := kubeproxy.ServicePortName(q.Service.Namespace, q.Service.Name, p.Name)
		pp := portPlan{spn: spn, proto: strings.ToLower(p.Protocol), port: p,
			chains: kubeproxy.IPTablesServiceChains(spn, p.Protocol), seps: map[string]string{}}
		if pp.proto == "" {
			pp.proto = "tcp"
		}
		for _, ep := range q.Endpoints {
			port, ok := ep.Ports[p.Name]
			if !ok || familyOf(kubeproxy.NormalizeIP(ep.IP)) != family {
				continue
			}
			es := kubeproxy.EndpointString(ep.IP, port)
			pp.seps[kubeproxy.IPTablesEndpointChain(spn, pp.proto, es)] = es
		}
		out = append(out, pp)
	}
	return out
}

// commentIsAbout reports whether a kube-proxy comment names spn: "<spn>",
// "<spn> …", "… for <spn> external destinations", "other traffic to <spn> …".
func commentIsAbout(comment, spn string) bool {
	if comment == spn || strings.HasPrefix(comment, spn+" ") {
		return true
	}
	return strings.Contains(comment, " "+spn+" ")
}

// chainKey addresses one chain of one table.
type chainKey struct{ table, chain string }

// chainListing is one chain's rules; exists is false for a missing chain.
type chainListing struct {
	rules  []collectorapi.IPTablesRule
	exists bool
	err    error
	// counted is true when the listing came from the kernel rule by rule
	// (netlink): then count is the number of rules in the chain and jumps
	// the number of its rules jumping (or going) to each chain, both taken
	// before any rule was filtered out.
	counted bool
	count   int
	jumps   map[string]int
}

// store holds chain listings; nf_tables fills it on demand (per chain),
// legacy fills it up front from the save stream.
type store struct {
	mu       sync.Mutex
	listings map[chainKey]*chainListing
	// fetch lists one chain (nil for legacy: everything is already there).
	fetch func(ctx context.Context, k chainKey) *chainListing
	// lazy supplies listings kept unparsed (legacy orphan KUBE-SEP chains).
	lazy     func(k chainKey) *chainListing
	parallel int
}

func (s *store) get(k chainKey) *chainListing {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l, ok := s.listings[k]; ok && (len(l.rules) > 0 || s.lazy == nil) {
		return l
	}
	if s.lazy != nil {
		if l := s.lazy(k); l != nil {
			s.listings[k] = l
			return l
		}
	}
	if l, ok := s.listings[k]; ok {
		return l
	}
	return &chainListing{}
}

// ensure lists every key not yet listed, concurrently.
func (s *store) ensure(ctx context.Context, keys ...chainKey) {
	if s.fetch == nil {
		return
	}
	var todo []chainKey
	seen := map[chainKey]bool{}
	s.mu.Lock()
	for _, k := range keys {
		if _, ok := s.listings[k]; !ok && !seen[k] {
			seen[k] = true
			todo = append(todo, k)
		}
	}
	s.mu.Unlock()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(s.parallel)
	for _, k := range todo {
		g.Go(func() error {
			l := s.fetch(gctx, k)
			s.mu.Lock()
			s.listings[k] = l
			s.mu.Unlock()
			return nil
		})
	}
	_ = g.Wait()
}

// forgetFailed drops the listings that failed, so that the next ensure
// lists those chains again.
func (s *store) forgetFailed() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, l := range s.listings {
		if l.err != nil {
			delete(s.listings, k)
		}
	}
}

func (s *store) firstErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	keys := make([]chainKey, 0, len(s.listings))
	for k := range s.listings {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].table+keys[i].chain < keys[j].table+keys[j].chain })
	for _, k := range keys {
		if err := s.listings[k].err; err != nil {
			return err
		}
	}
	return nil
}

func iptablesCommand(family, suffix string) string {
	if family == "IPv6" {
		return "ip6tables" + suffix
	}
	return "iptables" + suffix
}

// dumpAttempts bounds the netlink listings of one chain that the ruleset
// changing under them interrupts, before the chain is listed with iptables.
const dumpAttempts = 3

// errDumpInterrupted is a dump during which the ruleset changed
// (NLM_F_DUMP_INTR): what it returned mixes two generations.
var errDumpInterrupted = errors.New("netlink: the ruleset changed during the dump")

// readNFT reads through iptables-nft, one chain per command.
func readNFT(ctx context.Context, r Runner, q Query, family string) collectorapi.IPTablesBackendObservation {
	bo := collectorapi.IPTablesBackendObservation{Backend: collectorapi.IPTablesBackendNFTables, Family: family, Method: "per-chain"}
	cmdName := iptablesCommand(family, "-nft")
	var cmdMu sync.Mutex
	par := q.Parallel
	if par <= 0 {
		par = 4
	}
	st := &store{listings: map[chainKey]*chainListing{}, parallel: par}
	// Shared chains hold every Service's rules: only lines that can be
	// about this Service are parsed.
	pre := newSaveFilter(plan(q, family))
	bo.Reader = collectorapi.IPTablesReaderText
	var nl *nfnlConn
	if q.Runner == nil && q.Reader != ReaderText {
		if c, err := openNFNL(q.NetNS); err == nil {
			nl = c
			defer nl.close()
			bo.Reader = collectorapi.IPTablesReaderNetlink
		}
	}
	st.fetch = func(ctx context.Context, k chainKey) *chainListing {
		keep := pre.ruleFilter(k)
		if nl != nil {
			nlKeep := keep
			if isFilterHookKey(k) {
				// Only their jump targets are wanted, which the dump
				// counts for every rule: none is rendered, so rules the
				// decoder does not render cost no iptables run.
				nlKeep = keepNone
			}
			l, err := listChainNetlink(nl, family, k, nlKeep)
			// kube-proxy rewriting its rules during the dump marks it
			// interrupted: list the chain again, as a netlink dump is
			// meant to be restarted, and with iptables if it keeps changing.
			for try := 1; errors.Is(err, errDumpInterrupted) && try < dumpAttempts && ctx.Err() == nil; try++ {
				l, err = listChainNetlink(nl, family, k, nlKeep)
			}
			if err == nil {
				return l
			}
			if !errors.Is(err, errUnsupported) && !errors.Is(err, errDumpInterrupted) {
				return &chainListing{err: err}
			}
			cmdMu.Lock()
			bo.Reader = collectorapi.IPTablesReaderNetlinkText
			cmdMu.Unlock()
		}
		c := Command{Name: cmdName, Args: []string{"-t", k.table, "-S", k.chain}}
		cmdMu.Lock()
		bo.Commands = append(bo.Commands, c.String())
		cmdMu.Unlock()
		l := &chainListing{exists: true}
		err := r.Stream(ctx, c, func(rd io.Reader) error {
			sc := bufio.NewScanner(rd)
			sc.Buffer(make([]byte, 64<<10), 1<<20)
			for sc.Scan() {
				line := sc.Text()
				if !strings.HasPrefix(line, "-A ") {
					continue
				}
				if keep != nil && !pre.lineMayPass(k, sc.Bytes()) {
					continue
				}
				rule, err := ParseRule(line)
				if err != nil {
					continue
				}
				if keep != nil && !keep(rule.Target(), []byte(rule.Comment)) {
					continue
				}
				l.rules = append(l.rules, rule)
			}
			return sc.Err()
		})
		if err != nil {
			if chainAbsent(err) {
				return &chainListing{}
			}
			l.err = err
			l.exists = false
		}
		return l
	}
	// A cheap probe first: KUBE-MARK-MASQ and the canary are tiny, while
	// KUBE-SERVICES holds a rule per Service (0.35 s for 10k through
	// iptables-nft here). Over netlink the Service's own chains and their
	// reference counts then usually establish its entry rules
	// (readByReferences); otherwise KUBE-SERVICES is listed with them.
	svcKey := chainKey{"nat", chainServices}
	// The ruleset generation before anything is listed: the reference
	// counts are conclusive only if it is the same after the last read.
	var gen0 uint32
	byReferences := nl != nil && q.EntryProof != collectorapi.IPTablesEntryProofRules
	if byReferences {
		g, err := nl.generation()
		gen0, byReferences = g, err == nil
	}
	st.ensure(ctx, append(policyEnforcerKeys(), chainKey{"nat", chainMarkMasq}, chainKey{"nat", chainCanary})...)
	if err := st.firstErr(); err != nil {
		bo.Error = err.Error()
		return bo
	}
	if st.get(chainKey{"nat", chainCanary}).exists {
		bo.Canary = append(bo.Canary, "nat")
	}
	readPolicyEnforcer(ctx, st, &bo)
	if !st.get(chainKey{"nat", chainMarkMasq}).exists && len(bo.Canary) == 0 {
		// kube-proxy's iptables mode creates both with KUBE-SERVICES; with
		// neither, this backend holds no kube-proxy rules worth listing.
		return bo
	}
	bo.EntryProof = collectorapi.IPTablesEntryProofRules
	if byReferences {
		if why := readByReferences(ctx, st, nl, q, family, gen0, &bo); why == "" {
			bo.EntryProof = collectorapi.IPTablesEntryProofReferences
		} else {
			bo.EntryProofFallback = why
			bo.Generation = 0
		}
	}
	if bo.EntryProof == collectorapi.IPTablesEntryProofRules {
		// A chain whose listing failed while the references were counted
		// is listed again, not taken for an empty one.
		st.forgetFailed()
		assemble(ctx, st, q, family, &bo, true)
		bo.KubeProxyChains = st.get(svcKey).exists
	}
	if err := st.firstErr(); err != nil {
		bo.Error = err.Error()
	}
	if !bo.KubeProxyChains {
		bo.Ports = nil
		bo.MarkMasq, bo.MasqMark, bo.Postrouting = nil, "", nil
		bo.EntryProof, bo.EntryProofFallback = "", ""
	}
	sort.Strings(bo.Commands)
	return bo
}

// listChainNetlink lists one chain over netlink. keep, when set, sees each
// rule's jump target and comment before it is rendered and says whether to
// keep it (shared chains keep only what can be about the Service). Every
// rule is counted, with its jump target, whether kept or not. A rule the
// decoder does not render fails the whole chain with errUnsupported, for the
// caller to list it with iptables instead.
func listChainNetlink(nl *nfnlConn, family string, k chainKey, keep func(target string, comment []byte) bool) (*chainListing, error) {
	l := &chainListing{counted: true, jumps: map[string]int{}}
	exists, err := nl.dumpChain(family, k.table, k.chain, func(r nfRule) error {
		target, comment := ruleSummary(r)
		l.count++
		if target != "" {
			l.jumps[target]++
		}
		if keep != nil && !keep(target, comment) {
			return nil
		}
		line, err := renderRule(r, family == "IPv6")
		if err != nil {
			return err
		}
		if rule, err := ParseRule(line); err == nil {
			l.rules = append(l.rules, rule)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	l.exists = exists
	return l, nil
}

// readLegacy streams iptables-legacy-save per existing table.
func readLegacy(ctx context.Context, r Runner, q Query, family string) collectorapi.IPTablesBackendObservation {
	bo := collectorapi.IPTablesBackendObservation{Backend: collectorapi.IPTablesBackendLegacy, Family: family, Method: "save-stream"}
	namesFile := "/proc/self/net/ip_tables_names"
	if family == "IPv6" {
		namesFile = "/proc/self/net/ip6_tables_names"
	}
	names, err := r.ReadFile(ctx, namesFile)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		bo.Error = fmt.Sprintf("reading %s: %v", namesFile, err)
		return bo
	}
	have := map[string]bool{}
	for _, t := range strings.Fields(string(names)) {
		have[t] = true
		bo.LegacyTables = append(bo.LegacyTables, t)
	}
	sort.Strings(bo.LegacyTables)
	// A legacy command naming a table creates it: save only tables that exist.
	var tables []string
	for _, t := range []string{"nat", "filter"} {
		if have[t] {
			tables = append(tables, t)
		}
	}
	if len(tables) == 0 {
		return bo
	}
	plans := plan(q, family)
	if q.Runner == nil && q.Reader != ReaderText {
		kb := bo
		kb.Reader, kb.Method = collectorapi.IPTablesReaderKernelBlob, "blob"
		st, release, err := legacyBlobStore(q.NetNS, family, tables, plans)
		if err == nil {
			readLegacyStore(ctx, st, q, family, &kb)
			err = st.firstErr()
			release()
		}
		if err == nil {
			return kb
		}
		// A rule the decoder does not render, or a socket the kernel
		// refused: the save below reads the same tables.
	}
	bo.Reader = collectorapi.IPTablesReaderText
	lock := q.LockFile
	if lock == "" {
		lock = filepath.Join(os.TempDir(), "svctrace-xtables.lock")
	}
	// One save per table, streamed concurrently, each through its own filter.
	filters := make([]*saveFilter, len(tables))
	errs := make([]error, len(tables))
	var wg sync.WaitGroup
	for i, t := range tables {
		c := Command{Name: iptablesCommand(family, "-legacy-save"), Args: []string{"-t", t},
			Env: []string{"XTABLES_LOCKFILE=" + lock}}
		bo.Commands = append(bo.Commands, c.String())
		filters[i] = newSaveFilter(plans)
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = r.Stream(ctx, c, filters[i].consume)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			bo.Error = err.Error()
			return bo
		}
	}
	f := filters[0]
	for _, g := range filters[1:] {
		f.merge(g)
	}
	readLegacyStore(ctx, f.store(), q, family, &bo)
	return bo
}

// readLegacyStore fills bo from the legacy tables' chains.
func readLegacyStore(ctx context.Context, st *store, q Query, family string, bo *collectorapi.IPTablesBackendObservation) {
	st.ensure(ctx, chainKey{"nat", chainCanary}, chainKey{"filter", chainCanary}, chainKey{"nat", chainServices})
	if st.get(chainKey{"nat", chainCanary}).exists {
		bo.Canary = append(bo.Canary, "nat")
	}
	if st.get(chainKey{"filter", chainCanary}).exists {
		bo.Canary = append(bo.Canary, "filter")
	}
	readPolicyEnforcer(ctx, st, bo)
	if !st.get(chainKey{"nat", chainServices}).exists {
		return
	}
	assemble(ctx, st, q, family, bo, true)
}

// legacyBlobStore reads the given legacy tables from the kernel (one
// IPT_SO_GET_ENTRIES each) and renders chains from them on demand. Shared
// chains keep only the rules that can be about the Service, decided before a
// rule is rendered. release frees the tables: the store must not be asked
// for a chain it has not listed after that.
func legacyBlobStore(netns, family string, tables []string, plans []portPlan) (st *store, release func(), err error) {
	blobs := map[string]*blobTable{}
	var releases []func()
	release = func() {
		for _, r := range releases {
			r()
		}
		clear(blobs)
	}
	for _, t := range tables {
		b, rel, err := readBlob(netns, family, t)
		if err != nil {
			release()
			return nil, nil, err
		}
		blobs[t], releases = b, append(releases, rel)
	}
	pre := newSaveFilter(plans)
	st = &store{listings: map[chainKey]*chainListing{}, parallel: 1}
	st.fetch = func(_ context.Context, k chainKey) *chainListing {
		b := blobs[k.table]
		if b == nil || !b.has(k.chain) {
			return &chainListing{}
		}
		keep := pre.ruleFilter(k)
		var jumps map[string]int
		if isFilterHookKey(k) {
			// Only the jump targets, as over netlink.
			jumps = map[string]int{}
			keep = func(target string, _ []byte) bool {
				if target != "" {
					jumps[target]++
				}
				return false
			}
		}
		lines, err := b.rules(k.chain, keep)
		if err != nil {
			return &chainListing{err: err}
		}
		l := &chainListing{exists: true, jumps: jumps}
		for _, line := range lines {
			if r, err := ParseRule(line); err == nil {
				l.rules = append(l.rules, r)
			}
		}
		return l
	}
	return st, release, nil
}

// assemble builds the per-port observation from a store. With entries
// false it leaves nat KUBE-SERVICES and KUBE-NODEPORTS unread (the
// reference counts establish the entry rules instead), and Entry,
// NodePortsTail and NodePorts empty, unless KUBE-NODEPORTS is already in the
// store.
func assemble(ctx context.Context, st *store, q Query, family string, bo *collectorapi.IPTablesBackendObservation, entries bool) {
	bo.KubeProxyChains = true
	if entries {
		bo.EntryProof = collectorapi.IPTablesEntryProofRules
	}
	bo.Ports, bo.NodePortsTail, bo.MarkMasq, bo.MasqMark = nil, nil, nil, ""
	plans := plan(q, family)

	// Phase 1: the shared chains and every chain named by a hash.
	keys := []chainKey{
		{"nat", chainMarkMasq}, {"nat", chainKubePostrouting}, {"nat", chainPostrouting},
		{"filter", chainServices}, {"filter", chainExternalServices},
		{"filter", chainNodePorts}, {"filter", chainProxyFirewall},
	}
	if entries {
		keys = append(keys, chainKey{"nat", chainServices}, chainKey{"nat", chainNodePorts})
	}
	for _, p := range plans {
		keys = append(keys, chainKey{"nat", p.chains.Service}, chainKey{"nat", p.chains.Local},
			chainKey{"nat", p.chains.External}, chainKey{"nat", p.chains.Firewall})
		for sep := range p.seps {
			keys = append(keys, chainKey{"nat", sep})
		}
	}
	st.ensure(ctx, keys...)

	mm := st.get(chainKey{"nat", chainMarkMasq})
	bo.MarkMasq = mm.rules
	for _, r := range mm.rules {
		if r.Jump == "MARK" && r.Mark != "" {
			bo.MasqMark = r.Mark
		}
	}
	kp := st.get(chainKey{"nat", chainKubePostrouting})
	bo.Postrouting = &collectorapi.IPTablesPostrouting{Exists: kp.exists, Rules: kp.rules}
	for _, r := range st.get(chainKey{"nat", chainPostrouting}).rules {
		if r.Target() == chainKubePostrouting {
			bo.Postrouting.Jumps = append(bo.Postrouting.Jumps, r)
		}
	}
	var services []collectorapi.IPTablesRule
	if entries {
		services = st.get(chainKey{"nat", chainServices}).rules
	}
	for _, r := range services {
		if r.Target() == chainNodePorts {
			bo.NodePortsTail = append(bo.NodePortsTail, r)
		}
	}

	for _, p := range plans {
		po := collectorapi.IPTablesPortObservation{ServicePortName: p.spn, Protocol: strings.ToUpper(p.proto), Port: p.port.Port, NodePort: p.port.NodePort}
		hashChains := map[string]bool{p.chains.Service: true, p.chains.Local: true, p.chains.External: true, p.chains.Firewall: true}

		// Entry rules: by jump to a hash chain, or by comment.
		var otherNames []string
		for _, r := range services {
			if r.Target() == chainNodePorts {
				continue
			}
			byHash := hashChains[r.Target()]
			byComment := commentIsAbout(r.Comment, p.spn)
			if !byHash && !byComment {
				continue
			}
			po.Entry = append(po.Entry, collectorapi.IPTablesEntryRule{Kind: entryKind(r, p.spn), IPTablesRule: r})
			if !byHash && strings.HasPrefix(r.Target(), "KUBE-") {
				otherNames = append(otherNames, r.Target())
			}
		}
		nodePorts, others := nodePortRules(st, p.spn, hashChains)
		po.NodePorts = nodePorts
		otherNames = append(otherNames, others...)
		for _, fc := range []string{chainServices, chainExternalServices, chainNodePorts, chainProxyFirewall} {
			for _, r := range st.get(chainKey{"filter", fc}).rules {
				if commentIsAbout(r.Comment, p.spn) {
					po.Filter = append(po.Filter, r)
				}
			}
		}

		otherNames = uniq(otherNames)
		var otherKeys []chainKey
		for _, n := range otherNames {
			otherKeys = append(otherKeys, chainKey{"nat", n})
		}
		st.ensure(ctx, otherKeys...)

		po.Service = buildChain(st, p.chains.Service, "hash")
		po.Local = buildChain(st, p.chains.Local, "hash")
		po.External = buildChain(st, p.chains.External, "hash")
		po.Firewall = buildChain(st, p.chains.Firewall, "hash")
		for _, n := range otherNames {
			po.Other = append(po.Other, buildChain(st, n, "comment"))
		}

		// Endpoint chains: jumped to from SVC/SVL (or comment-found chains),
		// plus those predicted from the query's endpoints.
		refs := map[string][]string{}
		comments := map[string]string{}
		var sepOrder []string
		selectors := []*collectorapi.IPTablesChain{po.Service, po.Local}
		for _, c := range po.Other {
			if strings.HasPrefix(c.Name, "KUBE-SVC-") || strings.HasPrefix(c.Name, "KUBE-SVL-") {
				selectors = append(selectors, c)
			}
		}
		for _, c := range selectors {
			for _, r := range c.Rules {
				t := r.Target()
				if !strings.HasPrefix(t, "KUBE-SEP-") {
					continue
				}
				if _, ok := refs[t]; !ok {
					sepOrder = append(sepOrder, t)
				}
				if !contains(refs[t], c.Name) {
					refs[t] = append(refs[t], c.Name)
				}
				if ep := endpointFromComment(r.Comment, p.spn); ep != "" {
					comments[t] = ep
				}
			}
		}
		var predicted []string
		for sep := range p.seps {
			if _, ok := refs[sep]; !ok {
				predicted = append(predicted, sep)
			}
		}
		sort.Strings(predicted)
		var sepKeys []chainKey
		for _, n := range sepOrder {
			sepKeys = append(sepKeys, chainKey{"nat", n})
		}
		st.ensure(ctx, sepKeys...)
		for _, n := range append(sepOrder, predicted...) {
			foundBy := "jump"
			if _, ok := p.seps[n]; ok {
				foundBy = "hash"
			}
			ec := collectorapi.IPTablesEndpointChain{IPTablesChain: *buildChain(st, n, foundBy), ReferencedBy: refs[n]}
			switch {
			case p.seps[n] != "":
				ec.Endpoint, ec.EndpointFrom = p.seps[n], "hash"
			case comments[n] != "":
				ec.Endpoint, ec.EndpointFrom = comments[n], "comment"
			}
			for _, r := range ec.Rules {
				switch {
				case r.Jump == "DNAT":
					ec.DNAT = r.ToDestination
					if r.Recent != nil && r.Recent.Set {
						ec.AffinitySet = r.Recent.Name
					}
				case r.Jump == chainMarkMasq && r.Source != "":
					ec.Hairpin = r.Source
				}
			}
			if ec.Endpoint == "" && ec.DNAT != "" {
				ec.Endpoint, ec.EndpointFrom = ec.DNAT, "dnat"
			}
			po.Endpoints = append(po.Endpoints, ec)
		}
		bo.Ports = append(bo.Ports, po)
	}
}

// nodePortRules are the nat KUBE-NODEPORTS rules about one port (a jump to
// one of its hash chains, or its comment), and the KUBE- chains those found
// by comment jump to instead.
func nodePortRules(st *store, spn string, hashChains map[string]bool) (rules []collectorapi.IPTablesRule, others []string) {
	for _, r := range st.get(chainKey{"nat", chainNodePorts}).rules {
		if hashChains[r.Target()] || commentIsAbout(r.Comment, spn) {
			rules = append(rules, r)
			if !hashChains[r.Target()] && strings.HasPrefix(r.Target(), "KUBE-") {
				others = append(others, r.Target())
			}
		}
	}
	return rules, others
}

func entryKind(r collectorapi.IPTablesRule, spn string) string {
	switch {
	case r.Comment == spn+" cluster IP":
		return "clusterIP"
	case r.Comment == spn+" external IP":
		return "externalIP"
	case r.Comment == spn+" loadbalancer IP":
		return "loadBalancerIP"
	case strings.HasPrefix(r.Target(), "KUBE-SVC-") || strings.HasPrefix(r.Target(), "KUBE-SVL-"):
		return "clusterIP"
	case strings.HasPrefix(r.Target(), "KUBE-FW-"):
		return "loadBalancerIP"
	}
	return "other"
}

// endpointFromComment takes "<ep>" from "<spn> -> <ep>".
func endpointFromComment(comment, spn string) string {
	if rest, ok := strings.CutPrefix(comment, spn+" -> "); ok {
		return rest
	}
	return ""
}

// buildChain turns a listing into a Chain, decoding the endpoint selection
// of SVC/SVL chains.
func buildChain(st *store, name, foundBy string) *collectorapi.IPTablesChain {
	l := st.get(chainKey{"nat", name})
	c := &collectorapi.IPTablesChain{Name: name, Exists: l.exists, Rules: l.rules}
	if l.exists {
		c.FoundBy = foundBy
	}
	var probs []*float64
	for _, r := range l.rules {
		t := r.Target()
		switch {
		case t == chainMarkMasq && c.Masquerade == nil && !strings.HasPrefix(name, "KUBE-SEP-"):
			rr := r
			c.Masquerade = &rr
		case strings.HasPrefix(t, "KUBE-SEP-") && r.Recent != nil && r.Recent.Check:
			c.Affinity = append(c.Affinity, collectorapi.IPTablesAffinityRule{Target: t, Endpoint: endpointAfterArrow(r.Comment),
				Name: r.Recent.Name, Seconds: r.Recent.Seconds, Reap: r.Recent.Reap, Raw: r.Raw})
		case strings.HasPrefix(t, "KUBE-SEP-"):
			c.Selection = append(c.Selection, collectorapi.IPTablesEndpointJump{Target: t, Endpoint: endpointAfterArrow(r.Comment),
				Probability: r.Probability, Raw: r.Raw})
			probs = append(probs, r.ProbabilityValue)
		}
	}
	if len(probs) > 0 {
		shares := kubeproxy.EffectiveShares(probs)
		left := 1.0
		for i := range c.Selection {
			c.Selection[i].Share = shares[i]
			left -= shares[i]
		}
		if left > 1e-9 {
			c.UnmatchedShare = left
		}
	}
	return c
}

func endpointAfterArrow(comment string) string {
	if i := strings.Index(comment, " -> "); i >= 0 {
		return comment[i+4:]
	}
	return ""
}

func uniq(in []string) []string {
	var out []string
	for _, s := range in {
		if !contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
