/* Running processes: the twin's leases. Each leased device is one compute process (the lease's pid,
 * the pid the driver prints in its Xid lines); a MIG device lists only its own. */
#include <string.h>

#include "twin_nvml.h"

#define MIB 1048576ULL

/* The processes of device d into infos (of `size` bytes each, v1 or v2/v3), NVML's two-call way:
 * *count in is the room, out the number there are; INSUFFICIENT_SIZE when they do not fit. */
static nvmlReturn_t list(nvmlDevice_t d, unsigned int *count, void *infos, size_t size) {
    if (!count) return NVML_ERROR_INVALID_ARGUMENT;
    CT_DEVICE(d, g, m);
    unsigned int n = 0;
    for (int i = 0; i < g->nproc; i++) {
        const ct_proc *p = &g->proc[i];
        if (m && (p->gi != m->gi || p->ci != m->id)) continue;
        if (infos && n < *count) {
            nvmlProcessInfo_t v = {p->pid, p->used_mib * MIB, p->gi, p->ci};
            memcpy((char *)infos + n * size, &v, size);
        }
        n++;
    }
    nvmlReturn_t r = (n > *count || (n && !infos)) ? NVML_ERROR_INSUFFICIENT_SIZE : NVML_SUCCESS;
    *count = n;
    return ct_leave(r);
}

/* Graphics and MPS processes: the twin runs none. */
static nvmlReturn_t none(nvmlDevice_t d, unsigned int *count) {
    if (!count) return NVML_ERROR_INVALID_ARGUMENT;
    CT_DEVICE(d, g, m);
    (void)m;
    *count = 0;
    return ct_leave(NVML_SUCCESS);
}

NVML_API nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t d, unsigned int *c, nvmlProcessInfo_t *p) {
    return list(d, c, p, sizeof *p);
}
NVML_API nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t d, unsigned int *c, nvmlProcessInfo_t *p) {
    return list(d, c, p, sizeof *p);
}
NVML_API nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t d, unsigned int *c, nvmlProcessInfo_v1_t *p) {
    return list(d, c, p, sizeof *p);
}
NVML_API nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v3(nvmlDevice_t d, unsigned int *c, nvmlProcessInfo_t *p) {
    (void)p;
    return none(d, c);
}
NVML_API nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v2(nvmlDevice_t d, unsigned int *c, nvmlProcessInfo_t *p) {
    (void)p;
    return none(d, c);
}
NVML_API nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses(nvmlDevice_t d, unsigned int *c, nvmlProcessInfo_v1_t *p) {
    (void)p;
    return none(d, c);
}
NVML_API nvmlReturn_t nvmlDeviceGetMPSComputeRunningProcesses_v3(nvmlDevice_t d, unsigned int *c, nvmlProcessInfo_t *p) {
    (void)p;
    return none(d, c);
}

/* Per-process utilization samples: the twin keeps none, as a driver with no sample in the window
 * answers (nvitop shows its %SM columns as 0). */
NVML_API nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t d, void *samples, unsigned int *count,
                                                      unsigned long long since) {
    (void)samples; (void)since;
    if (!count) return NVML_ERROR_INVALID_ARGUMENT;
    CT_WHOLE_GPU(d, g);
    *count = 0;
    return ct_leave(NVML_ERROR_NOT_FOUND);
}
