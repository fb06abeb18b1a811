/* Init and shutdown, system queries, device count and handles. */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "twin_nvml.h"

static int refcount;   /* nvmlInit may be called several times; each needs its nvmlShutdown */

NVML_API nvmlReturn_t nvmlInitWithFlags(unsigned int flags) {
    (void)flags;
    pthread_mutex_lock(&ct_lock);
    nvmlReturn_t r = ct_refresh(1);   /* no daemon: as with no driver loaded */
    if (r == NVML_SUCCESS) {
        refcount++;
        ct_initialized = 1;
    }
    return ct_leave(r);
}

NVML_API nvmlReturn_t nvmlInit_v2(void) { return nvmlInitWithFlags(0); }
NVML_API nvmlReturn_t nvmlInit(void) { return nvmlInitWithFlags(0); }

NVML_API nvmlReturn_t nvmlShutdown(void) {
    pthread_mutex_lock(&ct_lock);
    if (!ct_initialized) return ct_leave(NVML_ERROR_UNINITIALIZED);
    if (--refcount == 0) ct_initialized = 0;
    return ct_leave(NVML_SUCCESS);
}

NVML_API const char *nvmlErrorString(nvmlReturn_t r) {
    switch (r) {
    case NVML_SUCCESS: return "Success";
    case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
    case NVML_ERROR_NO_PERMISSION: return "Insufficient Permissions";
    case NVML_ERROR_ALREADY_INITIALIZED: return "Already Initialized";
    case NVML_ERROR_NOT_FOUND: return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
    case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
    case NVML_ERROR_TIMEOUT: return "Timeout";
    case NVML_ERROR_FUNCTION_NOT_FOUND: return "Function Not Found";
    case NVML_ERROR_GPU_IS_LOST: return "GPU is lost";
    case NVML_ERROR_LIB_RM_VERSION_MISMATCH: return "RM has detected an NVML/RM version mismatch.";
    case NVML_ERROR_NO_DATA: return "No data";
    case NVML_ERROR_ARGUMENT_VERSION_MISMATCH: return "Argument version mismatch";
    default: return "Unknown Error";
    }
}

NVML_API nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length) {
    nvmlReturn_t r = ct_enter();
    return r ? r : ct_leave(ct_copy_str(version, length, ct_snap.driver));
}

NVML_API nvmlReturn_t nvmlSystemGetNVMLVersion(char *version, unsigned int length) {
    nvmlReturn_t r = ct_enter();
    if (r) return r;
    char v[48];
    snprintf(v, sizeof v, "%d.%s", ct_snap.cuda / 1000, ct_snap.driver);   /* "12.550.90.07" */
    return ct_leave(ct_copy_str(version, length, v));
}

NVML_API nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *v) {
    if (!v) return NVML_ERROR_INVALID_ARGUMENT;
    nvmlReturn_t r = ct_enter();
    if (r) return r;
    *v = ct_snap.cuda;
    return ct_leave(NVML_SUCCESS);
}

NVML_API nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *v) { return nvmlSystemGetCudaDriverVersion(v); }

NVML_API nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count) {
    if (!count) return NVML_ERROR_INVALID_ARGUMENT;
    nvmlReturn_t r = ct_enter();
    if (r) return r;
    *count = ct_snap.ngpu;
    return ct_leave(NVML_SUCCESS);
}

NVML_API nvmlReturn_t nvmlDeviceGetCount(unsigned int *count) { return nvmlDeviceGetCount_v2(count); }

/* A handle of a visible GPU: a lost one (Xid 79) has none, as nvidia-smi's "Unable to determine the
 * device handle for GPU ...: GPU is lost". */
static nvmlReturn_t handle_of(int k, nvmlDevice_t *device) {
    if (ct_snap.gpu[k].lost) return ct_leave(NVML_ERROR_GPU_IS_LOST);
    *device = ct_handle(k, -1);
    return ct_leave(NVML_SUCCESS);
}

NVML_API nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device) {
    nvmlReturn_t r = ct_enter();
    if (r) return r;
    if (!device || index >= (unsigned int)ct_snap.ngpu) return ct_leave(NVML_ERROR_INVALID_ARGUMENT);
    return handle_of((int)index, device);
}

NVML_API nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t *device) {
    return nvmlDeviceGetHandleByIndex_v2(index, device);
}

/* The GPU (or MIG device) whose `field` equals `key`; NOT_FOUND if none. */
static nvmlReturn_t handle_by(const char *key, int field, nvmlDevice_t *device) {
    if (!key || !device) return NVML_ERROR_INVALID_ARGUMENT;
    nvmlReturn_t r = ct_enter();
    if (r) return r;
    for (int k = 0; k < ct_snap.ngpu; k++) {
        const ct_gpu *g = &ct_snap.gpu[k];
        const char *v = field == 0 ? g->uuid : field == 1 ? g->serial : g->bus;
        /* A bus id matches in either form: 00000000:18:00.0 or the legacy 0000:18:00.0. */
        if (!strcasecmp(v, key) || (field == 2 && !strcasecmp(v + 4, key))) return handle_of(k, device);
        for (int m = 0; field == 0 && m < g->nci; m++)
            if (!strcmp(g->ci[m].uuid, key)) {
                *device = ct_handle(k, m);
                return ct_leave(g->lost ? NVML_ERROR_GPU_IS_LOST : NVML_SUCCESS);
            }
    }
    return ct_leave(NVML_ERROR_NOT_FOUND);
}

NVML_API nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *device) {
    return handle_by(uuid, 0, device);
}

NVML_API nvmlReturn_t nvmlDeviceGetHandleBySerial(const char *serial, nvmlDevice_t *device) {
    return handle_by(serial, 1, device);
}

NVML_API nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *bus, nvmlDevice_t *device) {
    return handle_by(bus, 2, device);
}

NVML_API nvmlReturn_t nvmlDeviceGetHandleByPciBusId(const char *bus, nvmlDevice_t *device) {
    return handle_by(bus, 2, device);
}
