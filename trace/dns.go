package trace

import (
	"net"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/svctrace/kubectl-svctrace/trace/report"
)

// dnsChecks states the name that should resolve and what it should return,
// and whether the cluster DNS Service can answer at all. The live query is
// node-side (a NodeInspector).
func (j *judge) dnsChecks() {
	s := &j.t.Service
	var answer string
	var fields []report.Field
	switch {
	case s.Type == string(corev1.ServiceTypeExternalName):
		answer = "CNAME " + s.ExternalName
		fields = append(fields, fieldValue("CNAME", s.ExternalName))
		if net.ParseIP(s.ExternalName) != nil {
			j.Emit(report.CodeDNSExternalIP, report.Args{"externalName": s.ExternalName})
		}
	case s.Headless:
		var v4, v6 []string
		for _, ep := range j.endpoints {
			if !ep.Ready && !s.PublishNotReadyAddresses {
				continue
			}
			if strings.Contains(ep.IP, ":") {
				v6 = append(v6, ep.IP)
			} else {
				v4 = append(v4, ep.IP)
			}
		}
		v4, v6 = dedupe(v4), dedupe(v6)
		if len(v4)+len(v6) == 0 && !j.slicesGap {
			answer = "no records (headless, no ready endpoint)"
			j.Emit(report.CodeDNSHeadlessEmpty, nil)
		} else if j.slicesGap {
			answer = "the ready Pod IPs (EndpointSlices not readable)"
		} else {
			answer = recordList(v4, v6)
			if len(v4) > 0 {
				fields = append(fields, fieldItems("A", v4))
			}
			if len(v6) > 0 {
				fields = append(fields, fieldItems("AAAA", v6))
			}
		}
	default:
		var v4, v6 []string
		for _, ip := range s.ClusterIPs {
			if strings.Contains(ip, ":") {
				v6 = append(v6, ip)
			} else {
				v4 = append(v4, ip)
			}
		}
		answer = recordList(v4, v6)
		if len(v4) > 0 {
			fields = append(fields, fieldItems("A", v4))
		}
		if len(v6) > 0 {
			fields = append(fields, fieldItems("AAAA", v6))
		}
	}
	fields = append([]report.Field{fieldValue("name", j.fqdn)}, fields...)
	// The expected answer goes first in the layer.
	l := j.t.Layer(report.LayerDNS)
	c := j.NewCheck(report.CodeDNSExpected, report.Args{"answer": answer}, fields...)
	l.Checks = append([]report.Check{c}, l.Checks...)

	switch {
	case j.in.DNSNotFound:
		j.Emit(report.CodeDNSNoClusterDNS, nil)
	case j.in.DNSService != nil && !j.in.hasGap(report.LayerDNS, resEndpointSlices):
		ready, total := 0, 0
		for _, sl := range j.in.DNSSlices {
			for _, ep := range sl.Endpoints {
				total++
				if ep.Conditions.Ready == nil || *ep.Conditions.Ready {
					ready++
				}
			}
		}
		ips := j.in.DNSService.Spec.ClusterIPs
		if len(ips) == 0 {
			ips = []string{j.in.DNSService.Spec.ClusterIP}
		}
		if ready == 0 {
			j.Emit(report.CodeDNSNoEndpoints, report.Args{"total": strconv.Itoa(total)}, fieldItems("clusterIPs", ips))
		} else {
			j.Emit(report.CodeDNSClusterDNSOK, report.Args{"clusterIPs": strings.Join(ips, ", "), "ready": strconv.Itoa(ready)},
				fieldItems("clusterIPs", ips), fieldValue("readyEndpoints", strconv.Itoa(ready)))
		}
	}
}

func recordList(v4, v6 []string) string {
	var parts []string
	if len(v4) > 0 {
		parts = append(parts, "A "+listNames(v4))
	}
	if len(v6) > 0 {
		parts = append(parts, "AAAA "+listNames(v6))
	}
	return orNone(strings.Join(parts, " and "))
}

func dedupe(in []string) []string {
	seen := make(map[string]bool, len(in))
	out := in[:0]
	for _, s := range in {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}
