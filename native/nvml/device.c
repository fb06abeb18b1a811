/* Device queries: identity, memory, utilization, thermals and power, clocks, ECC, PCIe. What an
 * H100 SXM does not have (fans, NVENC, retired pages: it remaps rows) answers NOT_SUPPORTED. */
#include <stdio.h>
#include <string.h>

#include "twin_nvml.h"

#define MIB 1048576ULL
#define CHECK(p) do { if (!(p)) return NVML_ERROR_INVALID_ARGUMENT; } while (0)

NVML_API nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t d, unsigned int *index) {
    CHECK(index);
    CT_WHOLE_GPU(d, g);
    *index = d->gpu;
    return ct_leave(NVML_SUCCESS);
}

NVML_API nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t d, unsigned int *minor) {
    CHECK(minor);
    CT_WHOLE_GPU(d, g);
    *minor = g->index;   /* /dev/nvidiaN: the daemon's index, whatever CUDA_VISIBLE_DEVICES says */
    return ct_leave(NVML_SUCCESS);
}

NVML_API nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t d, char *name, unsigned int length) {
    CT_DEVICE(d, g, m);
    if (!m) return ct_leave(ct_copy_str(name, length, g->name));
    char mig[CT_STR + 48];
    snprintf(mig, sizeof mig, "%s MIG %s", g->name, m->profile);
    return ct_leave(ct_copy_str(name, length, mig));
}

NVML_API nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char *uuid, unsigned int length) {
    CT_DEVICE(d, g, m);
    return ct_leave(ct_copy_str(uuid, length, m ? m->uuid : g->uuid));
}

NVML_API nvmlReturn_t nvmlDeviceGetSerial(nvmlDevice_t d, char *serial, unsigned int length) {
    CT_WHOLE_GPU(d, g);
    return ct_leave(ct_copy_str(serial, length, g->serial));
}

NVML_API nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t d, nvmlPciInfo_t *pci) {
    CHECK(pci);
    CT_DEVICE(d, g, m);
    (void)m;   /* a MIG device answers with its GPU's */
    memset(pci, 0, sizeof *pci);
    snprintf(pci->busId, sizeof pci->busId, "%s", g->bus);
    snprintf(pci->busIdLegacy, sizeof pci->busIdLegacy, "%s", g->bus + 4);
    sscanf(g->bus, "%x:%x:%x", &pci->domain, &pci->bus, &pci->device);
    pci->pciDeviceId = g->pciid;
    pci->pciSubSystemId = 0x16C110DE;   /* HGX H100 SXM5 80GB */
    return ct_leave(NVML_SUCCESS);
}

NVML_API nvmlReturn_t nvmlDeviceGetPciInfo_v2(nvmlDevice_t d, nvmlPciInfo_t *pci) { return nvmlDeviceGetPciInfo_v3(d, pci); }
NVML_API nvmlReturn_t nvmlDeviceGetPciInfo(nvmlDevice_t d, nvmlPciInfo_t *pci) { return nvmlDeviceGetPciInfo_v3(d, pci); }

/* total, reserved, used, free in bytes: a MIG device has its GPU instance's memory. */
static void memory_of(const ct_gpu *g, const ct_ci *m, unsigned long long out[4]) {
    out[0] = g->mem_total * MIB;
    out[1] = g->mem_reserved * MIB;
    out[2] = g->mem_used * MIB;
    for (int i = 0; m && i < g->ngi; i++)
        if (g->gi[i].id == m->gi) {
            out[0] = g->gi[i].mem_mib * MIB;
            out[1] = 0;
            out[2] = g->gi[i].used_mib * MIB;
        }
    out[3] = out[0] - out[1] - out[2];
}

NVML_API nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t *mem) {
    CHECK(mem);
    CT_DEVICE(d, g, m);
    unsigned long long v[4];
    memory_of(g, m, v);
    mem->total = v[0];
    mem->used = v[1] + v[2];   /* v1 has no "reserved": the driver's share counts as used */
    mem->free = v[3];
    return ct_leave(NVML_SUCCESS);
}

NVML_API nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t d, nvmlMemory_v2_t *mem) {
    CHECK(mem);
    if (mem->version != nvmlMemory_v2) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    CT_DEVICE(d, g, m);
    unsigned long long v[4];
    memory_of(g, m, v);
    mem->total = v[0];
    mem->reserved = v[1];
    mem->used = v[2];
    mem->free = v[3];
    return ct_leave(NVML_SUCCESS);
}

NVML_API nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t d, nvmlUtilization_t *u) {
    CHECK(u);
    CT_WHOLE_GPU(d, g);
    u->gpu = g->util_gpu;
    u->memory = g->util_mem;
    return ct_leave(NVML_SUCCESS);
}

NVML_API nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t d, int sensor, unsigned int *temp) {
    CHECK(temp);
    CT_WHOLE_GPU(d, g);
    if (sensor != 0) return ct_leave(NVML_ERROR_INVALID_ARGUMENT);   /* NVML_TEMPERATURE_GPU only */
    *temp = (unsigned int)g->temp;
    return ct_leave(NVML_SUCCESS);
}

NVML_API nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t d, unsigned int *mw) {
    CHECK(mw);
    CT_WHOLE_GPU(d, g);
    *mw = g->power_mw;
    return ct_leave(NVML_SUCCESS);
}

/* The limit in force (nvmlDeviceSetPowerManagementLimit changes it), or with `fixed` that value. */
static nvmlReturn_t power_limit(nvmlDevice_t d, unsigned int *mw, unsigned int fixed) {
    CHECK(mw);
    CT_WHOLE_GPU(d, g);
    *mw = fixed ? fixed : g->limit_mw;
    return ct_leave(NVML_SUCCESS);
}

NVML_API nvmlReturn_t nvmlDeviceGetPowerManagementLimit(nvmlDevice_t d, unsigned int *mw) { return power_limit(d, mw, 0); }
NVML_API nvmlReturn_t nvmlDeviceGetEnforcedPowerLimit(nvmlDevice_t d, unsigned int *mw) { return power_limit(d, mw, 0); }
NVML_API nvmlReturn_t nvmlDeviceGetPowerManagementDefaultLimit(nvmlDevice_t d, unsigned int *mw) {
    return power_limit(d, mw, H100_POWER_MAX_MW);
}

NVML_API nvmlReturn_t nvmlDeviceGetPowerManagementLimitConstraints(nvmlDevice_t d, unsigned int *lo, unsigned int *hi) {
    CHECK(lo && hi);
    CT_WHOLE_GPU(d, g);
    *lo = H100_POWER_MIN_MW;
    *hi = H100_POWER_MAX_MW;
    return ct_leave(NVML_SUCCESS);
}

NVML_API nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t d, unsigned long long *mj) {
    CHECK(mj);
    CT_WHOLE_GPU(d, g);
    *mj = g->energy_mj;
    return ct_leave(NVML_SUCCESS);
}

/* nvmlClockType_t: GRAPHICS 0, SM 1, MEM 2, VIDEO 3. */
static nvmlReturn_t clock_of(nvmlDevice_t d, int type, int max, unsigned int *mhz) {
    CHECK(mhz);
    CT_WHOLE_GPU(d, g);
    if (type < 0 || type > 3) return ct_leave(NVML_ERROR_INVALID_ARGUMENT);
    unsigned int sm = max ? g->clk_max : g->clk_sm, mem = max ? 2619 : g->clk_mem;
    *mhz = type == 2 ? mem : type == 3 ? (max ? 1965 : sm * 1965 / (g->clk_max ? g->clk_max : 1)) : sm;
    return ct_leave(NVML_SUCCESS);
}

NVML_API nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t d, int type, unsigned int *mhz) { return clock_of(d, type, 0, mhz); }
NVML_API nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t d, int type, unsigned int *mhz) { return clock_of(d, type, 1, mhz); }

NVML_API nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t d, unsigned long long *reasons) {
    CHECK(reasons);
    CT_WHOLE_GPU(d, g);
    *reasons = g->reasons;
    return ct_leave(NVML_SUCCESS);
}

NVML_API nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t d, unsigned long long *reasons) {
    return nvmlDeviceGetCurrentClocksEventReasons(d, reasons);
}

NVML_API nvmlReturn_t nvmlDeviceGetPerformanceState(nvmlDevice_t d, int *pstate) {
    CHECK(pstate);
    CT_WHOLE_GPU(d, g);
    *pstate = 0;   /* an H100 in persistence mode stays in P0 */
    return ct_leave(NVML_SUCCESS);
}

NVML_API nvmlReturn_t nvmlDeviceGetPersistenceMode(nvmlDevice_t d, int *mode) {
    CHECK(mode);
    CT_WHOLE_GPU(d, g);
    *mode = (int)g->persist;
    return ct_leave(NVML_SUCCESS);
}

NVML_API nvmlReturn_t nvmlDeviceGetComputeMode(nvmlDevice_t d, int *mode) {
    CHECK(mode);
    CT_WHOLE_GPU(d, g);
    *mode = 0;   /* NVML_COMPUTEMODE_DEFAULT */
    return ct_leave(NVML_SUCCESS);
}

NVML_API nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t d, int *major, int *minor) {
    CHECK(major && minor);
    CT_DEVICE(d, g, m);
    (void)m;
    *major = 9;
    *minor = 0;
    return ct_leave(NVML_SUCCESS);
}

NVML_API nvmlReturn_t nvmlDeviceGetArchitecture(nvmlDevice_t d, unsigned int *arch) {
    CHECK(arch);
    CT_DEVICE(d, g, m);
    (void)m;
    *arch = 9;   /* NVML_DEVICE_ARCH_HOPPER */
    return ct_leave(NVML_SUCCESS);
}

NVML_API nvmlReturn_t nvmlDeviceGetEccMode(nvmlDevice_t d, int *current, int *pending) {
    CHECK(current && pending);
    CT_WHOLE_GPU(d, g);
    *current = (int)g->ecc_cur;
    *pending = (int)g->ecc_pend;   /* nvmlDeviceSetEccMode: until the next reset or reboot */
    return ct_leave(NVML_SUCCESS);
}

/* errorType: CORRECTED 0, UNCORRECTED 1; counterType: VOLATILE 0, AGGREGATE 1. */
NVML_API nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t d, int type, int counter, unsigned long long *count) {
    CHECK(count);
    CT_WHOLE_GPU(d, g);
    if (type < 0 || type > 1 || counter < 0 || counter > 1) return ct_leave(NVML_ERROR_INVALID_ARGUMENT);
    *count = g->ecc[counter * 2 + type];
    return ct_leave(NVML_SUCCESS);
}

NVML_API nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t d, unsigned int *corr, unsigned int *unc,
                                                unsigned int *pending, unsigned int *failure) {
    CHECK(corr && unc && pending && failure);
    CT_WHOLE_GPU(d, g);
    *corr = g->remap[0];
    *unc = g->remap[1];
    *pending = g->remap[2];
    *failure = g->remap[3];
    return ct_leave(NVML_SUCCESS);
}

/* Hopper retires no pages (it remaps rows): the real driver answers NOT_SUPPORTED. */
NVML_API nvmlReturn_t nvmlDeviceGetRetiredPages(nvmlDevice_t d, int cause, unsigned int *count, unsigned long long *a) {
    (void)cause; (void)a;
    CHECK(count);
    CT_WHOLE_GPU(d, g);
    return ct_leave(NVML_ERROR_NOT_SUPPORTED);
}

NVML_API nvmlReturn_t nvmlDeviceGetRetiredPagesPendingStatus(nvmlDevice_t d, int *pending) {
    CHECK(pending);
    CT_WHOLE_GPU(d, g);
    return ct_leave(NVML_ERROR_NOT_SUPPORTED);
}

static nvmlReturn_t unsupported(nvmlDevice_t d, void *out) {
    CHECK(out);
    CT_DEVICE(d, g, m);
    (void)m;
    return ct_leave(NVML_ERROR_NOT_SUPPORTED);
}

/* An SXM module has no fans and no NVENC. */
NVML_API nvmlReturn_t nvmlDeviceGetFanSpeed(nvmlDevice_t d, unsigned int *speed) { return unsupported(d, speed); }
NVML_API nvmlReturn_t nvmlDeviceGetFanSpeed_v2(nvmlDevice_t d, unsigned int fan, unsigned int *speed) {
    (void)fan;
    return unsupported(d, speed);
}
NVML_API nvmlReturn_t nvmlDeviceGetEncoderUtilization(nvmlDevice_t d, unsigned int *u, unsigned int *period) {
    (void)period;
    return unsupported(d, u);
}

NVML_API nvmlReturn_t nvmlDeviceGetNumFans(nvmlDevice_t d, unsigned int *n) {
    CHECK(n);
    CT_WHOLE_GPU(d, g);
    *n = 0;
    return ct_leave(NVML_SUCCESS);
}

NVML_API nvmlReturn_t nvmlDeviceGetDecoderUtilization(nvmlDevice_t d, unsigned int *u, unsigned int *period) {
    CHECK(u && period);
    CT_WHOLE_GPU(d, g);
    *u = 0;   /* the twin's jobs decode no video */
    *period = 167000;
    return ct_leave(NVML_SUCCESS);
}

/* PCIe: Gen5 x16, as an H100 SXM on an HGX baseboard trains. */
static nvmlReturn_t pcie(nvmlDevice_t d, unsigned int *out, unsigned int value) {
    CHECK(out);
    CT_WHOLE_GPU(d, g);
    *out = value;
    return ct_leave(NVML_SUCCESS);
}

NVML_API nvmlReturn_t nvmlDeviceGetCurrPcieLinkGeneration(nvmlDevice_t d, unsigned int *v) { return pcie(d, v, 5); }
NVML_API nvmlReturn_t nvmlDeviceGetMaxPcieLinkGeneration(nvmlDevice_t d, unsigned int *v) { return pcie(d, v, 5); }
NVML_API nvmlReturn_t nvmlDeviceGetGpuMaxPcieLinkGeneration(nvmlDevice_t d, unsigned int *v) { return pcie(d, v, 5); }
NVML_API nvmlReturn_t nvmlDeviceGetCurrPcieLinkWidth(nvmlDevice_t d, unsigned int *v) { return pcie(d, v, 16); }
NVML_API nvmlReturn_t nvmlDeviceGetMaxPcieLinkWidth(nvmlDevice_t d, unsigned int *v) { return pcie(d, v, 16); }

NVML_API nvmlReturn_t nvmlDeviceGetPcieReplayCounter(nvmlDevice_t d, unsigned int *v) {
    CHECK(v);
    CT_WHOLE_GPU(d, g);
    *v = g->replay;
    return ct_leave(NVML_SUCCESS);
}

NVML_API nvmlReturn_t nvmlDeviceGetPcieThroughput(nvmlDevice_t d, int counter, unsigned int *kbs) {
    CHECK(kbs);
    CT_WHOLE_GPU(d, g);
    if (counter < 0 || counter > 1) return ct_leave(NVML_ERROR_INVALID_ARGUMENT);
    *kbs = 0;   /* the twin models no host traffic */
    return ct_leave(NVML_SUCCESS);
}

NVML_API nvmlReturn_t nvmlDeviceGetDisplayMode(nvmlDevice_t d, int *mode) { return pcie(d, (unsigned int *)mode, 0); }
NVML_API nvmlReturn_t nvmlDeviceGetDisplayActive(nvmlDevice_t d, int *mode) { return pcie(d, (unsigned int *)mode, 0); }

/* Windows only (WDDM/TCC): on Linux the driver answers NOT_SUPPORTED. */
NVML_API nvmlReturn_t nvmlDeviceGetDriverModel(nvmlDevice_t d, int *current, int *pending) {
    (void)pending;
    return unsupported(d, current);
}
NVML_API nvmlReturn_t nvmlDeviceGetDriverModel_v2(nvmlDevice_t d, int *current, int *pending) {
    (void)pending;
    return unsupported(d, current);
}

typedef struct { unsigned long long bar1Total, bar1Free, bar1Used; } nvmlBAR1Memory_t;

/* BAR1: 128 GiB on an H100 80GB (1 MiB of it mapped by the driver); a MIG device has its GPU
 * instance's eighths of it. */
NVML_API nvmlReturn_t nvmlDeviceGetBAR1MemoryInfo(nvmlDevice_t d, nvmlBAR1Memory_t *bar1) {
    CHECK(bar1);
    CT_DEVICE(d, g, m);
    unsigned long long total = 131072 * MIB, used = MIB;
    for (int i = 0; m && i < g->ngi; i++)
        if (g->gi[i].id == m->gi) {
            total = 131072 * MIB / 8 * g->gi[i].size;
            used = 0;
        }
    *bar1 = (nvmlBAR1Memory_t){total, total - used, used};
    return ct_leave(NVML_SUCCESS);
}
