#!/bin/sh
# Regenerates the doc-derived netfilter fixtures: kube-proxy-layout rules from
# test/bench/netfilter/kpgen, loaded into a throwaway network namespace and
# dumped back with the real iptables-nft-save / nft, so the checked-in dumps
# are in the exact form the tools print. Needs root; touches only its own netns.
set -eu
cd "$(dirname "$0")/../../.."
out=collectors/testdata
ns=svt-fixtures-$$
ip netns add "$ns"
trap 'ip netns del "$ns"' EXIT
go run ./test/bench/netfilter/cmd/kpgen -set scenarios > $out/iptables/scenarios.restore
go run ./test/bench/netfilter/cmd/kpgen -set large -n 1001 > $out/iptables/large.restore
go run ./test/bench/netfilter/cmd/kpgen -set scenarios -mode nftables > $out/nftables/scenarios.nft
go run ./test/bench/netfilter/cmd/kpgen -set large -n 1001 -mode nftables > $out/nftables/large.nft
strip() { grep -v '^# \(Generated\|Completed\|Warning\)'; }
for f in scenarios large; do
	ip netns exec "$ns" iptables-nft-restore $out/iptables/$f.restore
	ip netns exec "$ns" iptables-nft-save | strip > $out/iptables/$f.save
	ip netns exec "$ns" nft -f $out/nftables/$f.nft
	ip netns exec "$ns" nft list table ip kube-proxy > $out/nftables/$f.list
	ip netns exec "$ns" nft --json list table ip kube-proxy > $out/nftables/$f.json
	ip netns exec "$ns" nft delete table ip kube-proxy
	ip netns exec "$ns" iptables-nft -t nat -F; ip netns exec "$ns" iptables-nft -t nat -X
	ip netns exec "$ns" iptables-nft -t filter -F; ip netns exec "$ns" iptables-nft -t filter -X
done
