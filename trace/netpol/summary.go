package netpol

import (
	"fmt"
	"sort"
	"strings"
)

// summarize aggregates the decisions into counts, a verdict and one line.
func summarize(res *Result, kind ClientKind, nports int) Summary {
	s := Summary{Decisions: len(res.Decisions)}
	denying := map[string]bool{}
	var some []string
	seen := map[string]bool{}
	partial := 0
	for i := range res.Decisions {
		d := &res.Decisions[i]
		if d.Isolated {
			s.Isolated++
		}
		switch d.Allowed {
		case Allowed:
			s.Allowed++
		case Denied:
			s.Denied++
			if d.IngressAllowed == Denied {
				for _, ev := range d.Evidence {
					denying[ev.Policy] = true
				}
			}
			if d.ClientEgress != nil && d.ClientEgress.Allowed == Denied {
				for _, ev := range d.ClientEgress.Evidence {
					denying[ev.Policy] = true
				}
			}
		default:
			s.Unknown++
			if kind == ClientAny && d.AnySourceAdmitted {
				partial++
				for _, src := range d.AdmittedSources {
					if !seen[src] {
						seen[src] = true
						some = append(some, src)
					}
				}
			}
		}
	}
	for k := range denying {
		s.DenyingPolicies = append(s.DenyingPolicies, k)
	}
	sort.Strings(s.DenyingPolicies)
	switch {
	case s.Decisions > 0 && s.Allowed == s.Decisions:
		s.Verdict = Allowed
	case s.Denied > 0:
		s.Verdict = Denied
	default:
		s.Verdict = Unknown
	}
	s.AllDenied = s.Decisions > 0 && s.Denied == s.Decisions

	if s.Decisions == 0 {
		s.Line = "no backend Pods to evaluate"
		return s
	}
	unit := "backend Pods"
	if nports > 1 {
		unit = "backend Pod ports"
	}
	var b strings.Builder
	if kind == ClientAny {
		fmt.Fprintf(&b, "%d of %d %s admit any source", s.Allowed, s.Decisions, unit)
		if partial > 0 {
			const max = 3
			list := some
			if len(list) > max {
				list = append(list[:max:max], fmt.Sprintf("%d more", len(some)-max))
			}
			fmt.Fprintf(&b, ", %d admit only %s", partial, strings.Join(list, " or "))
		}
		if s.Denied > 0 {
			fmt.Fprintf(&b, ", %d admit no source (%s)", s.Denied, strings.Join(s.DenyingPolicies, ", "))
		}
		if u := s.Unknown - partial; u > 0 {
			fmt.Fprintf(&b, ", %d unknown", u)
		}
	} else {
		fmt.Fprintf(&b, "%s is admitted to %d of %d %s", res.Client, s.Allowed, s.Decisions, unit)
		if s.Denied > 0 {
			fmt.Fprintf(&b, ", denied to %d (%s)", s.Denied, strings.Join(s.DenyingPolicies, ", "))
		}
		if s.Unknown > 0 {
			fmt.Fprintf(&b, ", unknown for %d", s.Unknown)
		}
	}
	fmt.Fprintf(&b, "; %d of %d isolated for ingress by NetworkPolicy", s.Isolated, s.Decisions)
	s.Line = b.String()
	return s
}
