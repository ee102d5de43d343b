// Package kpgen writes rules in kube-proxy v1.37's own layout (iptables-restore
// input and `nft -f` input) for synthetic Services. It reproduces the layouts
// documented in docs/datapath.md §1 and §2 (chain names, hashes, comments,
// probabilities, affinity, traffic policies, large-cluster comment dropping);
// it is not kube-proxy. The benchmark and the doc-derived fixtures use it; real
// dumps from the testbed's kube-proxy are the reference when available.
package kpgen

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/svctrace/kubectl-svctrace/collectors/kubeproxy"
)

// Endpoint is one endpoint address of a Service.
type Endpoint struct {
	IP    string
	Port  int32
	Local bool // on this node
	// Terminating endpoints are used only when no endpoint is ready.
	Terminating bool
}

// Port is one Service port.
type Port struct {
	Name     string
	Protocol string // TCP, UDP
	Port     int32
	NodePort int32
}

// Service is a Service as kube-proxy sees it, with its endpoints.
type Service struct {
	Namespace, Name string
	ClusterIP       string
	ExternalIPs     []string
	LBIPs           []string
	SourceRanges    []string
	Ports           []Port
	Endpoints       []Endpoint // same port numbers for every Service port
	AffinitySeconds int        // 0 = no ClientIP affinity
	ETPLocal        bool
	ITPLocal        bool
	HealthCheckPort int32
}

// Options are node-wide settings.
type Options struct {
	PodCIDR string // detect-local cluster CIDR (default 10.0.0.0/8)
	Mark    string // masquerade mark (default 0x4000)
	// LargeCluster drops endpoint comments like kube-proxy does above 1000
	// endpoints. Auto-set by the writers when the total exceeds 1000.
	LargeCluster bool
}

func (o *Options) defaults(svcs []Service) {
	if o.PodCIDR == "" {
		o.PodCIDR = "10.0.0.0/8"
	}
	if o.Mark == "" {
		o.Mark = "0x4000"
	}
	n := 0
	for _, s := range svcs {
		n += len(s.Endpoints)
	}
	if n > 1000 {
		o.LargeCluster = true
	}
}

// usable returns the endpoints kube-proxy programs (ready ones, else the
// terminating ones), sorted as endpoint strings.
func usable(eps []Endpoint, localOnly bool) []Endpoint {
	var ready, term []Endpoint
	for _, e := range eps {
		if localOnly && !e.Local {
			continue
		}
		if e.Terminating {
			term = append(term, e)
		} else {
			ready = append(ready, e)
		}
	}
	out := ready
	if len(out) == 0 {
		out = term
	}
	sort.Slice(out, func(i, j int) bool {
		return kubeproxy.EndpointString(out[i].IP, out[i].Port) < kubeproxy.EndpointString(out[j].IP, out[j].Port)
	})
	return out
}

func externallyReachable(s Service, p Port) bool {
	return p.NodePort != 0 || len(s.ExternalIPs) > 0 || len(s.LBIPs) > 0
}

// IPTables writes kube-proxy's iptables-restore input (filter + nat) for svcs.
func IPTables(w io.Writer, svcs []Service, o Options) error {
	o.defaults(svcs)
	var filter, nat, natChains, filterBody strings.Builder
	fa := func(format string, a ...any) { fmt.Fprintf(&filterBody, format+"\n", a...) }
	na := func(format string, a ...any) { fmt.Fprintf(&nat, format+"\n", a...) }
	chains := []string{}
	var servicesTail []string
	for _, s := range svcs {
		for _, p := range s.Ports {
			spn := kubeproxy.ServicePortName(s.Namespace, s.Name, p.Name)
			proto := strings.ToLower(p.Protocol)
			c := kubeproxy.IPTablesServiceChains(spn, p.Protocol)
			cluster := usable(s.Endpoints, false)
			local := usable(s.Endpoints, true)
			ext := externallyReachable(s, p)
			internal := cluster
			if s.ITPLocal {
				internal = local
			}
			// ClusterIP capture.
			if len(internal) > 0 {
				target := c.Service
				if s.ITPLocal {
					target = c.Local
				}
				na("-A KUBE-SERVICES -m comment --comment %q -m %s -p %s -d %s --dport %d -j %s", spn+" cluster IP", proto, proto, s.ClusterIP, p.Port, target)
			} else if len(cluster) == 0 {
				fa("-A KUBE-SERVICES -m comment --comment %q -m %s -p %s -d %s --dport %d -j REJECT", spn+" has no endpoints", proto, proto, s.ClusterIP, p.Port)
			} else {
				fa("-A KUBE-SERVICES -m comment --comment %q -m %s -p %s -d %s --dport %d -j DROP", spn+" has no local endpoints", proto, proto, s.ClusterIP, p.Port)
			}
			hasEps := len(cluster) > 0
			extTarget := c.External
			if len(s.SourceRanges) > 0 {
				extTarget = c.Firewall
			}
			for _, ip := range s.ExternalIPs {
				if hasEps {
					na("-A KUBE-SERVICES -m comment --comment %q -m %s -p %s -d %s --dport %d -j %s", spn+" external IP", proto, proto, ip, p.Port, c.External)
				} else {
					fa("-A KUBE-EXTERNAL-SERVICES -m comment --comment %q -m %s -p %s -d %s --dport %d -j REJECT", spn+" has no endpoints", proto, proto, ip, p.Port)
				}
			}
			for _, ip := range s.LBIPs {
				if hasEps {
					na("-A KUBE-SERVICES -m comment --comment %q -m %s -p %s -d %s --dport %d -j %s", spn+" loadbalancer IP", proto, proto, ip, p.Port, extTarget)
				} else {
					fa("-A KUBE-EXTERNAL-SERVICES -m comment --comment %q -m %s -p %s -d %s --dport %d -j REJECT", spn+" has no endpoints", proto, proto, ip, p.Port)
				}
			}
			if p.NodePort != 0 {
				if hasEps {
					na("-A KUBE-NODEPORTS -m comment --comment %s -m %s -p %s --dport %d -j %s", spn, proto, proto, p.NodePort, c.External)
				} else {
					fa("-A KUBE-EXTERNAL-SERVICES -m comment --comment %q -m addrtype --dst-type LOCAL -m %s -p %s --dport %d -j REJECT", spn+" has no endpoints", proto, proto, p.NodePort)
				}
			}
			if s.HealthCheckPort != 0 {
				fa("-A KUBE-NODEPORTS -m comment --comment %q -m tcp -p tcp --dport %d -j ACCEPT", spn+" health check node port", s.HealthCheckPort)
			}
			if !hasEps {
				continue
			}
			// KUBE-EXT
			if ext {
				chains = append(chains, c.External)
				if s.ETPLocal {
					na("-A %s -m comment --comment %q -s %s -j %s", c.External, "pod traffic for "+spn+" external destinations", o.PodCIDR, c.Service)
					na("-A %s -m comment --comment %q -m addrtype --src-type LOCAL -j KUBE-MARK-MASQ", c.External, "masquerade LOCAL traffic for "+spn+" external destinations")
					na("-A %s -m comment --comment %q -m addrtype --src-type LOCAL -j %s", c.External, "route LOCAL traffic for "+spn+" external destinations", c.Service)
					if len(local) > 0 {
						na("-A %s -j %s", c.External, c.Local)
					} else {
						for _, ip := range s.ExternalIPs {
							fa("-A KUBE-EXTERNAL-SERVICES -m comment --comment %q -m %s -p %s -d %s --dport %d -j DROP", spn+" has no local endpoints", proto, proto, ip, p.Port)
						}
						for _, ip := range s.LBIPs {
							fa("-A KUBE-EXTERNAL-SERVICES -m comment --comment %q -m %s -p %s -d %s --dport %d -j DROP", spn+" has no local endpoints", proto, proto, ip, p.Port)
						}
						if p.NodePort != 0 {
							fa("-A KUBE-EXTERNAL-SERVICES -m comment --comment %q -m addrtype --dst-type LOCAL -m %s -p %s --dport %d -j DROP", spn+" has no local endpoints", proto, proto, p.NodePort)
						}
					}
				} else {
					na("-A %s -m comment --comment %q -j KUBE-MARK-MASQ", c.External, "masquerade traffic for "+spn+" external destinations")
					na("-A %s -j %s", c.External, c.Service)
				}
			}
			if len(s.SourceRanges) > 0 && len(s.LBIPs) > 0 {
				chains = append(chains, c.Firewall)
				for _, r := range s.SourceRanges {
					na("-A %s -m comment --comment %q -s %s -j %s", c.Firewall, spn+" loadbalancer IP", r, c.External)
				}
				na("-A %s -m comment --comment %q", c.Firewall, "other traffic to "+spn+" will be dropped by KUBE-PROXY-FIREWALL")
				for _, ip := range s.LBIPs {
					fa("-A KUBE-PROXY-FIREWALL -m comment --comment %q -m %s -p %s -d %s --dport %d -j DROP", spn+" traffic not accepted by "+c.Firewall, proto, proto, ip, p.Port)
				}
			}
			// SVC / SVL
			writeSel := func(chain string, eps []Endpoint) {
				chains = append(chains, chain)
				na("-A %s -m comment --comment %q -m %s -p %s -d %s --dport %d ! -s %s -j KUBE-MARK-MASQ", chain, spn+" cluster IP", proto, proto, s.ClusterIP, p.Port, o.PodCIDR)
				cm := func(ep string) string {
					if o.LargeCluster {
						return ""
					}
					return fmt.Sprintf("-m comment --comment %q ", spn+" -> "+ep)
				}
				if s.AffinitySeconds > 0 {
					for _, e := range eps {
						es := kubeproxy.EndpointString(e.IP, e.Port)
						sep := kubeproxy.IPTablesEndpointChain(spn, proto, es)
						na("-A %s %s-m recent --name %s --rcheck --seconds %d --reap -j %s", chain, cm(es), sep, s.AffinitySeconds, sep)
					}
				}
				for i, e := range eps {
					es := kubeproxy.EndpointString(e.IP, e.Port)
					sep := kubeproxy.IPTablesEndpointChain(spn, proto, es)
					if i < len(eps)-1 {
						na("-A %s %s-m statistic --mode random --probability %s -j %s", chain, cm(es), kubeproxy.ComputeProbability(len(eps)-i), sep)
					} else {
						na("-A %s %s-j %s", chain, cm(es), sep)
					}
				}
			}
			if !s.ITPLocal || ext {
				writeSel(c.Service, cluster)
			}
			if (s.ITPLocal || (s.ETPLocal && ext)) && len(local) > 0 {
				writeSel(c.Local, local)
			}
			// SEP chains: union of cluster and local.
			seen := map[string]bool{}
			for _, e := range append(append([]Endpoint{}, cluster...), local...) {
				es := kubeproxy.EndpointString(e.IP, e.Port)
				if seen[es] {
					continue
				}
				seen[es] = true
				sep := kubeproxy.IPTablesEndpointChain(spn, proto, es)
				chains = append(chains, sep)
				cm := ""
				if !o.LargeCluster {
					cm = "-m comment --comment " + spn + " "
				}
				na("-A %s %s-s %s -j KUBE-MARK-MASQ", sep, cm, e.IP)
				aff := ""
				if s.AffinitySeconds > 0 {
					aff = fmt.Sprintf("-m recent --name %s --set ", sep)
				}
				na("-A %s %s%s-m %s -p %s -j DNAT --to-destination %s", sep, cm, aff, proto, proto, es)
			}
		}
	}
	servicesTail = append(servicesTail, `-A KUBE-SERVICES -m comment --comment "kubernetes service nodeports; NOTE: this must be the last rule in this chain" -m addrtype --dst-type LOCAL -j KUBE-NODEPORTS`)

	filter.WriteString("*filter\n")
	for _, c := range []string{"KUBE-SERVICES", "KUBE-EXTERNAL-SERVICES", "KUBE-NODEPORTS", "KUBE-PROXY-FIREWALL", "KUBE-FORWARD", "KUBE-PROXY-CANARY"} {
		fmt.Fprintf(&filter, ":%s - [0:0]\n", c)
	}
	filter.WriteString(`-A INPUT -m conntrack --ctstate NEW -m comment --comment "kubernetes load balancer firewall" -j KUBE-PROXY-FIREWALL
-A INPUT -m comment --comment "kubernetes health check service ports" -j KUBE-NODEPORTS
-A INPUT -m conntrack --ctstate NEW -m comment --comment "kubernetes externally-visible service portals" -j KUBE-EXTERNAL-SERVICES
-A FORWARD -m conntrack --ctstate NEW -m comment --comment "kubernetes load balancer firewall" -j KUBE-PROXY-FIREWALL
-A FORWARD -m comment --comment "kubernetes forwarding rules" -j KUBE-FORWARD
-A FORWARD -m conntrack --ctstate NEW -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
-A FORWARD -m conntrack --ctstate NEW -m comment --comment "kubernetes externally-visible service portals" -j KUBE-EXTERNAL-SERVICES
-A OUTPUT -m conntrack --ctstate NEW -m comment --comment "kubernetes load balancer firewall" -j KUBE-PROXY-FIREWALL
-A OUTPUT -m conntrack --ctstate NEW -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
`)
	filter.WriteString(filterBody.String())
	fmt.Fprintf(&filter, "-A KUBE-FORWARD -m conntrack --ctstate INVALID -j DROP\n")
	fmt.Fprintf(&filter, "-A KUBE-FORWARD -m comment --comment \"kubernetes forwarding rules\" -m mark --mark %s/%s -j ACCEPT\n", o.Mark, o.Mark)
	fmt.Fprintf(&filter, "-A KUBE-FORWARD -m comment --comment \"kubernetes forwarding conntrack rule\" -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT\n")
	filter.WriteString("COMMIT\n")

	natChains.WriteString("*nat\n")
	for _, c := range []string{"KUBE-SERVICES", "KUBE-NODEPORTS", "KUBE-POSTROUTING", "KUBE-MARK-MASQ", "KUBE-PROXY-CANARY"} {
		fmt.Fprintf(&natChains, ":%s - [0:0]\n", c)
	}
	seenChain := map[string]bool{}
	for _, c := range chains {
		if !seenChain[c] {
			seenChain[c] = true
			fmt.Fprintf(&natChains, ":%s - [0:0]\n", c)
		}
	}
	natChains.WriteString(`-A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
-A OUTPUT -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
-A POSTROUTING -m comment --comment "kubernetes postrouting rules" -j KUBE-POSTROUTING
`)
	fmt.Fprintf(&natChains, "-A KUBE-POSTROUTING -m mark ! --mark %s/%s -j RETURN\n", o.Mark, o.Mark)
	fmt.Fprintf(&natChains, "-A KUBE-POSTROUTING -j MARK --xor-mark %s\n", o.Mark)
	fmt.Fprintf(&natChains, "-A KUBE-POSTROUTING -m comment --comment \"kubernetes service traffic requiring SNAT\" -j MASQUERADE --random-fully\n")
	fmt.Fprintf(&natChains, "-A KUBE-MARK-MASQ -j MARK --or-mark %s\n", o.Mark)
	if _, err := io.WriteString(w, filter.String()); err != nil {
		return err
	}
	if _, err := io.WriteString(w, natChains.String()+nat.String()+strings.Join(servicesTail, "\n")+"\nCOMMIT\n"); err != nil {
		return err
	}
	return nil
}

// NFTables writes `nft -f` input recreating kube-proxy's `table ip kube-proxy`
// (IPv4 Services only) for svcs.
func NFTables(w io.Writer, svcs []Service, o Options) error {
	o.defaults(svcs)
	var chains, svcIPs, nodePorts, noEpSvc, noEpNP, fwIPs, clusterIPs, hairpin strings.Builder
	sep := func(b *strings.Builder) {
		if b.Len() > 0 {
			b.WriteString(",\n\t\t\t")
		}
	}
	for _, s := range svcs {
		sep(&clusterIPs)
		clusterIPs.WriteString(s.ClusterIP)
		for _, p := range s.Ports {
			spn := kubeproxy.ServicePortName(s.Namespace, s.Name, p.Name)
			proto := strings.ToLower(p.Protocol)
			c := kubeproxy.NFTServiceChains(s.Namespace, s.Name, p.Protocol, p.Name)
			cluster := usable(s.Endpoints, false)
			local := usable(s.Endpoints, true)
			ext := externallyReachable(s, p)
			internal := cluster
			if s.ITPLocal {
				internal = local
			}
			verdict := "goto " + c.Service
			if s.ITPLocal {
				verdict = "goto " + c.Local
			}
			if len(internal) > 0 {
				sep(&svcIPs)
				fmt.Fprintf(&svcIPs, "%s . %s . %d : %s", s.ClusterIP, proto, p.Port, verdict)
			} else {
				v := "goto reject-chain"
				if len(cluster) > 0 {
					v = "drop"
				}
				sep(&noEpSvc)
				fmt.Fprintf(&noEpSvc, "%s . %s . %d comment %q : %s", s.ClusterIP, proto, p.Port, spn, v)
			}
			hasEps := len(cluster) > 0
			extV := "goto " + c.External
			for _, ip := range append(append([]string{}, s.ExternalIPs...), s.LBIPs...) {
				if hasEps {
					sep(&svcIPs)
					fmt.Fprintf(&svcIPs, "%s . %s . %d : %s", ip, proto, p.Port, extV)
				} else {
					sep(&noEpSvc)
					fmt.Fprintf(&noEpSvc, "%s . %s . %d comment %q : goto reject-chain", ip, proto, p.Port, spn)
				}
			}
			if p.NodePort != 0 {
				if hasEps {
					sep(&nodePorts)
					fmt.Fprintf(&nodePorts, "%s . %d : %s", proto, p.NodePort, extV)
				} else {
					sep(&noEpNP)
					fmt.Fprintf(&noEpNP, "%s . %d comment %q : goto reject-chain", proto, p.NodePort, spn)
				}
			}
			if len(s.SourceRanges) > 0 {
				for _, ip := range s.LBIPs {
					sep(&fwIPs)
					fmt.Fprintf(&fwIPs, "%s . %s . %d : goto %s", ip, proto, p.Port, c.Firewall)
				}
				fmt.Fprintf(&chains, "\tchain %s {\n\t\tip saddr != { %s } drop\n\t}\n", c.Firewall, strings.Join(s.SourceRanges, ", "))
			}
			for _, e := range local {
				sep(&hairpin)
				fmt.Fprintf(&hairpin, "%s . %s . %s . %d", e.IP, e.IP, proto, e.Port)
			}
			if !hasEps {
				continue
			}
			if ext {
				fmt.Fprintf(&chains, "\tchain %s {\n", c.External)
				if s.ETPLocal {
					fmt.Fprintf(&chains, "\t\tip saddr %s goto %s comment \"short-circuit pod traffic\"\n", o.PodCIDR, c.Service)
					fmt.Fprintf(&chains, "\t\tfib saddr type local meta mark set meta mark | %s comment \"masquerade local traffic\"\n", o.Mark)
					fmt.Fprintf(&chains, "\t\tfib saddr type local goto %s comment \"short-circuit local traffic\"\n", c.Service)
					if len(local) > 0 {
						fmt.Fprintf(&chains, "\t\tgoto %s\n", c.Local)
					} else {
						for _, ip := range append(append([]string{}, s.ExternalIPs...), s.LBIPs...) {
							sep(&noEpSvc)
							fmt.Fprintf(&noEpSvc, "%s . %s . %d comment %q : drop", ip, proto, p.Port, spn)
						}
						if p.NodePort != 0 {
							sep(&noEpNP)
							fmt.Fprintf(&noEpNP, "%s . %d comment %q : drop", proto, p.NodePort, spn)
						}
					}
				} else {
					fmt.Fprintf(&chains, "\t\tmeta mark set meta mark | %s comment \"masquerade\"\n", o.Mark)
					fmt.Fprintf(&chains, "\t\tgoto %s\n", c.Service)
				}
				chains.WriteString("\t}\n")
			}
			writeSel := func(chain string, eps []Endpoint) {
				fmt.Fprintf(&chains, "\tchain %s {\n", chain)
				if s.AffinitySeconds > 0 {
					var vm []string
					for i, e := range eps {
						base := kubeproxy.NFTEndpointBase(s.Namespace, s.Name, proto, p.Name, kubeproxy.NormalizeIP(e.IP), e.Port)
						fmt.Fprintf(&chains, "\t\tip saddr @affinity-%s goto endpoint-%s\n", base, base)
						vm = append(vm, fmt.Sprintf("%d : goto endpoint-%s", i, base))
					}
					fmt.Fprintf(&chains, "\t\tnumgen random mod %d vmap { %s }\n", len(eps), strings.Join(vm, ", "))
				} else if len(eps) == 1 {
					fmt.Fprintf(&chains, "\t\tmeta l4proto %s dnat to %s\n", proto, kubeproxy.EndpointString(eps[0].IP, eps[0].Port))
				} else {
					var m []string
					for i, e := range eps {
						m = append(m, fmt.Sprintf("%d : %s . %d", i, e.IP, e.Port))
					}
					fmt.Fprintf(&chains, "\t\tmeta l4proto %s dnat ip to numgen random mod %d map { %s }\n", proto, len(eps), strings.Join(m, ", "))
				}
				chains.WriteString("\t}\n")
			}
			if !s.ITPLocal || ext {
				writeSel(c.Service, cluster)
			}
			if (s.ITPLocal || (s.ETPLocal && ext)) && len(local) > 0 {
				writeSel(c.Local, local)
			}
			if s.AffinitySeconds > 0 {
				seen := map[string]bool{}
				for _, e := range append(append([]Endpoint{}, cluster...), local...) {
					base := kubeproxy.NFTEndpointBase(s.Namespace, s.Name, proto, p.Name, kubeproxy.NormalizeIP(e.IP), e.Port)
					if seen[base] {
						continue
					}
					seen[base] = true
					fmt.Fprintf(&chains, "\tset affinity-%s {\n\t\ttype ipv4_addr\n\t\tflags dynamic,timeout\n\t\ttimeout %ds\n\t}\n", base, s.AffinitySeconds)
					fmt.Fprintf(&chains, "\tchain endpoint-%s {\n\t\tupdate @affinity-%s { ip saddr }\n\t\tmeta l4proto %s dnat to %s\n\t}\n", base, base, proto, kubeproxy.EndpointString(e.IP, e.Port))
				}
			}
		}
	}
	elems := func(b *strings.Builder) string {
		if b.Len() == 0 {
			return ""
		}
		return "\n\t\telements = { " + b.String() + " }"
	}
	fmt.Fprintf(w, `table ip kube-proxy {
	comment "rules for kube-proxy"
	set cluster-ips {
		type ipv4_addr
		comment "Active ClusterIPs"%s
	}
	set nodeport-ips {
		type ipv4_addr
		comment "IPs that accept NodePort traffic"
	}
	map service-ips {
		type ipv4_addr . inet_proto . inet_service : verdict
		comment "ClusterIP, ExternalIP and LoadBalancer IP traffic"%s
	}
	map service-nodeports {
		type inet_proto . inet_service : verdict
		comment "NodePort traffic"%s
	}
	map no-endpoint-services {
		type ipv4_addr . inet_proto . inet_service : verdict
		comment "vmap to drop or reject packets to services with no endpoints"%s
	}
	map no-endpoint-nodeports {
		type inet_proto . inet_service : verdict
		comment "vmap to drop or reject packets to service nodeports with no endpoints"%s
	}
	map firewall-ips {
		type ipv4_addr . inet_proto . inet_service : verdict
		comment "destinations that are subject to LoadBalancerSourceRanges"%s
	}
	set hairpin-connections {
		type ipv4_addr . ipv4_addr . inet_proto . inet_service
		comment "Hairpin connections that need masquerading"%s
	}
	chain filter-prerouting-pre-dnat {
		type filter hook prerouting priority -110; policy accept;
		ct state new jump firewall-check
	}
	chain filter-output-pre-dnat {
		type filter hook output priority -110; policy accept;
		ct state new jump firewall-check
	}
	chain filter-input {
		type filter hook input priority 0; policy accept;
		ct state new jump nodeport-endpoints-check
		ct state new jump service-endpoints-check
	}
	chain filter-forward {
		type filter hook forward priority 0; policy accept;
		ct state new jump service-endpoints-check
		ct state new jump cluster-ips-check
	}
	chain filter-output {
		type filter hook output priority 0; policy accept;
		ct state new jump service-endpoints-check
		ct state new jump cluster-ips-check
	}
	chain nat-prerouting {
		type nat hook prerouting priority -100; policy accept;
		jump services
	}
	chain nat-output {
		type nat hook output priority -100; policy accept;
		jump services
	}
	chain nat-postrouting {
		type nat hook postrouting priority 100; policy accept;
		jump masquerading
	}
	chain masquerading {
		meta mark & %s != 0 meta mark set meta mark ^ %s masquerade fully-random
		ct status dnat ip saddr . ip daddr . meta l4proto . th dport @hairpin-connections masquerade fully-random
	}
	chain services {
		ip daddr @cluster-ips ip saddr != %s meta mark set meta mark | %s comment "masquerade clusterIP traffic from outside cluster"
		ip daddr . meta l4proto . th dport vmap @service-ips
		fib daddr type local ip daddr != 127.0.0.0/8 meta l4proto . th dport vmap @service-nodeports
	}
	chain service-endpoints-check {
		ip daddr . meta l4proto . th dport vmap @no-endpoint-services
	}
	chain nodeport-endpoints-check {
		fib daddr type local ip daddr != 127.0.0.0/8 meta l4proto . th dport vmap @no-endpoint-nodeports
	}
	chain firewall-check {
		ip daddr . meta l4proto . th dport vmap @firewall-ips
	}
	chain reject-chain {
		reject
	}
	chain cluster-ips-check {
		ip daddr @cluster-ips reject comment "Reject traffic to invalid ports of ClusterIPs"
	}
%s}
`, elems(&clusterIPs), elems(&svcIPs), elems(&nodePorts), elems(&noEpSvc), elems(&noEpNP), elems(&fwIPs), elems(&hairpin),
		o.Mark, o.Mark, o.PodCIDR, o.Mark, chains.String())
	return nil
}
