package iptables

import (
	"os"

	"golang.org/x/sys/unix"
)

// growPipe enlarges the pipe a save streams through (1 MiB instead of 64 KiB),
// so iptables-save blocks less often while the parser keeps up.
func growPipe(w *os.File) { _, _ = unix.FcntlInt(w.Fd(), unix.F_SETPIPE_SZ, 1<<20) }
