/* The set calls nvidia-smi -pl / -pm / -e / -ac / -rac make: the daemon holds the state (nvml_control.py), so a
 * change is seen by every process and survives the daemon's restart, as the driver's does.
 *
 * As the real driver, they want root: another caller gets NO_PERMISSION and nothing is sent. The
 * library checks its own effective uid (the daemon cannot see the caller's over TCP). A value
 * outside the constraints is INVALID_ARGUMENT and changes nothing; a MIG device has none of these
 * settings (NOT_SUPPORTED). On success the snapshot is refetched, so the next query sees it. */
#include <stdio.h>
#include <unistd.h>

#include "twin_nvml.h"

/* `what GPU value [value2]` to the daemon (services/gpu_node/nvml_control.py). value2 < 0: none;
 * value < 0: the application clocks' defaults (the first supported pair). */
static nvmlReturn_t set_call(nvmlDevice_t d, const char *what, long value, long value2) {
    CT_WHOLE_GPU(d, g);
    if (geteuid() != 0) return ct_leave(NVML_ERROR_NO_PERMISSION);
    if (value < 0) {
        value = ct_snap.sup_mem[0];
        value2 = ct_snap.sup_sm_max;
    }
    char body[64];
    if (value2 < 0) snprintf(body, sizeof body, "%s %d %ld", what, g->index, value);
    else snprintf(body, sizeof body, "%s %d %ld %ld", what, g->index, value, value2);
    nvmlReturn_t r = ct_post(body);
    if (r == NVML_SUCCESS) ct_refresh(1);
    return ct_leave(r);
}

/* Milliwatts within nvmlDeviceGetPowerManagementLimitConstraints (the daemon checks the range). */
NVML_API nvmlReturn_t nvmlDeviceSetPowerManagementLimit(nvmlDevice_t d, unsigned int mw) {
    return set_call(d, "power", (long)mw, -1);
}

NVML_API nvmlReturn_t nvmlDeviceSetPersistenceMode(nvmlDevice_t d, int mode) {
    if (mode != 0 && mode != 1) return NVML_ERROR_INVALID_ARGUMENT;   /* NVML_FEATURE_DISABLED / ENABLED */
    return set_call(d, "persistence", mode, -1);
}

/* Pending until the GPU is reset or the node reboots, as on the real board. */
NVML_API nvmlReturn_t nvmlDeviceSetEccMode(nvmlDevice_t d, int ecc) {
    if (ecc != 0 && ecc != 1) return NVML_ERROR_INVALID_ARGUMENT;
    return set_call(d, "ecc", ecc, -1);
}

/* A supported (memory, graphics) pair (nvmlDeviceGetSupportedMemoryClocks / ...GraphicsClocks); a
 * busy GPU then runs at it (clock-event reason ApplicationsClocksSetting below the maximum). */
NVML_API nvmlReturn_t nvmlDeviceSetApplicationsClocks(nvmlDevice_t d, unsigned int mem, unsigned int sm) {
    return set_call(d, "appclocks", (long)mem, (long)sm);
}

NVML_API nvmlReturn_t nvmlDeviceResetApplicationsClocks(nvmlDevice_t d) {
    return set_call(d, "appclocks", -1, -1);
}
