package programmed

import (
	"fmt"
	"net"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
)

// IPVSDetail is what FromIPVS keeps of one Service port beyond the shared
// Port: every virtual server of the port, whatever its frontend.
type IPVSDetail struct {
	VirtualServers []collectorapi.IPVSVirtualServer
}

// IPVSEvidence is one virtual server and its real servers as ipvsadm -Ln
// shows them.
func IPVSEvidence(vs collectorapi.IPVSVirtualServer) []string {
	out := []string{fmt.Sprintf("%s %s:%d %s %s", strings.ToUpper(vs.Protocol), vs.Address, vs.Port, vs.Scheduler, strings.Join(vs.FlagNames, ","))}
	for _, rs := range vs.RealServers {
		out = append(out, fmt.Sprintf("  -> %s:%d %s weight %d active %d inactive %d", rs.Address, rs.Port, rs.Forwarding, rs.Weight, rs.ActiveConns, rs.InactiveConns))
	}
	return out
}

// FromIPVS reads the IPVS section as kube-proxy's IPVS proxier programs it:
// one virtual server per ClusterIP:port (the internal path), one per
// externalIP, load-balancer IP and node IP × NodePort (the external paths),
// each with the same real servers. Real servers of weight 0 are draining
// (graceful termination): they keep their connections but get no new ones.
// The scheduler decides the shares: rr and the hashing schedulers (sh, mh)
// spread new connections evenly over the live real servers, the weighted
// ones (wrr, wlc…) by weight; lc/wlc/sed/nq follow current load and are
// judged as even.
func FromIPVS(obs *collectorapi.Observation) []Port {
	s := obs.Sections.IPVS
	if s == nil || s.Data == nil || !s.Data.Available {
		return nil
	}
	type key struct {
		name, proto string
		fam         corev1.IPFamily
	}
	byPort := map[key]*Port{}
	var order []key
	nodePorts := map[key]bool{}
	all := map[key][]collectorapi.IPVSVirtualServer{}
	for _, vs := range s.Data.VirtualServers {
		k := key{vs.PortName, strings.ToUpper(vs.Protocol), AddressFamily(vs.Address)}
		all[k] = append(all[k], vs)
		if vs.Frontend == "nodePort" {
			if vs.Found {
				nodePorts[k] = true
			}
			continue
		}
		if vs.Frontend != "clusterIP" {
			continue
		}
		pp := Port{Datapath: "ipvs (" + vs.Scheduler + ")", PortName: vs.PortName, Protocol: k.proto,
			Port: int32(vs.Port), Family: k.fam, Captured: vs.Found}
		pp.AddAffinityTimeout(int(vs.TimeoutSeconds))
		var live []collectorapi.IPVSRealServer
		total := 0
		for _, rs := range vs.RealServers {
			pp.Evidence = append(pp.Evidence, fmt.Sprintf("-> %s:%d weight %d active %d inactive %d", rs.Address, rs.Port, rs.Weight, rs.ActiveConns, rs.InactiveConns))
			if rs.Weight > 0 {
				live = append(live, rs)
				total += int(rs.Weight)
			}
		}
		weighted := strings.HasPrefix(vs.Scheduler, "w")
		for _, rs := range live {
			share := 1 / float64(len(live))
			if weighted && total > 0 {
				share = float64(rs.Weight) / float64(total)
			}
			pp.Endpoints = append(pp.Endpoints, Endpoint{Endpoint: net.JoinHostPort(rs.Address, strconv.Itoa(int(rs.Port))), Share: share})
		}
		if _, dup := byPort[k]; !dup {
			order = append(order, k)
		}
		byPort[k] = &pp
	}
	out := make([]Port, 0, len(order))
	for _, k := range order {
		pp := byPort[k]
		pp.NodePortFound = nodePorts[k]
		pp.IPVS = &IPVSDetail{VirtualServers: all[k]}
		pp.Frontends = ipvsFrontends(all[k])
		out = append(out, *pp)
	}
	return out
}

// ipvsFrontends are a port's external virtual servers as Frontends: one
// per externalIP, load-balancer IP and node address × NodePort
// (syncService binds and programs each address), holding the real servers
// syncEndpoint gave it. A real server of weight 0 is draining and takes no
// new connections, so it is not one the entry selects. The policy is not
// kept per virtual server: syncEndpoint applied it when it chose the real
// servers.
func ipvsFrontends(vss []collectorapi.IPVSVirtualServer) []Frontend {
	var out []Frontend
	for _, vs := range vss {
		if vs.Frontend == "clusterIP" {
			continue
		}
		f := Frontend{Kind: vs.Frontend, Address: vs.Address, Port: int32(vs.Port), Found: vs.Found,
			Name: fmt.Sprintf("%s %s", vs.Frontend, net.JoinHostPort(vs.Address, strconv.Itoa(int(vs.Port))))}
		if vs.Found {
			f.Evidence = IPVSEvidence(vs)
			for _, rs := range vs.RealServers {
				if rs.Weight > 0 {
					f.Endpoints = append(f.Endpoints, Endpoint{Endpoint: net.JoinHostPort(rs.Address, strconv.Itoa(int(rs.Port)))})
				}
			}
		}
		out = append(out, f)
	}
	return out
}

// IPVSLeftovers lists this Service's IPVS virtual servers on a node whose
// kube-proxy is not in IPVS mode: kube-proxy in iptables mode does not
// remove what the IPVS proxier wrote, and while kube-ipvs0 still holds the
// ClusterIP the node accepts connections to it locally.
func IPVSLeftovers(obs *collectorapi.Observation) []string {
	s := obs.Sections.IPVS
	if s == nil || s.Data == nil || !s.Data.Available {
		return nil
	}
	var out []string
	for _, vs := range s.Data.VirtualServers {
		if vs.Found {
			out = append(out, net.JoinHostPort(vs.Address, strconv.Itoa(int(vs.Port)))+"/"+vs.Protocol)
		}
	}
	return out
}
