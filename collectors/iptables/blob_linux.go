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
// namespace when asked for it by name. The table lives outside Go's heap
// until release is called (the caller's last use of it): at 10k Services
// the nat table is 50 MB, which would otherwise set the garbage collector's
// pace for the rest of the read and linger until a collection.
func readBlob(netns, family, table string) (t *blobTable, release func(), err error) {
	ipv6 := family == "IPv6"
	var buf []byte
	err = getEntries(netns, ipv6, table, func(b []byte, blob []byte, valid uint32, hook, under [5]uint32) (err error) {
		buf = b
		t, err = parseBlob(blob, ipv6, valid, hook, under)
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	return t, func() { _ = unix.Munmap(buf) }, nil
}

// readBlobRaw returns the table's blob and its hook offsets as "valid
// hook_entry[5] underflow[5]" (the tests record them).
func readBlobRaw(netns, family, table string) ([]byte, string, error) {
	var blob []byte
	var hooks string
	err := getEntries(netns, family == "IPv6", table, func(buf, b []byte, valid uint32, hook, under [5]uint32) error {
		blob = append([]byte(nil), b...)
		_ = unix.Munmap(buf)
		hooks = fmt.Sprint(valid, hook[0], hook[1], hook[2], hook[3], hook[4], under[0], under[1], under[2], under[3], under[4])
		return nil
	})
	return blob, hooks, err
}

// getEntries asks for the table's size (IPT_SO_GET_INFO), then for the
// table into a buffer of exactly that size (IPT_SO_GET_ENTRIES refuses any
// other), mapped outside Go's heap. fn gets the buffer and the entries in
// it and owns the buffer (munmap) when it returns nil.
func getEntries(netns string, ipv6 bool, table string, fn func(buf, blob []byte, valid uint32, hook, under [5]uint32) error) error {
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
		buf, err := unix.Mmap(-1, 0, getEntriesHdr+int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
		if err != nil {
			return fmt.Errorf("IPT_SO_GET_ENTRIES %s: %d bytes: %w", table, size, err)
		}
		copy(buf, table)
		binary.NativeEndian.PutUint32(buf[xtTableNameLen:], size)
		err = getsockopt(fd, level, iptSoGetEntries, buf)
		if err == nil {
			if err := fn(buf, buf[getEntriesHdr:], valid, hook, under); err != nil {
				_ = unix.Munmap(buf)
				return fmt.Errorf("%s table: %w", table, err)
			}
			return nil
		}
		_ = unix.Munmap(buf)
		if errors.Is(err, unix.EAGAIN) && attempt < 5 {
			continue // the table was replaced between the two calls
		}
		if err != nil {
			return fmt.Errorf("IPT_SO_GET_ENTRIES %s: %w", table, err)
		}
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
