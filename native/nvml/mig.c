/* MIG: the mode of a GPU and handles for its MIG devices (one per compute instance). */
#include "twin_nvml.h"

#define CHECK(p) do { if (!(p)) return NVML_ERROR_INVALID_ARGUMENT; } while (0)

NVML_API nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t d, unsigned int *current, unsigned int *pending) {
    CHECK(current && pending);
    CT_WHOLE_GPU(d, g);
    *current = g->mig;
    *pending = g->mig_pend;   /* nvmlDeviceSetMigMode's, while the GPU was in use (mig_create.c) */
    return ct_leave(NVML_SUCCESS);
}

NVML_API nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t d, unsigned int *count) {
    CHECK(count);
    CT_WHOLE_GPU(d, g);
    *count = g->mig ? NVML_MAX_MIG_DEVICES : 0;
    return ct_leave(NVML_SUCCESS);
}

NVML_API nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t d, unsigned int index, nvmlDevice_t *mig) {
    CHECK(mig);
    CT_WHOLE_GPU(d, g);
    if (!g->mig) return ct_leave(NVML_ERROR_INVALID_ARGUMENT);
    if (index >= NVML_MAX_MIG_DEVICES) return ct_leave(NVML_ERROR_INVALID_ARGUMENT);
    if (index >= (unsigned int)g->nci) return ct_leave(NVML_ERROR_NOT_FOUND);
    *mig = ct_handle(d->gpu, (int)index);
    return ct_leave(NVML_SUCCESS);
}

NVML_API nvmlReturn_t nvmlDeviceGetDeviceHandleFromMigDeviceHandle(nvmlDevice_t d, nvmlDevice_t *parent) {
    CHECK(parent);
    CT_DEVICE(d, g, m);
    if (!m) return ct_leave(NVML_ERROR_INVALID_ARGUMENT);
    *parent = ct_handle(d->gpu, -1);
    return ct_leave(NVML_SUCCESS);
}

NVML_API nvmlReturn_t nvmlDeviceIsMigDeviceHandle(nvmlDevice_t d, unsigned int *is_mig) {
    CHECK(is_mig);
    CT_DEVICE(d, g, m);
    *is_mig = m != NULL;
    return ct_leave(NVML_SUCCESS);
}

NVML_API nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t d, unsigned int *id) {
    CHECK(id);
    CT_DEVICE(d, g, m);
    if (!m) return ct_leave(NVML_ERROR_NOT_SUPPORTED);
    *id = m->gi;
    return ct_leave(NVML_SUCCESS);
}

NVML_API nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t d, unsigned int *id) {
    CHECK(id);
    CT_DEVICE(d, g, m);
    if (!m) return ct_leave(NVML_ERROR_NOT_SUPPORTED);
    *id = m->id;
    return ct_leave(NVML_SUCCESS);
}
