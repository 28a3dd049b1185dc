#pragma once
#define SAXPY_BLOCK 256
