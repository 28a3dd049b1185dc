/* light_stencil.h - the local header of light_stencil.cu */
#pragma once
#define LIGHT_STENCIL_N (1 << 20)
#define LIGHT_STENCIL_BLOCK 256
