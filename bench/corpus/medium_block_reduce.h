/* medium_block_reduce.h - the local header of medium_block_reduce.cu */
#pragma once
#define MEDIUM_BLOCK_REDUCE_N (1 << 20)
#define MEDIUM_BLOCK_REDUCE_BLOCK 256
