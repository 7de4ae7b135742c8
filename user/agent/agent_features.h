/* SPDX-License-Identifier: Apache-2.0 */
/* agent_features.h - the kernel features the agent uses that older kernels
 * lack, probed once at start (features.c), and what it does without each:
 * docs/KERNEL.md's feature table is this list. */
#ifndef RS_AGENT_FEATURES_H
#define RS_AGENT_FEATURES_H

#include <stdbool.h>

enum agent_feature {
	AGENT_FEAT_SK_LOOKUP,            /* Linux 5.9; without it the agent does not start */
	AGENT_FEAT_SO_NETNS_COOKIE,      /* getsockopt, 5.14; without it pods are keyed by cgroup id */
	AGENT_FEAT_SOCKOPS_NETNS_COOKIE, /* bpf_get_netns_cookie in sock_ops, 5.15; without it only
					  * registered listeners' connections are counted */
	AGENT_FEAT_PEERPIDFD,            /* SO_PEERPIDFD, 6.5; without it pidfd_open of the
					  * SO_PEERCRED pid, checked alive after the read */
	AGENT_FEATS,
};

/* Which features this kernel has (index: enum agent_feature). */
struct agent_features {
	bool has[AGENT_FEATS];
};

/* The feature's flag and metric name ("so_netns_cookie"). */
const char *agent_feature_name(enum agent_feature f);

/* What the agent does without the feature, one phrase for the log. */
const char *agent_feature_instead(enum agent_feature f);

/* The feature named name, or -1. */
int agent_feature_parse(const char *name);

/* Asks the kernel for every feature but sk_lookup (the loader's own probe
 * decides that one, and sets has[AGENT_FEAT_SK_LOOKUP]); a feature whose bit
 * is set in missing_mask is reported absent without asking (tests of the
 * fallback on kernels that have it).  Never fails: a probe that cannot
 * answer reports the feature absent. */
void agent_features_probe(unsigned missing_mask, struct agent_features *out);

#endif
