package nftables

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
	"github.com/svctrace/kubectl-svctrace/collectors/kubeproxy"
)

// source is one way of reading the kube-proxy table: netlink or nft-cli.
type source interface {
	tablePresent(family string) (bool, error)
	chain(family, name string) (*collectorapi.NFTablesChain, error)
	element(family, set string, k elemKey) (collectorapi.NFTablesElement, error)
	affinitySet(family, name string) (collectorapi.NFTablesAffinitySet, error)
	close()
}

// Read reads q.Service's nftables state. It reads through netlink and falls
// back to `nft --json` when netlink fails (or with q.ForceCLI); the
// observation says which.
func Read(ctx context.Context, q Query) (*collectorapi.NFTablesObservation, error) {
	if q.Service.Namespace == "" || q.Service.Name == "" {
		return nil, errors.New("nftables: query names no Service")
	}
	obs := &collectorapi.NFTablesObservation{Source: collectorapi.NFTablesSourceNetlink}
	var src source
	if !q.ForceCLI {
		s, err := openNetlink(q.NetNS)
		if err == nil {
			src = s
			// Probe: a netlink failure here means the fallback is needed.
			if _, err := s.tablePresent(families(q)[0]); err != nil {
				s.close()
				src = nil
				obs.NetlinkError = err.Error()
			}
		} else {
			obs.NetlinkError = err.Error()
		}
	}
	if src == nil {
		obs.Source = collectorapi.NFTablesSourceCLI
		r := q.Runner
		if r == nil {
			r = ExecRunner{NetNS: q.NetNS}
		}
		src = &cliSource{ctx: ctx, runner: r, tables: map[string]*cliTable{}}
	}
	defer src.close()
	for _, f := range families(q) {
		obs.Tables = append(obs.Tables, readTable(src, q, f))
	}
	return obs, nil
}

func openNetlink(netns string) (*netlinkSource, error) {
	fd := 0
	if netns != "" {
		f, err := os.Open(netns)
		if err != nil {
			return nil, err
		}
		// The sockets keep the namespace; the file can go after dialing.
		defer f.Close()
		fd = int(f.Fd())
	}
	return newNetlinkSource(fd)
}

func families(q Query) []string {
	if len(q.Families) > 0 {
		return q.Families
	}
	var out []string
	for _, f := range q.Service.IPFamilies() {
		out = append(out, nftFamily[f])
	}
	return out
}

// nftFamily names an IP family as nftables does.
var nftFamily = map[string]string{"IPv4": "ip", "IPv6": "ip6"}

// addrFamily is the nftables family of an address ("ip", "ip6", "").
func addrFamily(ip string) string { return nftFamily[collectorapi.AddrFamily(ip)] }

func ofFamily(ips []string, f string) []string {
	var out []string
	for _, ip := range ips {
		if addrFamily(ip) == f {
			out = append(out, kubeproxy.NormalizeIP(ip))
		}
	}
	return out
}

func readTable(src source, q Query, f string) collectorapi.NFTablesTableObservation {
	to := collectorapi.NFTablesTableObservation{Family: f, Name: TableName}
	present, err := src.tablePresent(f)
	if err != nil {
		to.Error = err.Error()
		return to
	}
	to.Present = present
	if !present {
		return to
	}
	fail := func(err error) collectorapi.NFTablesTableObservation {
		to.Error = err.Error()
		return to
	}
	clusterIPs := ofFamily(q.Service.ClusterIPs, f)
	for _, ip := range clusterIPs {
		el, err := src.element(f, "cluster-ips", elemKey{IP: ip})
		if err != nil {
			return fail(err)
		}
		to.ClusterIPs = append(to.ClusterIPs, collectorapi.NFTablesMembership{Set: "cluster-ips", Key: ip, Member: el.Found})
	}
	frontends := append(append(append([]string{}, clusterIPs...), ofFamily(q.Service.ExternalIPs, f)...), ofFamily(q.Service.LoadBalancerIPs, f)...)
	affinity := strings.EqualFold(q.Service.SessionAffinity, "ClientIP")
	for _, p := range q.Service.Ports {
		proto := strings.ToLower(p.Protocol)
		if proto == "" {
			proto = "tcp"
		}
		po := collectorapi.NFTablesPortObservation{
			ServicePortName: kubeproxy.ServicePortName(q.Service.Namespace, q.Service.Name, p.Name),
			Protocol:        strings.ToUpper(proto), Port: p.Port, NodePort: p.NodePort,
			ChainNames: kubeproxy.NFTServiceChains(q.Service.Namespace, q.Service.Name, proto, p.Name),
		}
		lookup := func(set string, k elemKey, into *[]collectorapi.NFTablesElement) error {
			el, err := src.element(f, set, k)
			if err != nil {
				return err
			}
			*into = append(*into, el)
			return nil
		}
		for _, ip := range frontends {
			k := elemKey{IP: ip, Proto: proto, Port: p.Port}
			if err := lookup("service-ips", k, &po.ServiceIPs); err != nil {
				return fail(err)
			}
			if err := lookup("no-endpoint-services", k, &po.NoEndpointServices); err != nil {
				return fail(err)
			}
			if err := lookup("firewall-ips", k, &po.FirewallIPs); err != nil {
				return fail(err)
			}
		}
		if p.NodePort != 0 {
			k := elemKey{Proto: proto, Port: p.NodePort}
			if err := lookup("service-nodeports", k, &po.ServiceNodePorts); err != nil {
				return fail(err)
			}
			if err := lookup("no-endpoint-nodeports", k, &po.NoEndpointNodePorts); err != nil {
				return fail(err)
			}
		}
		cn := po.ChainNames
		get := func(name, by string) (*collectorapi.NFTablesChain, error) {
			c, err := src.chain(f, name)
			if err != nil {
				return nil, err
			}
			if c.Exists {
				c.FoundBy = by
			}
			return c, nil
		}
		if po.Service, err = get(cn.Service, "hash"); err != nil {
			return fail(err)
		}
		if po.Local, err = get(cn.Local, "hash"); err != nil {
			return fail(err)
		}
		if po.External, err = get(cn.External, "hash"); err != nil {
			return fail(err)
		}
		if po.Firewall, err = get(cn.Firewall, "hash"); err != nil {
			return fail(err)
		}
		known := map[string]bool{cn.Service: true, cn.Local: true, cn.External: true, cn.Firewall: true, "reject-chain": true}
		var others []string
		for _, list := range [][]collectorapi.NFTablesElement{po.ServiceIPs, po.ServiceNodePorts, po.FirewallIPs, po.NoEndpointServices, po.NoEndpointNodePorts} {
			for _, el := range list {
				if el.Target != "" && !known[el.Target] {
					known[el.Target] = true
					others = append(others, el.Target)
				}
			}
		}
		for _, n := range others {
			c, err := get(n, "verdict")
			if err != nil {
				return fail(err)
			}
			po.Other = append(po.Other, c)
		}
		// Endpoint chains (affinity only): followed from the selecting
		// chains, plus those predicted from the query.
		var epNames []string
		seen := map[string]bool{}
		add := func(n string) {
			if strings.HasPrefix(n, "endpoint-") && !seen[n] {
				seen[n] = true
				epNames = append(epNames, n)
			}
		}
		for _, c := range append([]*collectorapi.NFTablesChain{po.Service, po.Local}, po.Other...) {
			for _, r := range c.Rules {
				add(r.Target)
				if r.Numgen != nil {
					for _, e := range r.Numgen.Entries {
						add(e.Target)
					}
				}
			}
		}
		if affinity {
			var predicted []string
			for _, ep := range q.Endpoints {
				port, ok := ep.Ports[p.Name]
				if !ok || addrFamily(ep.IP) != f {
					continue
				}
				predicted = append(predicted, "endpoint-"+kubeproxy.NFTEndpointBase(q.Service.Namespace, q.Service.Name, proto, p.Name, kubeproxy.NormalizeIP(ep.IP), port))
			}
			sort.Strings(predicted)
			for _, n := range predicted {
				add(n)
			}
		}
		setSeen := map[string]bool{}
		for _, n := range epNames {
			c, err := get(n, "jump")
			if err != nil {
				return fail(err)
			}
			po.Endpoints = append(po.Endpoints, c)
			sets := []string{"affinity-" + strings.TrimPrefix(n, "endpoint-")}
			for _, r := range c.Rules {
				if r.Update != "" {
					sets = append(sets, r.Update)
				}
			}
			for _, s := range sets {
				if setSeen[s] || (!affinity && len(c.Rules) == 0) {
					continue
				}
				setSeen[s] = true
				as, err := src.affinitySet(f, s)
				if err != nil {
					return fail(err)
				}
				po.Affinity = append(po.Affinity, as)
			}
		}
		to.Ports = append(to.Ports, po)
	}
	// The masquerade path, shared by every Service.
	if to.Masquerading, err = src.chain(f, "masquerading"); err != nil {
		return fail(err)
	}
	if to.NATPostrouting, err = src.chain(f, "nat-postrouting"); err != nil {
		return fail(err)
	}
	return to
}

// renderNumgen prints a numgen map's entries the way nft does.
func renderNumgen(n *collectorapi.NFTablesNumgenMap) string {
	var parts []string
	for _, e := range n.Entries {
		v := e.Address
		if n.Kind == "vmap" {
			v = e.Verdict
		}
		parts = append(parts, fmt.Sprintf("%d : %s", e.Index, v))
	}
	return strings.Join(parts, ", ")
}

// finishNumgen sorts a numgen map's entries and computes shares: each index
// present gets 1/modulus of new connections.
func finishNumgen(n *collectorapi.NFTablesNumgenMap) {
	sort.Slice(n.Entries, func(i, j int) bool { return n.Entries[i].Index < n.Entries[j].Index })
	if n.Modulus == 0 {
		return
	}
	covered := 0
	for i := range n.Entries {
		if n.Entries[i].Index < n.Modulus {
			n.Entries[i].Share = 1 / float64(n.Modulus)
			covered++
		}
	}
	if covered < int(n.Modulus) {
		n.UnmatchedShare = float64(int(n.Modulus)-covered) / float64(n.Modulus)
	}
}

var _ = collectorapi.RequestAPIVersion
