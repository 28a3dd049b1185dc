/* heavy_transform_reduce.h - the local header of heavy_transform_reduce.cu */
#pragma once
#define HEAVY_TRANSFORM_REDUCE_N (1 << 20)
#define HEAVY_TRANSFORM_REDUCE_BLOCK 256
