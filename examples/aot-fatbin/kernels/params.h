/* params.h - shared by the kernels and the host program. */
#pragma once
#define AOT_N 100000
#define AOT_BLOCK 256
#define AOT_A 2.5f
