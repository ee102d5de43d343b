package iptables

import (
	"strings"
	"testing"
)

// FuzzParseRule: any line either fails cleanly or yields a rule whose raw
// text is the input and whose chain is the word after -A.
func FuzzParseRule(f *testing.F) {
	for _, s := range []string{
		`-A KUBE-SVC-X ! -s 10.0.0.0/8 -d 10.96.0.50/32 -p tcp -m comment --comment "default/web:http cluster IP" -m tcp --dport 80 -j KUBE-MARK-MASQ`,
		`-A KUBE-SVC-X -m comment --comment "a -> 10.0.0.1:80" -m recent --rcheck --seconds 10800 --reap --name KUBE-SEP-Y --mask 255.255.255.255 --rsource -j KUBE-SEP-Y`,
		`-A KUBE-SVC-X -m statistic --mode random --probability 0.33333333349 -j KUBE-SEP-Z`,
		`-A X -m comment --comment "say \"hi\"" -j MARK --set-xmark 0x4000/0x4000`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		r, err := ParseRule(line)
		if err != nil {
			return
		}
		if r.Raw != line {
			t.Fatalf("raw %q != %q", r.Raw, line)
		}
		if !strings.HasPrefix(line, "-A ") || r.Chain == "" {
			t.Fatalf("accepted a non-rule line %q (chain %q)", line, r.Chain)
		}
		if r.ProbabilityValue != nil && r.Probability == "" {
			t.Fatalf("probability value without text")
		}
	})
}

// FuzzSaveFilter: the streaming filter never panics on arbitrary save text
// and keeps only rules of chains it was asked about or naming the Service.
func FuzzSaveFilter(f *testing.F) {
	f.Add("*nat\n:KUBE-SERVICES - [0:0]\n-A KUBE-SERVICES -d 10.96.0.50/32 -p tcp -m comment --comment \"default/web:http cluster IP\" -m tcp --dport 80 -j KUBE-SVC-CDGGSHYLG3RE2FKL\nCOMMIT\n")
	f.Add("*nat\n:KUBE-SEP-A - [0:0]\n-A KUBE-SEP-A -p tcp -m tcp -j DNAT --to-destination 10.0.0.1:80\n")
	plans := plan(scenarioQueries()["web"], "IPv4")
	f.Fuzz(func(t *testing.T, text string) {
		sf := newSaveFilter(plans)
		if err := sf.consume(strings.NewReader(text)); err != nil {
			return
		}
		for k, rules := range sf.kept {
			for _, r := range rules {
				if r.Chain != k.chain {
					t.Fatalf("rule of %s kept under %s", r.Chain, k.chain)
				}
			}
		}
		st := sf.store()
		for _, k := range []chainKey{{"nat", "KUBE-SEP-A"}, {"nat", chainServices}, {"filter", chainCanary}, {"", ""}} {
			if l := st.get(k); l.exists {
				for _, r := range l.rules {
					if r.Chain != k.chain {
						t.Fatalf("orphan rule of %s returned for %s", r.Chain, k.chain)
					}
				}
			}
		}
	})
}
