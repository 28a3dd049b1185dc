/*
 * remote_backend.c - what every backend shares with the seam
 * (remote_backend.h): the time left to a request.
 */
#include "remote/remote_backend.h"

long cjc_remote_time_left(const struct cjc_remote_url *u)
{
	return u->deadline_ms ? (long)(u->deadline_ms - cjc_now_ms()) : u->operation_ms;
}
