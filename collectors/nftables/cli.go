package nftables

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
)

// Runner runs the nft command for the CLI fallback.
type Runner interface {
	Output(ctx context.Context, name string, args ...string) ([]byte, error)
}

// ExecRunner runs nft, under `nsenter --net=NetNS` when NetNS is set.
type ExecRunner struct{ NetNS string }

// Output implements Runner.
func (r ExecRunner) Output(ctx context.Context, name string, args ...string) ([]byte, error) {
	if r.NetNS != "" {
		args = append([]string{"--net=" + r.NetNS, "--", name}, args...)
		name = "nsenter"
	}
	cmd := exec.CommandContext(ctx, name, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// cliSource reads `nft --json list table <family> kube-proxy` once per
// family (nft fetches the whole ruleset for any listing, so one table
// listing is the cheapest CLI read) and answers lookups from it.
type cliSource struct {
	ctx    context.Context
	runner Runner
	tables map[string]*cliTable
}

type cliTable struct {
	present bool
	chains  map[string]bool
	rules   map[string][]collectorapi.NFTablesRule
	sets    map[string]*cliSet
}

type cliSet struct {
	timeout  int64
	elements map[string]collectorapi.NFTablesElement
}

func (s *cliSource) close() {}

func (s *cliSource) load(f string) (*cliTable, error) {
	if t, ok := s.tables[f]; ok {
		return t, nil
	}
	out, err := s.runner.Output(s.ctx, "nft", "--json", "list", "table", f, TableName)
	if err != nil {
		if strings.Contains(err.Error(), "No such file or directory") {
			t := &cliTable{}
			s.tables[f] = t
			return t, nil
		}
		return nil, err
	}
	t, err := ParseJSON(out)
	if err != nil {
		return nil, err
	}
	s.tables[f] = t
	return t, nil
}

func (s *cliSource) tablePresent(f string) (bool, error) {
	t, err := s.load(f)
	if err != nil {
		return false, err
	}
	return t.present, nil
}

func (s *cliSource) chain(f, name string) (*collectorapi.NFTablesChain, error) {
	t, err := s.load(f)
	if err != nil {
		return nil, err
	}
	return &collectorapi.NFTablesChain{Name: name, Exists: t.chains[name], Rules: t.rules[name]}, nil
}

func (s *cliSource) element(f, set string, k elemKey) (collectorapi.NFTablesElement, error) {
	t, err := s.load(f)
	if err != nil {
		return collectorapi.NFTablesElement{}, err
	}
	el := collectorapi.NFTablesElement{Map: set, Key: k.String()}
	if st := t.sets[set]; st != nil {
		if e, ok := st.elements[el.Key]; ok {
			e.Map = set
			return e, nil
		}
	}
	return el, nil
}

func (s *cliSource) affinitySet(f, name string) (collectorapi.NFTablesAffinitySet, error) {
	t, err := s.load(f)
	if err != nil {
		return collectorapi.NFTablesAffinitySet{}, err
	}
	st := t.sets[name]
	if st == nil {
		return collectorapi.NFTablesAffinitySet{Name: name}, nil
	}
	return collectorapi.NFTablesAffinitySet{Name: name, Exists: true, TimeoutSeconds: st.timeout}, nil
}

// ParseJSON parses `nft --json list table …` output into chains, decoded
// rules and set/map elements. It is exported for the fuzzer and for tools.
func ParseJSON(b []byte) (*cliTable, error) {
	var doc struct {
		Nftables []map[string]json.RawMessage `json:"nftables"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("nft json: %w", err)
	}
	t := &cliTable{chains: map[string]bool{}, rules: map[string][]collectorapi.NFTablesRule{}, sets: map[string]*cliSet{}}
	for _, obj := range doc.Nftables {
		for kind, raw := range obj {
			switch kind {
			case "table":
				t.present = true
			case "chain":
				var c struct {
					Name string `json:"name"`
				}
				if json.Unmarshal(raw, &c) == nil {
					t.chains[c.Name] = true
				}
			case "rule":
				var r struct {
					Chain   string            `json:"chain"`
					Handle  uint64            `json:"handle"`
					Comment string            `json:"comment"`
					Expr    []json.RawMessage `json:"expr"`
				}
				if err := json.Unmarshal(raw, &r); err != nil {
					return nil, fmt.Errorf("nft json rule: %w", err)
				}
				rule := decodeJSONRule(r.Expr)
				rule.Handle, rule.Comment = r.Handle, r.Comment
				t.rules[r.Chain] = append(t.rules[r.Chain], rule)
			case "set", "map":
				var st struct {
					Name    string            `json:"name"`
					Timeout int64             `json:"timeout"`
					Elem    []json.RawMessage `json:"elem"`
				}
				if err := json.Unmarshal(raw, &st); err != nil {
					return nil, fmt.Errorf("nft json %s: %w", kind, err)
				}
				cs := &cliSet{timeout: st.Timeout, elements: map[string]collectorapi.NFTablesElement{}}
				for _, e := range st.Elem {
					el := decodeJSONElement(e, kind == "map")
					cs.elements[el.Key] = el
				}
				t.sets[st.Name] = cs
			}
		}
	}
	return t, nil
}

// decodeJSONElement decodes a set element ("10.96.0.1", {"elem":{…}}) or a
// map element ([key, value]).
func decodeJSONElement(raw json.RawMessage, isMap bool) collectorapi.NFTablesElement {
	el := collectorapi.NFTablesElement{Found: true}
	keyRaw := raw
	if isMap {
		var pair []json.RawMessage
		if json.Unmarshal(raw, &pair) == nil && len(pair) == 2 {
			keyRaw = pair[0]
			el.Verdict, el.Target = jsonVerdict(pair[1])
		}
	}
	var wrapped struct {
		Elem *struct {
			Val     json.RawMessage `json:"val"`
			Comment string          `json:"comment"`
		} `json:"elem"`
	}
	if json.Unmarshal(keyRaw, &wrapped) == nil && wrapped.Elem != nil {
		keyRaw = wrapped.Elem.Val
		el.Comment = wrapped.Elem.Comment
	}
	el.Key = jsonKey(keyRaw)
	return el
}

// jsonKey renders a key as "a . b . c".
func jsonKey(raw json.RawMessage) string {
	var concat struct {
		Concat []json.RawMessage `json:"concat"`
	}
	if json.Unmarshal(raw, &concat) == nil && concat.Concat != nil {
		var parts []string
		for _, p := range concat.Concat {
			parts = append(parts, jsonScalar(p))
		}
		return strings.Join(parts, " . ")
	}
	return jsonScalar(raw)
}

func jsonScalar(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var n json.Number
	if json.Unmarshal(raw, &n) == nil {
		return n.String()
	}
	return string(raw)
}

// jsonVerdict decodes {"goto":{"target":X}}, {"drop":null}, ….
func jsonVerdict(raw json.RawMessage) (verdict, target string) {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil || len(m) != 1 {
		return "", ""
	}
	for k, v := range m {
		switch k {
		case "goto", "jump":
			var t struct {
				Target string `json:"target"`
			}
			_ = json.Unmarshal(v, &t)
			return k + " " + t.Target, t.Target
		case "drop", "accept", "return", "continue", "reject":
			return k, ""
		}
	}
	return "", ""
}

// decodeJSONRule extracts the same meaning decodeRule takes from netlink.
func decodeJSONRule(exprs []json.RawMessage) collectorapi.NFTablesRule {
	var r collectorapi.NFTablesRule
	var texts []string
	for _, raw := range exprs {
		texts = append(texts, string(raw))
		var m map[string]json.RawMessage
		if json.Unmarshal(raw, &m) != nil {
			continue
		}
		for k, v := range m {
			switch k {
			case "goto", "jump", "drop", "accept", "return":
				r.Verdict, r.Target = jsonVerdict(raw)
			case "reject":
				r.Verdict = "reject"
			case "dnat":
				var d struct {
					Addr   json.RawMessage `json:"addr"`
					Port   *int            `json:"port"`
					Family string          `json:"family"`
				}
				if json.Unmarshal(v, &d) != nil {
					continue
				}
				var ip string
				if json.Unmarshal(d.Addr, &ip) == nil {
					r.DNAT = ip
					if d.Port != nil {
						r.DNAT = netipJoin(ip, uint16(*d.Port))
					}
					continue
				}
				var mp struct {
					Map struct {
						Key  json.RawMessage `json:"key"`
						Data json.RawMessage `json:"data"`
					} `json:"map"`
				}
				if json.Unmarshal(d.Addr, &mp) == nil {
					r.Numgen = jsonNumgen("dnat", mp.Map.Key, mp.Map.Data)
				}
			case "vmap":
				var vm struct {
					Key  json.RawMessage `json:"key"`
					Data json.RawMessage `json:"data"`
				}
				if json.Unmarshal(v, &vm) == nil {
					r.Numgen = jsonNumgen("vmap", vm.Key, vm.Data)
				}
			case "match":
				var mt struct {
					Op    string          `json:"op"`
					Left  json.RawMessage `json:"left"`
					Right json.RawMessage `json:"right"`
				}
				if json.Unmarshal(v, &mt) != nil {
					continue
				}
				r.Conditions++
				if mm := jsonMarkMatch(mt.Op, mt.Left, mt.Right); mm != nil {
					r.MarkMatch = mm
					continue
				}
				if !isSaddr(mt.Left) {
					continue
				}
				var s string
				if json.Unmarshal(mt.Right, &s) == nil && strings.HasPrefix(s, "@") && mt.Op == "==" {
					r.AffinityMatch = strings.TrimPrefix(s, "@")
					continue
				}
				val := jsonMatchValue(mt.Right)
				if mt.Op == "!=" {
					val = "!= " + val
				}
				r.SourceMatch = val
			case "set":
				var st struct {
					Op  string `json:"op"`
					Set string `json:"set"`
				}
				if json.Unmarshal(v, &st) == nil && st.Op == "update" {
					r.Update = strings.TrimPrefix(st.Set, "@")
				}
			case "mangle":
				var mg struct {
					Key   json.RawMessage `json:"key"`
					Value struct {
						Or  []json.RawMessage `json:"|"`
						Xor []json.RawMessage `json:"^"`
					} `json:"value"`
				}
				if json.Unmarshal(v, &mg) == nil {
					for _, op := range [][]json.RawMessage{mg.Value.Or, mg.Value.Xor} {
						var n uint64
						if len(op) == 2 && json.Unmarshal(op[1], &n) == nil {
							r.Mark = "0x" + strconv.FormatUint(n, 16)
						}
					}
				}
			case "masquerade":
				r.Masquerade = true
			}
		}
	}
	r.Text = "[" + strings.Join(texts, ",") + "]"
	return r
}

// jsonMarkMatch reads "meta mark [& mask] ==|!= value" (nft's JSON: left
// {"meta": {"key": "mark"}} or {"&": [{"meta": …}, mask]}), nil for any
// other match.
func jsonMarkMatch(op string, left, right json.RawMessage) *collectorapi.NFTablesMarkMatch {
	if op != "==" && op != "!=" {
		return nil
	}
	var value uint32
	if json.Unmarshal(right, &value) != nil {
		return nil
	}
	isMark := func(raw json.RawMessage) bool {
		var m struct {
			Meta struct {
				Key string `json:"key"`
			} `json:"meta"`
		}
		return json.Unmarshal(raw, &m) == nil && m.Meta.Key == "mark"
	}
	mm := &collectorapi.NFTablesMarkMatch{Mask: 0xffffffff, Op: op, Value: value}
	if isMark(left) {
		return mm
	}
	var and struct {
		And []json.RawMessage `json:"&"`
	}
	if json.Unmarshal(left, &and) != nil || len(and.And) != 2 || !isMark(and.And[0]) || json.Unmarshal(and.And[1], &mm.Mask) != nil {
		return nil
	}
	return mm
}

func isSaddr(raw json.RawMessage) bool {
	var p struct {
		Payload struct {
			Field string `json:"field"`
		} `json:"payload"`
	}
	return json.Unmarshal(raw, &p) == nil && p.Payload.Field == "saddr"
}

// jsonMatchValue renders a prefix ("10.0.0.0/8"), an address, or an
// anonymous set ("{ a, b }").
func jsonMatchValue(raw json.RawMessage) string {
	var pf struct {
		Prefix *struct {
			Addr string `json:"addr"`
			Len  int    `json:"len"`
		} `json:"prefix"`
		Set []json.RawMessage `json:"set"`
	}
	if json.Unmarshal(raw, &pf) == nil {
		if pf.Prefix != nil {
			return pf.Prefix.Addr + "/" + strconv.Itoa(pf.Prefix.Len)
		}
		if pf.Set != nil {
			var parts []string
			for _, e := range pf.Set {
				parts = append(parts, jsonMatchValue(e))
			}
			return "{ " + strings.Join(parts, ", ") + " }"
		}
	}
	return jsonScalar(raw)
}

func jsonNumgen(kind string, key, data json.RawMessage) *collectorapi.NFTablesNumgenMap {
	var k struct {
		Numgen *struct {
			Mode string `json:"mode"`
			Mod  uint32 `json:"mod"`
		} `json:"numgen"`
	}
	if json.Unmarshal(key, &k) != nil || k.Numgen == nil {
		return nil
	}
	ng := &collectorapi.NFTablesNumgenMap{Kind: kind, Modulus: k.Numgen.Mod}
	var d struct {
		Set []json.RawMessage `json:"set"`
	}
	if json.Unmarshal(data, &d) != nil {
		return ng
	}
	for _, e := range d.Set {
		var pair []json.RawMessage
		if json.Unmarshal(e, &pair) != nil || len(pair) != 2 {
			continue
		}
		var idx uint32
		if json.Unmarshal(pair[0], &idx) != nil {
			continue
		}
		ent := collectorapi.NFTablesNumgenEntry{Index: idx}
		if kind == "vmap" {
			ent.Verdict, ent.Target = jsonVerdict(pair[1])
		} else {
			var c struct {
				Concat []json.RawMessage `json:"concat"`
			}
			if json.Unmarshal(pair[1], &c) == nil && len(c.Concat) == 2 {
				var port uint16
				_ = json.Unmarshal(c.Concat[1], &port)
				ent.Address = netipJoin(jsonScalar(c.Concat[0]), port)
			}
		}
		ng.Entries = append(ng.Entries, ent)
	}
	finishNumgen(ng)
	return ng
}

var _ = errors.New
