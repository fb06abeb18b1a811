/* The set calls nvidia-smi -pl / -pm / -e make: the daemon holds the state (nvml_control.py), so a
 * change is seen by every process and survives the daemon's restart, as the driver's does.
 *
 * As the real driver, they want root: another caller gets NO_PERMISSION and nothing is sent. The
 * library checks its own effective uid (the daemon cannot see the caller's over TCP). A value
 * outside the constraints is INVALID_ARGUMENT and changes nothing; a MIG device has none of these
 * settings (NOT_SUPPORTED). On success the snapshot is refetched, so the next query sees it. */
#include <stdio.h>
#include <unistd.h>

#include "twin_nvml.h"

static nvmlReturn_t set_call(nvmlDevice_t d, const char *what, unsigned long value) {
    CT_WHOLE_GPU(d, g);
    if (geteuid() != 0) return ct_leave(NVML_ERROR_NO_PERMISSION);
    char body[64];
    snprintf(body, sizeof body, "%s %d %lu", what, g->index, value);
    nvmlReturn_t r = ct_post(body);
    if (r == NVML_SUCCESS) ct_refresh(1);
    return ct_leave(r);
}

/* Milliwatts within nvmlDeviceGetPowerManagementLimitConstraints (the daemon checks the range). */
NVML_API nvmlReturn_t nvmlDeviceSetPowerManagementLimit(nvmlDevice_t d, unsigned int mw) {
    return set_call(d, "power", mw);
}

NVML_API nvmlReturn_t nvmlDeviceSetPersistenceMode(nvmlDevice_t d, int mode) {
    if (mode != 0 && mode != 1) return NVML_ERROR_INVALID_ARGUMENT;   /* NVML_FEATURE_DISABLED / ENABLED */
    return set_call(d, "persistence", (unsigned long)mode);
}

/* Pending until the GPU is reset or the node reboots, as on the real board. */
NVML_API nvmlReturn_t nvmlDeviceSetEccMode(nvmlDevice_t d, int ecc) {
    if (ecc != 0 && ecc != 1) return NVML_ERROR_INVALID_ARGUMENT;
    return set_call(d, "ecc", (unsigned long)ecc);
}
