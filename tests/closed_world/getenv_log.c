/*
 * An LD_PRELOAD library for tests/closed_world_test.sh: every name a
 * process looks up with getenv() or secure_getenv() is appended, one a
 * line, to the file $CJC_GETENV_LOG names (read from environ directly, so
 * that the logger reads no variable through the calls it logs).  The
 * preload is inherited by every process nvcc starts, so the log is the
 * names nvcc and all of its stages read.  Never sanitized: it is loaded
 * into programs that are not.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

static const char *log_path(void)
{
	extern char **environ;
	for (char **e = environ; e && *e; e++)
		if (!strncmp(*e, "CJC_GETENV_LOG=", 15))
			return *e + 15;
	return NULL;
}

static void log_name(const char *name)
{
	const char *path = log_path();
	if (!path || !name)
		return;
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	char line[512];
	size_t n = strnlen(name, sizeof line - 1);
	memcpy(line, name, n);
	line[n++] = '\n';
	(void)!write(fd, line, n); /* one write: lines of processes at once do not mix */
	close(fd);
}

/* The C library's function sym, found once into *real, called after the log. */
static char *looked_up(char *(**real)(const char *), const char *sym, const char *name)
{
	if (!*real)
		*real = (char *(*)(const char *))dlsym(RTLD_NEXT, sym);
	log_name(name);
	return *real ? (*real)(name) : NULL;
}

char *getenv(const char *name)
{
	static char *(*real)(const char *);
	return looked_up(&real, "getenv", name);
}

char *secure_getenv(const char *name)
{
	static char *(*real)(const char *);
	return looked_up(&real, "secure_getenv", name);
}
