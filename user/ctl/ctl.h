/* SPDX-License-Identifier: Apache-2.0 */
/* ctl.h - the subcommands of ringsteerctl.  Each takes the arguments after
 * the program name (argv[0] is the subcommand) and returns the exit status:
 * 0 on success, 1 on a runtime failure, 2 on bad arguments (after one line
 * on stderr). */
#ifndef RS_CTL_H
#define RS_CTL_H

int ctl_ring(int argc, char **argv);
int ctl_place(int argc, char **argv);
int ctl_sim(int argc, char **argv);
int ctl_token(int argc, char **argv);
int ctl_gateways(int argc, char **argv);
int ctl_sessions(int argc, char **argv);
int ctl_drain(int argc, char **argv);
int ctl_init(int argc, char **argv);
int ctl_maps(int argc, char **argv);
int ctl_status(int argc, char **argv);

#endif
