package expect

import (
	corev1 "k8s.io/api/core/v1"
)

// categorize is CategorizeEndpoints for one Service port and family on
// node, with the policy flags newBaseServiceInfo derives from the Service
// for that family's proxier (internalPolicyLocal, externalPolicyLocal,
// ExternallyAccessible).
//
// r and hint are the programmer's own rules (Rules): kube-proxy's iptables
// and nftables proxiers use CategorizeEndpoints as is.
func categorize(svc *corev1.Service, sp corev1.ServicePort, fam corev1.IPFamily, eps []EndpointInfo, node, zone string, r Rules, hint HintRule) PortExpectation {
	pe := PortExpectation{
		PortName: sp.Name, Protocol: string(sp.Protocol), Port: sp.Port, NodePort: sp.NodePort, Family: fam, Zone: zone,
		InternalPolicyLocal: svc.Spec.InternalTrafficPolicy != nil && *svc.Spec.InternalTrafficPolicy == corev1.ServiceInternalTrafficPolicyLocal,
		// Each family's proxier sees only that family's externalIPs and
		// load-balancer IPs (newBaseServiceInfo), so a dual-stack Service
		// with an IPv4 externalIP and no NodePort is externally accessible
		// in IPv4 only.
		ExternalIPs:     ExternalIPs(svc, fam),
		LoadBalancerIPs: LoadBalancerVIPs(svc, fam),
	}
	pe.ExternallyAccessible = sp.NodePort != 0 || len(pe.ExternalIPs) > 0 || len(pe.LoadBalancerIPs) > 0
	if pe.Protocol == "" {
		pe.Protocol = string(corev1.ProtocolTCP)
	}
	pe.ExternalPolicyLocal = pe.ExternallyAccessible && svc.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal
	usesCluster := !pe.InternalPolicyLocal || pe.ExternallyAccessible
	usesLocal := pe.InternalPolicyLocal || pe.ExternalPolicyLocal

	if len(eps) > 0 && usesCluster {
		if hint == HintsFelix {
			var candidates []EndpointInfo
			candidates, pe.TopologyMode = felixTopology(svc, eps, node, zone)
			for _, ep := range candidates {
				if ep.Ready {
					pe.Cluster = append(pe.Cluster, ep.ExpectedEndpoint)
				}
			}
		} else {
			pe.TopologyMode = topologyMode(eps, node, zone, hint)
			for _, ep := range eps {
				if ep.Ready && availableForTopology(ep, pe.TopologyMode, node, zone) {
					pe.Cluster = append(pe.Cluster, ep.ExpectedEndpoint)
				}
			}
		}
		if len(pe.Cluster) == 0 && r.TerminatingFallback {
			for _, ep := range eps {
				if ep.Serving && ep.Terminating {
					pe.Cluster = append(pe.Cluster, ep.ExpectedEndpoint)
					pe.FallbackTerminating = true
				}
			}
		}
		pe.HasAnyEndpoints = len(pe.Cluster) > 0
	}
	if usesLocal {
		var localReady, localST bool
		for _, ep := range eps {
			if ep.Ready {
				pe.HasAnyEndpoints = true
				localReady = localReady || ep.local
			} else if ep.Serving && ep.Terminating {
				pe.HasAnyEndpoints = true
				localST = localST || ep.local
			}
		}
		for _, ep := range eps {
			switch {
			case localReady && ep.local && ep.Ready:
				pe.Local = append(pe.Local, ep.ExpectedEndpoint)
			case !localReady && localST && r.TerminatingFallback && ep.local && ep.Serving && ep.Terminating:
				pe.Local = append(pe.Local, ep.ExpectedEndpoint)
				pe.FallbackTerminating = true
			}
		}
	}
	pe.Internal = pe.Cluster
	if pe.InternalPolicyLocal {
		pe.Internal = pe.Local
	}
	pe.External = pe.Cluster
	if pe.ExternalPolicyLocal {
		pe.External = pe.Local
	}
	r.applyProgrammer(&pe)
	return pe
}

// topologyMode is kube-proxy's topologyModeFromHints with
// PreferSameTrafficDistribution on (GA and locked in v1.37), for hint
// HintsKubeProxy; HintsZoneOnly skips the node hints and HintsNone all.
func topologyMode(eps []EndpointInfo, node, zone string, hint HintRule) string {
	if hint == HintsNone {
		return ""
	}
	hasReady, forNode, allNode, forZone, allZone := false, false, true, false, true
	for _, ep := range eps {
		if !ep.Ready {
			continue
		}
		hasReady = true
		if len(ep.nodeHints) == 0 {
			allNode = false
		} else if ep.nodeHints[node] {
			forNode = true
		}
		if len(ep.zoneHints) == 0 {
			allZone = false
		} else if ep.zoneHints[zone] {
			forZone = true
		}
	}
	switch {
	case !hasReady:
		return ""
	case allNode && forNode && hint == HintsKubeProxy:
		return corev1.ServiceTrafficDistributionPreferSameNode
	case allZone && forZone:
		return corev1.ServiceTrafficDistributionPreferSameZone
	}
	return ""
}

func availableForTopology(ep EndpointInfo, mode, node, zone string) bool {
	switch mode {
	case "":
		return true
	case corev1.ServiceTrafficDistributionPreferSameNode:
		return ep.nodeHints[node]
	case corev1.ServiceTrafficDistributionPreferSameZone:
		return ep.zoneHints[zone]
	}
	return false
}
