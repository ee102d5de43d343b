package main

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// getEntriesResult is what `nfbench getentries` prints.
type getEntriesResult struct {
	// Bytes is the nat table's size as IPT_SO_GET_INFO reports it: the
	// buffer IPT_SO_GET_ENTRIES must be given, whole.
	Bytes int `json:"bytes"`
	// BaselineKiB is this process's VmRSS before the buffer was allocated,
	// MaxRSSKiB its VmHWM after the copy.
	BaselineKiB int64 `json:"baselineKiB"`
	MaxRSSKiB   int64 `json:"maxRSSKiB"`
}

// getEntriesChild is the floor of any reader of a legacy table: it does only
// what the kernel interface requires, IPT_SO_GET_INFO for the size and one
// IPT_SO_GET_ENTRIES into a buffer of exactly that size (ip_tables.c
// get_entries rejects any other length), outside Go's heap, and prints the
// size and the process's peak RSS. Nothing is decoded.
func getEntriesChild() int {
	res := getEntriesResult{BaselineKiB: statusKiB("VmRSS:")}
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.IPPROTO_RAW)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer unix.Close(fd)
	const iptSoGetInfo, iptSoGetEntries, infoSize, entriesHdr = 64, 65, 84, 40
	info := make([]byte, infoSize)
	copy(info, "nat")
	if err := getsockopt(fd, iptSoGetInfo, info); err != nil {
		fmt.Fprintln(os.Stderr, "IPT_SO_GET_INFO:", err)
		return 1
	}
	size := int(binary.NativeEndian.Uint32(info[80:]))
	buf, err := unix.Mmap(-1, 0, entriesHdr+size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	copy(buf, "nat")
	binary.NativeEndian.PutUint32(buf[32:], uint32(size))
	if err := getsockopt(fd, iptSoGetEntries, buf); err != nil {
		fmt.Fprintln(os.Stderr, "IPT_SO_GET_ENTRIES:", err)
		return 1
	}
	res.Bytes = size
	res.MaxRSSKiB = statusKiB("VmHWM:")
	_ = unix.Munmap(buf)
	_ = json.NewEncoder(os.Stdout).Encode(res)
	return 0
}

func getsockopt(fd, opt int, buf []byte) error {
	l := uint32(len(buf))
	_, _, e := unix.Syscall6(unix.SYS_GETSOCKOPT, uintptr(fd), uintptr(unix.SOL_IP), uintptr(opt),
		uintptr(unsafe.Pointer(&buf[0])), uintptr(unsafe.Pointer(&l)), 0)
	if e != 0 {
		return e
	}
	return nil
}
