/* app_config.h - included by the program only. */
#pragma once
#define APP_N 4096
#define APP_A 3.0f
