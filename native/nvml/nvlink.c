/* NVLink: 18 links per H100, each to one of the baseboard's four NVSwitches. */
#include "twin_nvml.h"

#define CHECK(p) do { if (!(p)) return NVML_ERROR_INVALID_ARGUMENT; } while (0)

/* The link, or INVALID_ARGUMENT past the GPU's links (the lock is released on error). */
static nvmlReturn_t link_of(nvmlDevice_t d, unsigned int link, const ct_link **l) {
    CT_WHOLE_GPU(d, g);
    if (link >= (unsigned int)g->nlinks) return ct_leave(NVML_ERROR_INVALID_ARGUMENT);
    *l = &g->link[link];
    return NVML_SUCCESS;
}

NVML_API nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t d, unsigned int link, int *active) {
    CHECK(active);
    const ct_link *l;
    nvmlReturn_t r = link_of(d, link, &l);
    if (r) return r;
    *active = l->up ? 1 : 0;   /* NVML_FEATURE_ENABLED / DISABLED */
    return ct_leave(NVML_SUCCESS);
}

NVML_API nvmlReturn_t nvmlDeviceGetNvLinkVersion(nvmlDevice_t d, unsigned int link, unsigned int *version) {
    CHECK(version);
    const ct_link *l;
    nvmlReturn_t r = link_of(d, link, &l);
    if (r) return r;
    *version = 4;   /* NVLink 4 */
    return ct_leave(NVML_SUCCESS);
}

/* nvmlNvLinkErrorCounter_t: DL_REPLAY 0, DL_RECOVERY 1, DL_CRC_FLIT 2, DL_CRC_DATA 3, DL_ECC_DATA 4. */
NVML_API nvmlReturn_t nvmlDeviceGetNvLinkErrorCounter(nvmlDevice_t d, unsigned int link, int counter,
                                                      unsigned long long *value) {
    CHECK(value);
    const ct_link *l;
    nvmlReturn_t r = link_of(d, link, &l);
    if (r) return r;
    if (counter < 0 || counter > 4) return ct_leave(NVML_ERROR_INVALID_ARGUMENT);
    *value = counter == 0 ? l->replay : counter == 1 ? l->recovery : counter == 2 ? l->crc : 0;
    return ct_leave(NVML_SUCCESS);
}
