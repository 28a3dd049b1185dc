/* heavy_sort.h - the local header of heavy_sort.cu */
#pragma once
#define HEAVY_SORT_N (1 << 20)
#define HEAVY_SORT_BLOCK 256
