//go:build linux

package iptables

import (
	"encoding/binary"
	"errors"
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// IPT_SO_GET_INFO and IPT_SO_GET_ENTRIES (IPT_BASE_CTL 64 and 65; the
// IP6T_ ones have the same values at level SOL_IPV6).
const (
	iptSoGetInfo    = 64
	iptSoGetEntries = 65
	xtTableNameLen  = 32
	getInfoSize     = 84 // struct ipt_getinfo
	getEntriesHdr   = 40 // struct ipt_get_entries up to entrytable (8-aligned)
)

// readBlob fetches one legacy table the way iptables-legacy-save does, from
// a raw socket opened in netns. The caller must have seen the table in
// /proc/net/ip_tables_names: the kernel instantiates a missing table in the
// namespace when asked for it by name.
func readBlob(netns, family, table string) (*blobTable, error) {
	ipv6 := family == "IPv6"
	var t *blobTable
	err := getEntries(netns, ipv6, table, func(blob []byte, valid uint32, hook, under [5]uint32) (err error) {
		t, err = parseBlob(blob, ipv6, valid, hook, under)
		return err
	})
	return t, err
}

// readBlobRaw returns the table's blob and its hook offsets as "valid
// hook_entry[5] underflow[5]" (the tests record them).
func readBlobRaw(netns, family, table string) ([]byte, string, error) {
	var blob []byte
	var hooks string
	err := getEntries(netns, family == "IPv6", table, func(b []byte, valid uint32, hook, under [5]uint32) error {
		blob = b
		hooks = fmt.Sprint(valid, hook[0], hook[1], hook[2], hook[3], hook[4], under[0], under[1], under[2], under[3], under[4])
		return nil
	})
	return blob, hooks, err
}

func getEntries(netns string, ipv6 bool, table string, fn func(blob []byte, valid uint32, hook, under [5]uint32) error) error {
	fd, err := rawSocketIn(netns, ipv6)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	level := unix.SOL_IP
	if ipv6 {
		level = unix.SOL_IPV6
	}
	for attempt := 0; ; attempt++ {
		info := make([]byte, getInfoSize)
		copy(info, table)
		if err := getsockopt(fd, level, iptSoGetInfo, info); err != nil {
			return fmt.Errorf("IPT_SO_GET_INFO %s: %w", table, err)
		}
		valid := binary.NativeEndian.Uint32(info[32:])
		var hook, under [5]uint32
		for h := 0; h < 5; h++ {
			hook[h] = binary.NativeEndian.Uint32(info[36+4*h:])
			under[h] = binary.NativeEndian.Uint32(info[56+4*h:])
		}
		size := binary.NativeEndian.Uint32(info[80:])
		buf := make([]byte, getEntriesHdr+int(size))
		copy(buf, table)
		binary.NativeEndian.PutUint32(buf[xtTableNameLen:], size)
		err := getsockopt(fd, level, iptSoGetEntries, buf)
		if errors.Is(err, unix.EAGAIN) && attempt < 5 {
			continue // the table was replaced between the two calls
		}
		if err != nil {
			return fmt.Errorf("IPT_SO_GET_ENTRIES %s: %w", table, err)
		}
		return fn(buf[getEntriesHdr:], valid, hook, under)
	}
}

func getsockopt(fd, level, opt int, buf []byte) error {
	l := uint32(len(buf))
	_, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), uintptr(level), uintptr(opt),
		uintptr(unsafe.Pointer(&buf[0])), uintptr(unsafe.Pointer(&l)), 0)
	if e != 0 {
		return e
	}
	return nil
}

func rawSocketIn(netns string, ipv6 bool) (int, error) {
	domain := unix.AF_INET
	if ipv6 {
		domain = unix.AF_INET6
	}
	return inNetNS(netns, func() (int, error) {
		return unix.Socket(domain, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.IPPROTO_RAW)
	})
}
