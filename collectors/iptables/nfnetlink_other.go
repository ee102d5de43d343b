//go:build !linux

package iptables

import "errors"

type nfnlConn struct{}

func openNFNL(string) (*nfnlConn, error) { return nil, errors.New("netlink: not on Linux") }

func (c *nfnlConn) close() {}

func (c *nfnlConn) dumpChain(family, table, chain string, visit func(nfRule) error) (bool, error) {
	return false, errors.New("netlink: not on Linux")
}

func readBlob(netns, family, table string) (*blobTable, func(), error) {
	return nil, nil, errors.New("legacy tables: not on Linux")
}

func (c *nfnlConn) dumpChainRaw(family, table, chain string, fn func([]byte)) (bool, error) {
	return false, errors.New("netlink: not on Linux")
}

func readBlobRaw(netns, family, table string) ([]byte, string, error) {
	return nil, "", errors.New("legacy tables: not on Linux")
}
