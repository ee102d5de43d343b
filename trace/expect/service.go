package expect

import (
	"net/netip"

	corev1 "k8s.io/api/core/v1"
)

// SkippedByKubeProxy mirrors util.ShouldSkipService and the informer filter
// on the service-proxy-name label.
func SkippedByKubeProxy(svc *corev1.Service) bool {
	if svc.Spec.Type == corev1.ServiceTypeExternalName {
		return true
	}
	if svc.Spec.ClusterIP == "" || svc.Spec.ClusterIP == corev1.ClusterIPNone {
		return true
	}
	if _, ok := svc.Labels[labelServiceProxyName]; ok {
		return true // any value, even empty: the informer selects on absence
	}
	return false
}

// ServiceFamilies are the IP families kube-proxy programs the Service for:
// spec.ipFamilies, or the ClusterIP's family for an object that lacks them.
// Each family's proxier has its own ServiceChangeTracker.
func ServiceFamilies(svc *corev1.Service) []corev1.IPFamily {
	if len(svc.Spec.IPFamilies) > 0 {
		return svc.Spec.IPFamilies
	}
	if a, err := netip.ParseAddr(svc.Spec.ClusterIP); err == nil && a.Is6() {
		return []corev1.IPFamily{corev1.IPv6Protocol}
	}
	return []corev1.IPFamily{corev1.IPv4Protocol}
}

// HasVIPIngress says whether a load-balancer ingress IP is one kube-proxy
// programs: an IP with ipMode VIP or unset (proxyutil.IsVIPMode).
func HasVIPIngress(svc *corev1.Service) bool {
	return len(LoadBalancerVIPs(svc, "")) > 0
}

// LoadBalancerVIPs are the load-balancer ingress IPs kube-proxy's proxier
// for family programs (newBaseServiceInfo: the ingress IPs of that family
// in VIP mode, proxyutil.IsVIPMode); every family's when family is "".
func LoadBalancerVIPs(svc *corev1.Service, family corev1.IPFamily) []string {
	var out []string
	for _, ing := range svc.Status.LoadBalancer.Ingress {
		if ing.IP == "" || (ing.IPMode != nil && *ing.IPMode != corev1.LoadBalancerIPModeVIP) {
			continue
		}
		if family == "" || addressFamily(ing.IP) == family {
			out = append(out, ing.IP)
		}
	}
	return out
}

// ExternalIPs are the Service's externalIPs of family, the ones that
// family's proxier programs (newBaseServiceInfo:
// proxyutil.MapIPsByIPFamily(service.Spec.ExternalIPs)[ipFamily]).
func ExternalIPs(svc *corev1.Service, family corev1.IPFamily) []string {
	var out []string
	for _, ip := range svc.Spec.ExternalIPs {
		if addressFamily(ip) == family {
			out = append(out, ip)
		}
	}
	return out
}

// addressFamily is the family of an IP string; "" when it does not parse,
// as proxyutil.GetIPFamilyFromIP leaves an unparsable IP out of both
// families.
func addressFamily(ip string) corev1.IPFamily {
	a, err := netip.ParseAddr(ip)
	switch {
	case err != nil:
		return ""
	case a.Is4() || a.Is4In6():
		return corev1.IPv4Protocol
	}
	return corev1.IPv6Protocol
}

// labelServiceProxyName is the label kube-proxy's Service informer selects
// on the absence of (pkg/proxy/apis.LabelServiceProxyName).
const labelServiceProxyName = "service.kubernetes.io/service-proxy-name"

// protocolOf is the Service port's protocol, TCP when unset.
func protocolOf(p corev1.Protocol) string {
	if p == "" {
		return string(corev1.ProtocolTCP)
	}
	return string(p)
}
