/* SPDX-License-Identifier: Apache-2.0 */
/* bench/steer_exec.c - run a command as a member the node agent steers.
 *
 * usage: steer_exec MEMBER_SOCKET MEMBER_ID CMD [ARGS...]
 *
 * Registers MEMBER_ID with the agent's member socket, runs CMD while the
 * registration is open, then withdraws it and exits with CMD's status.  The
 * agent keys a registration on the caller's netns cookie (then its cgroup),
 * never on the message, so every connect() CMD makes to a steered Service
 * from this netns is rewritten by the agent's connect4/connect6 program:
 * iperf3 and sockperf, which cannot speak the registration themselves,
 * measure the data path of a steered connection (bench/compare/datapath.sh).
 * Status 2 for bad usage, 3 when the agent refused or is absent, 127 when CMD
 * could not be run.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "registration/agent_reg.h"

int main(int argc, char **argv)
{
	struct rs_agent_reg_reply reply = { 0 };
	int link = -1, status = 0, err;
	pid_t pid;

	if (argc < 4) {
		fprintf(stderr, "usage: steer_exec MEMBER_SOCKET MEMBER_ID CMD [ARGS...]\n");
		return 2;
	}
	/* A registration from this netns that just ended may not be forgotten
	 * yet (the agent reads its EOF on its own loop): asked again, 2 s at most. */
	for (int tries = 0;; tries++) {
		err = rs_agent_member_register(argv[1], argv[2], 2000, &link, &reply);
		if (err != -EACCES || reply.reason != RS_AGENT_REG_KEY_IN_USE || tries >= 200)
			break;
		nanosleep(&(struct timespec){ 0, 10 * 1000 * 1000 }, NULL);
	}
	if (err) {
		fprintf(stderr, "steer_exec: register %s with %s: %s%s%s\n", argv[2], argv[1], strerror(-err),
			err == -EACCES ? ": " : "", err == -EACCES ? reply.text : "");
		return 3;
	}
	pid = fork();
	if (pid < 0) {
		fprintf(stderr, "steer_exec: fork: %s\n", strerror(errno));
		close(link);
		return 127;
	}
	if (pid == 0) {
		close(link); /* the parent holds the registration; CMD must not keep it open */
		execvp(argv[3], argv + 3);
		fprintf(stderr, "steer_exec: %s: %s\n", argv[3], strerror(errno));
		_exit(127);
	}
	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR) {
			status = 127 << 8;
			break;
		}
	}
	close(link);
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	return 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
}
