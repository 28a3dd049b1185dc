/* medium_device_scan.h - the local header of medium_device_scan.cu */
#pragma once
#define MEDIUM_DEVICE_SCAN_N (1 << 20)
#define MEDIUM_DEVICE_SCAN_BLOCK 256
