/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* kernel_uapi.h - all the BPF programs take from the kernel: its uapi
 * headers (the context structs sk_lookup, cgroup sock_addr and sockops
 * programs read, bpf_sock, the map types and the helpers' flags) and the
 * socket constants uapi leaves to libc.  No vmlinux.h: the programs read no
 * kernel-internal struct, only contexts whose fields the verifier rewrites
 * (stable ABI), so they need no CO-RE relocation and build the same on any
 * build host, for any architecture (x86_64, arm64: only asm/types.h comes
 * from the target's headers). */
#ifndef RS_KERNEL_UAPI_H
#define RS_KERNEL_UAPI_H

#include <stdbool.h>
#include <stddef.h>

#include <linux/types.h>

#include <linux/bpf.h>
#include <linux/in.h> /* IPPROTO_TCP */

/* From libc's <sys/socket.h>, which a BPF program does not include. */
#define AF_INET 2
#define AF_INET6 10
#define SOCK_STREAM 1

#endif
