package proxy

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/coreos/go-iptables/iptables"
	"github.com/google/nftables"
	"github.com/vishvananda/netlink"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
)

func inf(sign int) float64 { return math.Inf(sign) }

// NodeFingerprints checks the current network namespace and bpffs.
func NodeFingerprints(ctx context.Context, bpffsRoot string) []collectorapi.Fingerprint {
	var out []collectorapi.Fingerprint
	out = append(out, nftFingerprints()...)
	// thread-self: the namespace of this thread, which is what netlink sees too.
	out = append(out, legacyFingerprints("/proc/thread-self")...)
	out = append(out, linkFingerprint())
	out = append(out, BPFFingerprints(bpffsRoot)...)
	return out
}

// nftFingerprints asks nf_tables through netlink (no binaries, no lock):
// kube-proxy's own nftables tables, and the KUBE-PROXY-CANARY chain that
// iptables-nft keeps in "table ip nat" etc. in iptables mode.
func nftFingerprints() []collectorapi.Fingerprint {
	var out []collectorapi.Fingerprint
	conn, err := nftables.New()
	if err != nil {
		return []collectorapi.Fingerprint{{Mode: collectorapi.ModeNFTables, Check: "nf_tables netlink", Error: err.Error()}}
	}
	tables, err := conn.ListTables()
	if err != nil {
		return []collectorapi.Fingerprint{{Mode: collectorapi.ModeNFTables, Check: "nf_tables netlink", Error: err.Error()}}
	}
	have := map[string]bool{}
	for _, t := range tables {
		have[familyName(t.Family)+" "+t.Name] = true
	}
	for _, fam := range []string{"ip", "ip6"} {
		key := fam + " kube-proxy"
		fp := collectorapi.Fingerprint{Mode: collectorapi.ModeNFTables, Check: "table " + key, Found: have[key]}
		if fp.Found {
			fp.Evidence = "nf_tables has table " + key
		}
		out = append(out, fp)
	}
	for _, fam := range []struct {
		name string
		f    nftables.TableFamily
	}{{"ip", nftables.TableFamilyIPv4}, {"ip6", nftables.TableFamilyIPv6}} {
		for _, table := range []string{"mangle", "nat", "filter"} {
			fp := collectorapi.Fingerprint{Mode: collectorapi.ModeIPTables,
				Check: fmt.Sprintf("chain %s KUBE-PROXY-CANARY (iptables-nft, %s)", table, fam.name)}
			if have[fam.name+" "+table] {
				_, err := conn.ListChain(&nftables.Table{Name: table, Family: fam.f}, "KUBE-PROXY-CANARY")
				switch {
				case err == nil:
					fp.Found = true
					fp.Evidence = fmt.Sprintf("table %s %s has chain KUBE-PROXY-CANARY", fam.name, table)
				case isNotExist(err):
				default:
					fp.Error = err.Error()
				}
			}
			out = append(out, fp)
		}
	}
	return out
}

// NodeNetfilterTables lists every nf_tables table of the current network
// namespace as "family name", sorted: the tables of whatever programs
// nftables there (kube-proxy, iptables-nft, a policy enforcer).
func NodeNetfilterTables() ([]string, error) {
	conn, err := nftables.New()
	if err != nil {
		return nil, err
	}
	tables, err := conn.ListTables()
	if err != nil {
		return nil, err
	}
	return tableNames(tables), nil
}

// tableNames names tables as "family name", sorted; never nil, so that an
// empty ruleset reads as listed.
func tableNames(tables []*nftables.Table) []string {
	out := make([]string, 0, len(tables))
	for _, t := range tables {
		out = append(out, familyName(t.Family)+" "+t.Name)
	}
	slices.Sort(out)
	return out
}

func isNotExist(err error) bool {
	return errors.Is(err, os.ErrNotExist) || strings.Contains(err.Error(), "no such file or directory")
}

func familyName(f nftables.TableFamily) string {
	switch f {
	case nftables.TableFamilyIPv4:
		return "ip"
	case nftables.TableFamilyIPv6:
		return "ip6"
	case nftables.TableFamilyINet:
		return "inet"
	case nftables.TableFamilyARP:
		return "arp"
	case nftables.TableFamilyBridge:
		return "bridge"
	case nftables.TableFamilyNetdev:
		return "netdev"
	}
	return fmt.Sprintf("family-%d", f)
}

// LegacyTables reads the legacy (x_tables) tables that exist, from
// <proc>/net/ip_tables_names and ip6_tables_names. Listing a legacy table
// that does not exist would create it, so only these are ever named.
func LegacyTables(proc string) (v4, v6 []string, err error) {
	read := func(name string) ([]string, error) {
		b, err := os.ReadFile(filepath.Join(proc, "net", name))
		if os.IsNotExist(err) {
			return nil, nil // ip_tables not loaded: no legacy tables
		}
		if err != nil {
			return nil, err
		}
		return strings.Fields(string(b)), nil
	}
	if v4, err = read("ip_tables_names"); err != nil {
		return nil, nil, err
	}
	v6, err = read("ip6_tables_names")
	return v4, v6, err
}

// legacyFingerprints looks for KUBE-PROXY-CANARY in the legacy backend with
// go-iptables (iptables-legacy -t T -S KUBE-PROXY-CANARY 1), only in tables
// that already exist.
func legacyFingerprints(proc string) []collectorapi.Fingerprint {
	v4, v6, err := LegacyTables(proc)
	if err != nil {
		return []collectorapi.Fingerprint{{Mode: collectorapi.ModeIPTablesLegacy, Check: "legacy table names", Error: err.Error()}}
	}
	var out []collectorapi.Fingerprint
	for _, fam := range []struct {
		name, bin string
		proto     iptables.Protocol
		tables    []string
	}{{"ip", "iptables-legacy", iptables.ProtocolIPv4, v4}, {"ip6", "ip6tables-legacy", iptables.ProtocolIPv6, v6}} {
		out = append(out, collectorapi.Fingerprint{Mode: collectorapi.ModeIPTablesLegacy, Check: "legacy " + fam.name + " tables present",
			Found: len(fam.tables) > 0, Evidence: strings.Join(fam.tables, " ")})
		var ipt *iptables.IPTables
		for _, table := range []string{"mangle", "nat", "filter"} {
			if !slices.Contains(fam.tables, table) {
				continue
			}
			fp := collectorapi.Fingerprint{Mode: collectorapi.ModeIPTablesLegacy,
				Check: fmt.Sprintf("chain %s KUBE-PROXY-CANARY (iptables-legacy, %s)", table, fam.name)}
			if ipt == nil {
				path, err := exec.LookPath(fam.bin)
				if err == nil {
					ipt, err = iptables.New(iptables.IPFamily(fam.proto), iptables.Path(path), iptables.Timeout(5))
				}
				if err != nil {
					fp.Error = fmt.Sprintf("%s: %v", fam.bin, err)
					out = append(out, fp)
					continue
				}
			}
			ok, err := ipt.ChainExists(table, "KUBE-PROXY-CANARY")
			fp.Found = ok
			if err != nil {
				fp.Error = err.Error()
			}
			if ok {
				fp.Evidence = fmt.Sprintf("%s -t %s -S KUBE-PROXY-CANARY", fam.bin, table)
			}
			out = append(out, fp)
		}
	}
	return out
}

func linkFingerprint() collectorapi.Fingerprint {
	fp := collectorapi.Fingerprint{Mode: collectorapi.ModeIPVS, Check: "link kube-ipvs0"}
	link, err := netlink.LinkByName("kube-ipvs0")
	var notFound netlink.LinkNotFoundError
	switch {
	case err == nil:
		fp.Found = true
		fp.Evidence = fmt.Sprintf("link kube-ipvs0 (%s, index %d)", link.Type(), link.Attrs().Index)
	case errors.As(err, &notFound):
	default:
		fp.Error = err.Error()
	}
	return fp
}

// BPFFingerprints globs the pinned maps of Cilium (cilium_lb4_*/cilium_lb6_*)
// and Calico eBPF (cali_v4_nat_fe*/cali_v6_nat_fe*) under <root>/tc/globals.
func BPFFingerprints(root string) []collectorapi.Fingerprint {
	if root == "" {
		root = "/sys/fs/bpf"
	}
	dir := filepath.Join(root, "tc", "globals")
	var out []collectorapi.Fingerprint
	for _, c := range []struct {
		mode    collectorapi.DatapathMode
		pattern string
	}{
		{collectorapi.ModeCilium, "cilium_lb4_*"}, {collectorapi.ModeCilium, "cilium_lb6_*"},
		{collectorapi.ModeCalico, "cali_v4_nat_fe*"}, {collectorapi.ModeCalico, "cali_v6_nat_fe*"},
	} {
		fp := collectorapi.Fingerprint{Mode: c.mode, Check: "pinned maps " + filepath.Join(dir, c.pattern)}
		matches, err := filepath.Glob(filepath.Join(dir, c.pattern))
		if err != nil {
			fp.Error = err.Error()
		}
		if len(matches) > 0 {
			fp.Found = true
			names := make([]string, len(matches))
			for i, m := range matches {
				names[i] = filepath.Base(m)
			}
			fp.Evidence = strings.Join(names, " ")
		}
		out = append(out, fp)
	}
	return out
}
