package iptables

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/svctrace/kubectl-svctrace/internal/testutil/netns"
)

// -record rewrites testdata/iptables/kubeproxy-overall.{nlrules,blob}: the
// kernel's own encoding of kube-proxy v1.37.2's overall rules as loaded by
// iptables-nft-restore (one NFT_MSG_NEWRULE payload per line, hex) and by
// iptables-legacy-restore (the nat table's IPT_SO_GET_INFO hook offsets and
// IPT_SO_GET_ENTRIES blob).
var record = flag.Bool("record", false, "record the netlink rules and legacy blob fixtures from a namespace")

const (
	nlRulesFixture = "../testdata/iptables/kubeproxy-overall.nlrules"
	blobFixture    = "../testdata/iptables/kubeproxy-overall.blob"
)

func TestRecordKernelEncodings(t *testing.T) {
	if !*record {
		t.Skip("run with -record to rewrite the fixtures")
	}
	netns.RequireTools(t, "iptables-nft-restore", "iptables-legacy-restore", "nsenter")
	nftNS := restored(t, "kubeproxy-overall.restore", "iptables-nft-restore")
	c, err := openNFNL(nftNS.Path())
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	var out strings.Builder
	d := parseDump(t, readFixture(t, "kubeproxy-overall.save"))
	for _, table := range []string{"nat", "filter"} {
		for chain := range d.rules[table] {
			if _, err := c.dumpChainRaw("IPv4", table, chain, func(b []byte) {
				fmt.Fprintf(&out, "%s %x\n", table, b)
			}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := os.WriteFile(nlRulesFixture, []byte(out.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	legNS := restored(t, "kubeproxy-overall.restore", "iptables-legacy-restore")
	b, hooks, err := readBlobRaw(legNS.Path(), "IPv4", "nat")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(blobFixture, []byte(hooks+"\n"+hex.EncodeToString(b)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// recordedNLRules are the recorded rule messages by table.
func recordedNLRules(t testing.TB) (tables []string, msgs [][]byte) {
	f, err := os.Open(nlRulesFixture)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		table, h, _ := strings.Cut(sc.Text(), " ")
		b, err := hex.DecodeString(h)
		if err != nil {
			t.Fatal(err)
		}
		tables, msgs = append(tables, table), append(msgs, b)
	}
	return tables, msgs
}

// recordedBlob is the recorded legacy nat table.
func recordedBlob(t testing.TB) (blob []byte, valid uint32, hook, under [5]uint32) {
	b, err := os.ReadFile(blobFixture)
	if err != nil {
		t.Fatal(err)
	}
	head, body, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(head)
	if len(f) != 11 {
		t.Fatalf("blob header %q", head)
	}
	num := func(s string) uint32 {
		v, err := strconv.ParseUint(s, 10, 32)
		if err != nil {
			t.Fatal(err)
		}
		return uint32(v)
	}
	valid = num(f[0])
	for h := 0; h < 5; h++ {
		hook[h], under[h] = num(f[1+h]), num(f[6+h])
	}
	blob, err = hex.DecodeString(strings.TrimSpace(body))
	if err != nil {
		t.Fatal(err)
	}
	return blob, valid, hook, under
}

// Every rule the kernel holds for kube-proxy's overall rules renders to
// exactly a line the real iptables-nft-save printed for them, except the
// conntrack matches of KUBE-FORWARD and KUBE-FIREWALL, chains the reader
// never lists (were it asked to, they would be listed with iptables).
func TestRenderRecordedNetlinkRules(t *testing.T) {
	saved := map[string]bool{}
	for _, line := range strings.Split(readFixture(t, "kubeproxy-overall.save"), "\n") {
		saved[line] = true
	}
	tables, msgs := recordedNLRules(t)
	if len(msgs) < 50 {
		t.Fatalf("%d recorded rules", len(msgs))
	}
	for i, m := range msgs {
		r, err := parseRuleMsg(m)
		if err != nil {
			t.Fatal(err)
		}
		line, err := renderRule(r, false)
		if errors.Is(err, errUnsupported) && (r.chain == "KUBE-FORWARD" || r.chain == "KUBE-FIREWALL") {
			continue
		}
		if err != nil {
			t.Errorf("%s rule %d of %s: %v", tables[i], i, r.chain, err)
			continue
		}
		if !saved[line] {
			t.Errorf("rendered %q, which iptables-nft-save did not print", line)
		}
	}
}

// The same for the legacy blob: every chain of the nat table renders to the
// lines iptables-nft-save printed, in order.
func TestRenderRecordedBlob(t *testing.T) {
	blob, valid, hook, under := recordedBlob(t)
	bt, err := parseBlob(blob, false, valid, hook, under)
	if err != nil {
		t.Fatal(err)
	}
	d := parseDump(t, readFixture(t, "kubeproxy-overall.save"))
	n := 0
	for chain, want := range d.rules["nat"] {
		got, err := bt.rules(chain, nil)
		if err != nil {
			t.Fatalf("%s: %v", chain, err)
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s:\ngot  %q\nwant %q", chain, got, want)
		}
		n += len(got)
	}
	if n < 40 {
		t.Fatalf("%d nat rules rendered", n)
	}
}

// FuzzRenderRule: any message either fails cleanly or renders a line that
// ParseRule takes back as a rule of the message's chain.
func FuzzRenderRule(f *testing.F) {
	_, msgs := recordedNLRules(f)
	for _, m := range msgs {
		f.Add(m, false)
	}
	// The testbed node's KUBE-NODEPORTS with kube-proxy's nfacct matches,
	// as the kernel dumps it, when a namespace can be made here.
	for _, m := range liveNodePortsRules(f) {
		f.Add(m, false)
	}
	f.Fuzz(func(t *testing.T, msg []byte, ipv6 bool) {
		r, err := parseRuleMsg(msg)
		if err != nil {
			return
		}
		_, _ = ruleSummary(r)
		line, err := renderRule(r, ipv6)
		if err != nil {
			return
		}
		pr, err := ParseRule(line)
		if err != nil || pr.Raw != line || pr.Chain != strings.Fields(line)[1] {
			t.Fatalf("rendered %q: %v (%+v)", line, err, pr)
		}
	})
}

// FuzzParseBlob: any blob either fails cleanly or yields chains whose rules
// render to lines ParseRule takes back; it never loops or reads past the end.
func FuzzParseBlob(f *testing.F) {
	blob, valid, hook, under := recordedBlob(f)
	f.Add(blob, valid, hook[0], under[0], hook[4], under[4])
	f.Add(blob[:len(blob)/2], valid, hook[0], under[0], hook[4], under[4])
	f.Fuzz(func(t *testing.T, b []byte, valid, h0, u0, h4, u4 uint32) {
		bt, err := parseBlob(b, false, valid, [5]uint32{h0, hook[1], hook[2], hook[3], h4}, [5]uint32{u0, under[1], under[2], under[3], u4})
		if err != nil {
			return
		}
		for _, chain := range bt.chainNames() {
			lines, err := bt.rules(chain, nil)
			if err != nil {
				continue
			}
			for _, l := range lines {
				if r, err := ParseRule(l); err != nil || r.Chain != chain {
					t.Fatalf("rendered %q for %s: %v", l, chain, err)
				}
			}
		}
	})
}

// liveNodePortsRules dumps nat KUBE-NODEPORTS of the real testbed node's
// rules (nfacct matches kept) from a namespace, nil when none can be made.
func liveNodePortsRules(f *testing.F) [][]byte {
	for _, tool := range []string{"iptables-nft-restore", "nsenter"} {
		if _, err := exec.LookPath(tool); err != nil || os.Geteuid() != 0 {
			return nil
		}
	}
	ns := restoredWithNFAcct(f, "testbed-node1.save", "iptables-nft-restore")
	nl, err := openNFNL(ns.Path())
	if err != nil {
		f.Fatal(err)
	}
	defer nl.close()
	var msgs [][]byte
	if _, err := nl.dumpChainRaw("IPv4", "nat", chainNodePorts, func(b []byte) { msgs = append(msgs, append([]byte(nil), b...)) }); err != nil {
		f.Fatal(err)
	}
	return msgs
}

// FuzzChainUse: any chain reply either fails cleanly or yields the
// NFTA_CHAIN_USE it holds.
func FuzzChainUse(f *testing.F) {
	f.Add(append(nlAttr(1, "nat"), append(nlAttr(3, "KUBE-SVC-X"), 8, 0, nftaChainUse, 0, 0, 0, 0, 5)...))
	f.Add([]byte{8, 0, nftaChainUse, 0x80, 0, 0, 1, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		use, err := parseChainUse(b)
		if err != nil {
			return
		}
		found := false
		_ = nlAttrs(b, func(typ uint16, d []byte) error {
			if typ == nftaChainUse && len(d) == 4 && binary.BigEndian.Uint32(d) == use {
				found = true
			}
			return nil
		})
		if !found {
			t.Fatalf("use %d not in %x", use, b)
		}
	})
}
