/* Application clocks (nvidia-smi -ac): the clocks a busy GPU runs at, one of the supported (memory,
 * graphics) pairs of the page's `supclk` line; set by set_calls.c, held by the daemon. */
#include "twin_nvml.h"

#define CHECK(p) do { if (!(p)) return NVML_ERROR_INVALID_ARGUMENT; } while (0)

/* nvmlClockType_t: GRAPHICS 0, SM 1, MEM 2, VIDEO 3. `dflt`: the defaults (the highest pair). */
static nvmlReturn_t app_clock(nvmlDevice_t d, int type, int dflt, unsigned int *mhz) {
    CHECK(mhz);
    CT_WHOLE_GPU(d, g);
    if (type < 0 || type > 3) return ct_leave(NVML_ERROR_INVALID_ARGUMENT);
    if (type == 3) return ct_leave(NVML_ERROR_NOT_SUPPORTED);   /* no video application clock (unverified) */
    unsigned int mem = dflt ? ct_snap.sup_mem[0] : g->app_mem, sm = dflt ? ct_snap.sup_sm_max : g->app_sm;
    *mhz = type == 2 ? mem : sm;
    return ct_leave(NVML_SUCCESS);
}

NVML_API nvmlReturn_t nvmlDeviceGetApplicationsClock(nvmlDevice_t d, int type, unsigned int *mhz) {
    return app_clock(d, type, 0, mhz);
}

NVML_API nvmlReturn_t nvmlDeviceGetDefaultApplicationsClock(nvmlDevice_t d, int type, unsigned int *mhz) {
    return app_clock(d, type, 1, mhz);
}

/* NVML's two-call list: *count in, the room; out, how many; INSUFFICIENT_SIZE if they do not fit. */
static nvmlReturn_t fill(unsigned int *count, unsigned int *out, unsigned int n, const unsigned int *values,
                         unsigned int start, int step) {
    unsigned int room = *count;
    *count = n;
    if (n > room || (n && !out)) return NVML_ERROR_INSUFFICIENT_SIZE;
    for (unsigned int i = 0; i < n; i++) out[i] = values ? values[i] : start - (unsigned int)step * i;
    return NVML_SUCCESS;
}

NVML_API nvmlReturn_t nvmlDeviceGetSupportedMemoryClocks(nvmlDevice_t d, unsigned int *count, unsigned int *mhz) {
    CHECK(count);
    CT_WHOLE_GPU(d, g);
    return ct_leave(fill(count, mhz, ct_snap.nsup_mem, ct_snap.sup_mem, 0, 0));
}

/* Graphics clocks possible with memory at `mem` MHz, highest first; a memory clock not supported is
 * NOT_FOUND (nvml.h). */
NVML_API nvmlReturn_t nvmlDeviceGetSupportedGraphicsClocks(nvmlDevice_t d, unsigned int mem, unsigned int *count,
                                                           unsigned int *mhz) {
    CHECK(count);
    CT_WHOLE_GPU(d, g);
    int known = 0;
    for (unsigned int i = 0; i < ct_snap.nsup_mem; i++) known |= ct_snap.sup_mem[i] == mem;
    if (!known || !ct_snap.sup_sm_step) return ct_leave(NVML_ERROR_NOT_FOUND);
    unsigned int n = (ct_snap.sup_sm_max - ct_snap.sup_sm_min) / ct_snap.sup_sm_step + 1;
    return ct_leave(fill(count, mhz, n, NULL, ct_snap.sup_sm_max, (int)ct_snap.sup_sm_step));
}
