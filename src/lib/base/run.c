#include "base/run.h"

#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/oom.h"

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

struct child {
	pid_t pid;
	int out; /* the read end of its output */
};

/* A child whose output is no longer read: closed, it ends on its next write. */
static void reap(void *arg)
{
	const struct child *c = arg;
	close(c->out);
	(void)wait_child(c->pid);
}

bool cjc_secret_variable(const char *name, size_t len)
{
	static const char *const secrets[] = { "CJC_REMOTE" }; /* passwords in URLs */
	for (size_t i = 0; i < sizeof secrets / sizeof *secrets; i++)
		if (strlen(secrets[i]) == len && !strncmp(secrets[i], name, len))
			return true;
	return false;
}

/* Whether an environment entry "NAME=..." is one that a change names, or a
 * secret that no child may see. */
static bool changed(const char *entry, char *const *changes)
{
	size_t n = strcspn(entry, "=");
	if (cjc_secret_variable(entry, n))
		return true;
	for (; changes && *changes; changes++)
		if (strcspn(*changes, "=") == n && !strncmp(*changes, entry, n))
			return true;
	return false;
}

/* This process's environment with the changes made, as an envp (env owns it). */
static char **child_environment(char *const *changes, struct cjc_strvec *env)
{
	static char *none[] = { NULL };
	for (char **e = environ; *e; e++)
		if (!changed(*e, changes))
			cjc_strvec_push(env, *e);
	for (; changes && *changes; changes++)
		if (strchr(*changes, '='))
			cjc_strvec_push(env, *changes);
	return env->v ? env->v : none;
}

static void redirect(posix_spawn_file_actions_t *fa, int fd, int target)
{
	if (fd == CJC_RUN_NULL)
		posix_spawn_file_actions_addopen(fa, target, "/dev/null", target ? O_WRONLY : O_RDONLY, 0);
	else if (fd >= 0)
		posix_spawn_file_actions_adddup2(fa, fd, target);
}

int cjc_run_child(const struct cjc_child *c)
{
	posix_spawn_file_actions_t fa;
	struct cjc_strvec env = CJC_STRVEC_INIT;
	posix_spawn_file_actions_init(&fa);
	redirect(&fa, c->in_fd, 0);
	redirect(&fa, c->out_fd, 1);
	redirect(&fa, c->err_fd, 2);
	if (c->dir)
		posix_spawn_file_actions_addchdir_np(&fa, c->dir);
	char **envp = child_environment(c->env, &env);
	pid_t pid;
	int rc = posix_spawnp(&pid, c->argv[0], &fa, NULL, c->argv, envp);
	posix_spawn_file_actions_destroy(&fa);
	cjc_strvec_clear(&env);
	if (rc) {
		errno = rc;
		return -1;
	}
	return wait_child(pid);
}

int cjc_run(char *const *argv, int out_fd, int err_fd)
{
	struct cjc_child c = CJC_CHILD_INIT(argv);
	c.out_fd = out_fd;
	c.err_fd = err_fd;
	return cjc_run_child(&c);
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
	struct cjc_strvec env = CJC_STRVEC_INIT;
	char **envp = child_environment(NULL, &env);
	pid_t pid;
	int rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, envp);
	posix_spawn_file_actions_destroy(&fa);
	cjc_strvec_clear(&env);
	close(fds[1]);
	if (devnull >= 0)
		close(devnull);
	if (rc) {
		close(fds[0]);
		errno = rc;
		return -1;
	}
	struct child c = { pid, fds[0] };
	cjc_oom_undo_push(reap, &c); /* its output may outgrow the memory (oom.h) */
	int read_rc = cjc_read_fd(fds[0], out);
	cjc_oom_undo_pop(reap, &c);
	close(fds[0]);
	int status = wait_child(pid);
	return read_rc ? -1 : status;
}

void cjc_exec(char *const *argv)
{
	struct cjc_strvec env = CJC_STRVEC_INIT;
	char **envp = child_environment(NULL, &env);
	fflush(NULL);
	execvpe(argv[0], argv, envp);
	int e = errno;
	cjc_strvec_clear(&env);
	errno = e;
}
