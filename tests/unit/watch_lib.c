/* What watch_test binds (compile/watch.h): a library that calls the C
 * library's file functions as NVRTC does, through its PLT (JUMP_SLOT) and
 * through an address taken (GLOB_DAT); with WATCH_DATA, one that holds
 * open's address in its data (an absolute relocation, not understood). */
#include <fcntl.h>
#include <unistd.h>

#ifdef WATCH_DATA
int (*const watch_open_in_data)(const char *, int, ...) = open;
#else
int watch_open(const char *path)
{
	int fd = open(path, O_RDONLY);
	if (fd >= 0)
		close(fd);
	return fd;
}

int watch_unlink(const char *path)
{
	return unlink(path);
}

typedef int (*open_fn)(const char *, int, ...);

open_fn watch_open_address(void)
{
	return open;
}
#endif
