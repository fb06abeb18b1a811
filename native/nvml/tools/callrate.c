/* The library's own cost of one NVML call, without Python: nvmlDeviceGetTemperature in a loop for
 * SECONDS, from a snapshot (default TTL) or refetching each call (CLUSTERTWIN_NVML_TTL_MS=0).
 * Prints calls per second. Used by bench/nvml.py.   usage: callrate SECONDS */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "../twin_nvml.h"

nvmlReturn_t nvmlInit_v2(void);
nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int, nvmlDevice_t *);
nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t, int, unsigned int *);

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
    double seconds = argc > 1 ? atof(argv[1]) : 1.0;
    nvmlDevice_t h;
    unsigned int temp;
    if (nvmlInit_v2() || nvmlDeviceGetHandleByIndex_v2(0, &h)) {
        fprintf(stderr, "callrate: nvmlInit or the handle failed\n");
        return 1;
    }
    long n = 0;
    double t0 = now_s(), elapsed;
    while ((elapsed = now_s() - t0) < seconds) {
        for (int i = 0; i < 1000; i++)
            if (nvmlDeviceGetTemperature(h, 0, &temp)) return 1;
        n += 1000;
    }
    printf("%.0f\n", n / elapsed);
    return 0;
}
