package nftables

import (
	"os"
	"testing"

	collectorapi "github.com/svctrace/kubectl-svctrace/collectors/api/v1alpha1"
)

// FuzzParseJSON: nft --json output of any shape never panics the parser.
func FuzzParseJSON(f *testing.F) {
	if b, err := os.ReadFile("../testdata/nftables/scenarios.json"); err == nil {
		f.Add(b)
	}
	f.Add([]byte(`{"nftables":[{"rule":{"chain":"c","expr":[{"dnat":{"addr":{"map":{"key":{"numgen":{"mode":"random","mod":2}},"data":{"set":[[0,{"concat":["10.0.0.1",80]}]]}}}}}]}}]}`))
	f.Add([]byte(`{"nftables":[{"map":{"name":"m","elem":[[{"elem":{"val":{"concat":["1.2.3.4","tcp",80]},"comment":"x"}},{"goto":{"target":"c"}}]]}}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		tb, err := ParseJSON(b)
		if err != nil {
			return
		}
		for _, rules := range tb.rules {
			for _, r := range rules {
				if r.Numgen != nil && r.Numgen.UnmatchedShare < 0 {
					t.Fatalf("negative unmatched share")
				}
			}
		}
	})
}

// FuzzDecodeNetlink: the netlink element and verdict decoders never panic on
// arbitrary kernel bytes.
func FuzzDecodeNetlink(f *testing.F) {
	f.Add([]byte{0x0c, 0x00, 0x03, 0x00, 0x08, 0x00, 0x01, 0x00, 0xff, 0xff, 0xff, 0xfc})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		var el collectorapi.NFTablesElement
		_ = decodeElemList(b, &el)
		_, _ = decodeVerdict(b)
		_ = decodeAddrPort(b, len(b)%2 == 0)
		_, _ = prefixLen(b)
	})
}
