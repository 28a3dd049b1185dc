/* heavy_reduce_by_key.h - the local header of heavy_reduce_by_key.cu */
#pragma once
#define HEAVY_REDUCE_BY_KEY_N (1 << 20)
#define HEAVY_REDUCE_BY_KEY_BLOCK 256
