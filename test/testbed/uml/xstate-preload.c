/*
 * xstate-preload.so: LD_PRELOADed into Debian's user-mode Linux 6.1 kernel
 * process so that it runs on hosts whose CPUs have AMX.
 *
 * UML 6.1 saves and restores a guest process's extended CPU state with
 * PTRACE_GETREGSET / PTRACE_SETREGSET (NT_X86_XSTATE) through a buffer of a
 * fixed size: 2,696 bytes, the XSAVE area of a CPU with AVX-512. The host
 * kernel accepts a SETREGSET only when the buffer is exactly the size of its
 * whole XSAVE area (arch/x86/kernel/fpu/regset.c, xstateregs_set: "count !=
 * fpu_user_cfg.max_size" is -EFAULT); with AMX that area is 11,008 bytes
 * (XTILECFG and XTILEDATA follow PKRU), so every SETREGSET fails and the
 * guest's init dies at its first context switch ("ptrace set fp regs failed,
 * errno = 14", "Attempted to kill init").
 *
 * The state UML keeps is whole up to its buffer's end: GETREGSET copies out
 * the first 2,696 bytes in the standard format, header included. The
 * components past that end (AMX's) are ones no guest process can use: the host
 * enables AMX for a process only after arch_prctl(ARCH_REQ_XCOMP_PERM), which
 * UML never asks for, so they are in their initial state. This wrapper passes
 * the kernel a buffer of the host's size: UML's bytes, zeros after them, and
 * those components' bits cleared in XSTATE_BV, which tells the kernel to put
 * them in their initial state. Every other ptrace call goes through unchanged;
 * on a host whose XSAVE area fits UML's buffer nothing is changed at all.
 */
#define _GNU_SOURCE
#include <cpuid.h>
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>

typedef long (*ptrace_fn)(enum __ptrace_request, pid_t, void *, void *);

static ptrace_fn real_ptrace;
static size_t host_xstate_size;

/*
 * UML passes the same buffer size on every call, once per guest context
 * switch: the mask for it is computed once (CPUID traps to the hypervisor
 * on a virtual machine, and sixty-two of them a switch made the guest three
 * times slower), and so is the full-size buffer, whose tail stays zero.
 */
static size_t mask_len;
static uint64_t mask;
static __thread void *full_buf;

/* The XSTATE_BV offset in the XSAVE header (the legacy area is 512 bytes). */
enum { xstate_bv_offset = 512 };

/*
 * components_past returns the XSTATE_BV bits of the components whose
 * standard-format area (CPUID leaf 0xD, sub-leaf i: EAX size, EBX offset)
 * ends past len.
 */
static uint64_t components_past(size_t len)
{
	uint64_t mask = 0;
	unsigned int i, size, offset, ecx, edx;

	for (i = 2; i < 64; i++) {
		__cpuid_count(0xd, i, size, offset, ecx, edx);
		if (size != 0 && (size_t)offset + size > len)
			mask |= 1ULL << i;
	}
	return mask;
}

long ptrace(enum __ptrace_request req, ...)
{
	va_list ap;
	pid_t pid;
	void *addr, *data;
	struct iovec *iov, full;
	uint64_t bv;

	va_start(ap, req);
	pid = va_arg(ap, pid_t);
	addr = va_arg(ap, void *);
	data = va_arg(ap, void *);
	va_end(ap);

	if (!real_ptrace)
		real_ptrace = (ptrace_fn)dlsym(RTLD_NEXT, "ptrace");
	if (req != PTRACE_SETREGSET || (long)addr != NT_X86_XSTATE)
		return real_ptrace(req, pid, addr, data);

	iov = data;
	if (host_xstate_size == 0) {
		/* GETREGSET shortens iov_len to the size of the whole area. */
		struct iovec probe = { malloc(1 << 16), 1 << 16 };

		if (probe.iov_base != NULL &&
		    real_ptrace(PTRACE_GETREGSET, pid, addr, &probe) == 0)
			host_xstate_size = probe.iov_len;
		free(probe.iov_base);
	}
	if (host_xstate_size == 0 || iov->iov_len >= host_xstate_size ||
	    iov->iov_len < xstate_bv_offset + sizeof(bv))
		return real_ptrace(req, pid, addr, data);

	if (full_buf == NULL) {
		full_buf = calloc(1, host_xstate_size);
		if (full_buf == NULL) {
			errno = ENOMEM;
			return -1;
		}
	}
	if (mask_len != iov->iov_len) {
		mask = components_past(iov->iov_len);
		mask_len = iov->iov_len;
	}
	full.iov_len = host_xstate_size;
	full.iov_base = full_buf;
	memcpy(full.iov_base, iov->iov_base, iov->iov_len);
	memset((char *)full.iov_base + iov->iov_len, 0, host_xstate_size - iov->iov_len);
	memcpy(&bv, (char *)full.iov_base + xstate_bv_offset, sizeof(bv));
	bv &= ~mask;
	memcpy((char *)full.iov_base + xstate_bv_offset, &bv, sizeof(bv));
	return real_ptrace(req, pid, addr, &full);
}
