/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* standin_lb.h - the stand-in socket-LB's map values, shared by
 * standin_lb.bpf.c and its loader standin_lb.c. */
#ifndef RS_STANDIN_LB_H
#define RS_STANDIN_LB_H

#define LB_BACKENDS_MAX 16

struct lb_svc {
	__u32 addr; /* network order */
	__u32 port; /* network order, in the low 16 bits (as bpf_sock_addr's user_port) */
	__u32 n;    /* backends in use */
};

struct lb_backend {
	__u32 addr;
	__u32 port;
};

#endif
