package report

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// CheckSpec is a catalog entry. Code is stable: never renumber or reuse one;
// a code no judge emits any more keeps its entry. Message and NextStep are
// templates whose {placeholders} are filled from Args when a check is emitted.
type CheckSpec struct {
	Code     string
	Layer    LayerName // "" for codes that can appear in any layer (API…)
	Severity Severity
	Title    string
	Message  string
	NextStep string
	// Symptom marks a finding that says that traffic fails but not why (no
	// ready endpoints); the verdict prefers a non-symptom finding as the cause.
	Symptom bool
}

// Args fill a template's {placeholders}.
type Args map[string]string

// Catalog is every check svctrace can emit, by code. Each layer prefix has
// its file, catalog_<prefix>.go, with its constants and entries: API (any
// layer: the API could not be read), SVC and PRT (service), EPS and POD
// (endpoints), DNS (dns), DP (datapath), CT (conntrack), RT (route), NP
// (policy), GW and ING (frontdoor). A new check is a constant and an entry
// in its prefix's file.
var Catalog = buildCatalog(slices.Concat(apiCatalog, svcCatalog, prtCatalog, epsCatalog, podCatalog,
	dnsCatalog, dpCatalog, ctCatalog, rtCatalog, npCatalog, gwCatalog, ingCatalog))

// Next steps several layers share.
const (
	// nodeSvcCmd re-runs svctrace on one node with the full evidence.
	nodeSvcCmd = "kubectl svctrace {service} -n {namespace} --node {node} -o yaml"
	// clientNetnsCmd re-runs svctrace from inside the --from Pod's network
	// namespace.
	clientNetnsCmd = "kubectl svctrace {service} -n {namespace} --from pod/{clientNamespace}/{client} --client-netns -o yaml"
	// lateCollectorNextStepCmd: a probe that timed out on a starved node.
	lateCollectorNextStepCmd = "kubectl describe node {node}  # a node short of CPU answers late: trace again when it is less busy"
)

func buildCatalog(specs []CheckSpec) map[string]CheckSpec {
	m := make(map[string]CheckSpec, len(specs))
	for _, s := range specs {
		if _, dup := m[s.Code]; dup {
			panic("trace: duplicate catalog code " + s.Code) // caught by TestCatalog at build time
		}
		m[s.Code] = s
	}
	return m
}

// CatalogCodes returns every code, sorted.
func CatalogCodes() []string {
	codes := make([]string, 0, len(Catalog))
	for c := range Catalog {
		codes = append(codes, c)
	}
	sort.Strings(codes)
	return codes
}

// statusFor maps a finding's severity to its status.
func statusFor(s Severity) Status {
	switch s {
	case SeverityError:
		return StatusFail
	case SeverityWarning:
		return StatusWarn
	default:
		return StatusPass
	}
}

// NewCheck emits the catalog entry code with its templates filled from args.
// An unknown code panics: it is a programming error that the catalog test and
// every unit test catch.
func NewCheck(code string, args Args, fields ...Field) Check {
	spec, ok := Catalog[code]
	if !ok {
		panic(fmt.Sprintf("trace: check code %q is not in the catalog", code))
	}
	c := Check{
		Code:     spec.Code,
		Severity: spec.Severity,
		Status:   statusFor(spec.Severity),
		Title:    spec.Title,
		Message:  fill(spec.Message, args),
		NextStep: fill(spec.NextStep, args),
		Family:   familyArg(args[ArgFamily]),
	}
	if len(fields) > 0 {
		c.Evidence = &Evidence{Fields: fields}
	}
	return c
}

// ArgFamily is the argument that names the IP family a check is about; it
// fills {family} in the catalog's texts and the check's Family.
const ArgFamily = "family"

// familyArg is the Family of a check whose family argument names exactly
// one IP family ("IPv4", "ipv6"), "" otherwise ("IPv4, IPv6", none).
func familyArg(v string) string {
	switch strings.ToLower(v) {
	case "ipv4":
		return "IPv4"
	case "ipv6":
		return "IPv6"
	}
	return ""
}

// fill replaces {key} with args[key]. Keys that are not in args stay as they
// are, so kubectl jsonpath braces in next steps survive.
func fill(tmpl string, args Args) string {
	if len(args) == 0 {
		return tmpl
	}
	pairs := make([]string, 0, 2*len(args))
	for k, v := range args {
		pairs = append(pairs, "{"+k+"}", v)
	}
	return strings.NewReplacer(pairs...).Replace(tmpl)
}
