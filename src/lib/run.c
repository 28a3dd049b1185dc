#include "run.h"

#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fs.h"

extern char **environ;

static int wait_child(pid_t pid)
{
	int status;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return -1;
}

int cjc_run(char *const *argv, int out_fd, int err_fd)
{
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	if (out_fd >= 0)
		posix_spawn_file_actions_adddup2(&fa, out_fd, 1);
	if (err_fd >= 0)
		posix_spawn_file_actions_adddup2(&fa, err_fd, 2);
	pid_t pid;
	int rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (rc) {
		errno = rc;
		return -1;
	}
	return wait_child(pid);
}

int cjc_run_capture(char *const *argv, struct cjc_buf *out)
{
	int fds[2];
	if (pipe2(fds, O_CLOEXEC))
		return -1;
	int devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
	if (devnull >= 0)
		posix_spawn_file_actions_adddup2(&fa, devnull, 2);
	pid_t pid;
	int rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(fds[1]);
	if (devnull >= 0)
		close(devnull);
	if (rc) {
		close(fds[0]);
		errno = rc;
		return -1;
	}
	int read_rc = cjc_read_fd(fds[0], out);
	close(fds[0]);
	int status = wait_child(pid);
	return read_rc ? -1 : status;
}

void cjc_exec(char *const *argv)
{
	fflush(NULL);
	execvp(argv[0], argv);
}
