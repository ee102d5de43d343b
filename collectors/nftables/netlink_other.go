//go:build !linux

package nftables

import "errors"

// netlinkSource exists on Linux only: nftables is a Linux facility. On other
// systems, where this package still builds, Read falls back to the nft CLI,
// which is not there either.
type netlinkSource struct{ source }

func newNetlinkSource(int) (*netlinkSource, error) {
	return nil, errors.New("nftables: netlink reads need Linux")
}
