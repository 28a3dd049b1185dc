/* light_saxpy.h - the local header of light_saxpy.cu */
#pragma once
#define LIGHT_SAXPY_N (1 << 20)
#define LIGHT_SAXPY_BLOCK 256
