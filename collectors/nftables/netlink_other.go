//go:build !linux

package nftables

import "errors"

// netlinkSource exists on Linux only: nftables is a Linux facility. The
// plugin (built for every OS) imports this package for its types; on other
// systems Read falls back to the nft CLI, which is not there either.
type netlinkSource struct{ source }

func newNetlinkSource(int) (*netlinkSource, error) {
	return nil, errors.New("nftables: netlink reads need Linux")
}
