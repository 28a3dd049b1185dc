/* light_transpose.h - the local header of light_transpose.cu */
#pragma once
#define LIGHT_TRANSPOSE_N (1 << 20)
#define LIGHT_TRANSPOSE_BLOCK 256
