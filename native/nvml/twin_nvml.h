/* libnvidia-ml.so.1 of the twin: NVML's C API answered from the host's GPU-server daemon.
 *
 * The types below are NVML's own (nvml.h, API v12): the same names, values and struct layouts,
 * written out here for the calls this library implements. The library keeps one snapshot of the
 * node per process (services/gpu_node/nvml_snapshot.py renders it), refreshed when older than its
 * TTL, so a query is a lock, a clock read and a copy. */
#ifndef TWIN_NVML_H
#define TWIN_NVML_H

#include <pthread.h>

#define NVML_API __attribute__((visibility("default")))

typedef enum {
    NVML_SUCCESS = 0, NVML_ERROR_UNINITIALIZED = 1, NVML_ERROR_INVALID_ARGUMENT = 2,
    NVML_ERROR_NOT_SUPPORTED = 3, NVML_ERROR_NO_PERMISSION = 4, NVML_ERROR_ALREADY_INITIALIZED = 5,
    NVML_ERROR_NOT_FOUND = 6, NVML_ERROR_INSUFFICIENT_SIZE = 7, NVML_ERROR_INSUFFICIENT_POWER = 8,
    NVML_ERROR_DRIVER_NOT_LOADED = 9, NVML_ERROR_TIMEOUT = 10, NVML_ERROR_IRQ_ISSUE = 11,
    NVML_ERROR_LIBRARY_NOT_FOUND = 12, NVML_ERROR_FUNCTION_NOT_FOUND = 13,
    NVML_ERROR_CORRUPTED_INFOROM = 14, NVML_ERROR_GPU_IS_LOST = 15, NVML_ERROR_RESET_REQUIRED = 16,
    NVML_ERROR_OPERATING_SYSTEM = 17, NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18, NVML_ERROR_IN_USE = 19,
    NVML_ERROR_MEMORY = 20, NVML_ERROR_NO_DATA = 21, NVML_ERROR_VGPU_ECC_NOT_ENABLED = 22,
    NVML_ERROR_INSUFFICIENT_RESOURCES = 23, NVML_ERROR_FREQ_NOT_SUPPORTED = 24,
    NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25, NVML_ERROR_DEPRECATED = 26, NVML_ERROR_NOT_READY = 27,
    NVML_ERROR_GPU_NOT_FOUND = 28, NVML_ERROR_INVALID_STATE = 29, NVML_ERROR_UNKNOWN = 999
} nvmlReturn_t;

typedef struct nvmlDevice_st *nvmlDevice_t;
typedef struct nvmlEventSet_st *nvmlEventSet_t;
typedef struct nvmlGpuInstance_st *nvmlGpuInstance_t;
typedef struct nvmlComputeInstance_st *nvmlComputeInstance_t;

typedef struct { unsigned long long total, free, used; } nvmlMemory_t;
typedef struct { unsigned int version; unsigned long long total, reserved, free, used; } nvmlMemory_v2_t;
#define nvmlMemory_v2 (unsigned int)(sizeof(nvmlMemory_v2_t) | (2 << 24))
typedef struct { unsigned int gpu, memory; } nvmlUtilization_t;
typedef struct {
    char busIdLegacy[16];
    unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
    char busId[32];
} nvmlPciInfo_t;
typedef struct { unsigned int pid; unsigned long long usedGpuMemory; } nvmlProcessInfo_v1_t;
typedef struct {
    unsigned int pid; unsigned long long usedGpuMemory; unsigned int gpuInstanceId, computeInstanceId;
} nvmlProcessInfo_t;   /* _v2 and _v3 share it */
typedef struct {
    nvmlDevice_t device; unsigned long long eventType, eventData;
    unsigned int gpuInstanceId, computeInstanceId;
} nvmlEventData_t;

typedef struct { unsigned int start, size; } nvmlGpuInstancePlacement_t;
typedef struct { unsigned int start, size; } nvmlComputeInstancePlacement_t;
#define NVML_COMPUTE_INSTANCE_PROFILE_COUNT 0x9
typedef struct {
    nvmlDevice_t device; unsigned int id, profileId; nvmlGpuInstancePlacement_t placement;
} nvmlGpuInstanceInfo_t;
typedef struct {
    nvmlDevice_t device; nvmlGpuInstance_t gpuInstance; unsigned int id, profileId;
    nvmlGpuInstancePlacement_t placement;
} nvmlComputeInstanceInfo_t;

#define NVML_VALUE_NOT_AVAILABLE_UINT 0xFFFFFFFFu
#define NVML_NVLINK_MAX_LINKS 18
#define NVML_MAX_MIG_DEVICES 7          /* an H100 holds at most seven MIG devices */
/* The event types this library reports as supported on an H100, each delivered (events.c): ECC SBE
 * and DBE, Xid, clock and MIG configuration changes (0x1 0x2 0x8 0x10 0x100). Not P-state (0x4): the
 * twin's H100 stays in P0, so it would never come (docs/NVML.md). */
#define NVML_EVENT_H100 0x11BULL
#define H100_POWER_MIN_MW 200000u   /* an H100 SXM's power cap range: 200-700 W */
#define H100_POWER_MAX_MW 700000u   /* also its default limit */

/* ---- the snapshot (twin_client.c) ---- */
#define CT_MAX_GPUS 8
#define CT_MAX_PROCS 32
#define CT_MAX_EVENTS 64
#define CT_STR 96
#define CT_MAX_GIP 12                    /* GPU-instance profiles (an H100 has 7) */
#define CT_MAX_CIP 48                    /* compute-instance profiles over all GI profiles (23) */
#define CT_MAX_CIFREE (NVML_MAX_MIG_DEVICES * 5)

/* A MIG profile as the page's `gip` / `cip` lines give it (services/gpu_node/nvml_mig_profiles.py). */
typedef struct {
    unsigned int nvml, id, slices, instances, sm, ce, dec, enc, jpeg, ofa, size, starts;
    unsigned long long mem_mib;
    char name[32];
} ct_gip;
typedef struct { unsigned int gi_profile, nvml, slices, instances, sm, starts; char name[40]; } ct_cip;
typedef struct { unsigned int id, n; } ct_gifree;              /* free GIs of profile id */
typedef struct { unsigned int gi, ci, n; } ct_cifree;          /* free CIs of CI profile ci in GI gi */

typedef struct { unsigned int pid, gi, ci; unsigned long long used_mib; } ct_proc;
typedef struct { unsigned int id, profile, start, size; unsigned long long mem_mib, used_mib; } ct_gi;
typedef struct { unsigned int gi, id, slices, start; char uuid[CT_STR], profile[32]; } ct_ci;
typedef struct { unsigned int up, crc, replay, recovery; } ct_link;

typedef struct {
    int index;                           /* the daemon's index (CUDA_VISIBLE_DEVICES renumbers) */
    char uuid[CT_STR], serial[32], bus[32], name[CT_STR];
    unsigned int pciid, numa, lost, mig, mig_pend, lastxid, replay;
    unsigned long long mem_total, mem_reserved, mem_used;   /* MiB */
    int temp, memtemp;
    unsigned int power_mw, limit_mw;
    unsigned long long energy_mj, reasons;
    unsigned int util_gpu, util_mem, clk_sm, clk_mem, clk_max;
    unsigned long long ecc[4];           /* volatile SBE, DBE, aggregate SBE, DBE */
    unsigned int remap[4];               /* correctable, uncorrectable, pending, failure */
    unsigned int persist, ecc_cur, ecc_pend;   /* what the set calls change (set_calls.c) */
    unsigned int app_sm, app_mem;        /* application clocks, MHz */
    int nlinks; ct_link link[NVML_NVLINK_MAX_LINKS];
    int nproc; ct_proc proc[CT_MAX_PROCS];
    int ngi; ct_gi gi[NVML_MAX_MIG_DEVICES];
    int nci; ct_ci ci[NVML_MAX_MIG_DEVICES];
    int ngifree; ct_gifree gifree[CT_MAX_GIP];
    int ncifree; ct_cifree cifree[CT_MAX_CIFREE];
} ct_gpu;

typedef struct { unsigned long long id, type, data; int gpu; } ct_event;   /* see nvml_snapshot.py */

typedef struct {
    char driver[32];
    int cuda;
    unsigned long long seq;
    int nevent; ct_event event[CT_MAX_EVENTS];
    int ngpu; ct_gpu gpu[CT_MAX_GPUS];   /* the visible GPUs, in CUDA_VISIBLE_DEVICES order */
    unsigned int sup_sm_max, sup_sm_min, sup_sm_step, nsup_mem, sup_mem[4];   /* supported clocks */
    int ngip; ct_gip gip[CT_MAX_GIP];
    int ncip; ct_cip cip[CT_MAX_CIP];
} ct_snapshot;

/* A device handle: a whole GPU (mig < 0) or one of its MIG devices, by position. */
struct nvmlDevice_st { int gpu, mig; };
/* Instance handles, by the GPU's visible position and the instances' ids (GI ids 0-14, CI ids 0-7),
 * so a handle keeps naming its instance when others are made or destroyed; a destroyed one's handle
 * is INVALID_ARGUMENT (nvml.h: it "would become invalid"). */
#define CT_GI_IDS 15
#define CT_CI_IDS 8
struct nvmlGpuInstance_st { int gpu; unsigned int gi; };
struct nvmlComputeInstance_st { int gpu; unsigned int gi, ci; };

extern pthread_mutex_t ct_lock;
extern ct_snapshot ct_snap;
extern int ct_initialized;

nvmlReturn_t ct_refresh(int force);                     /* with ct_lock held */
nvmlReturn_t ct_post(const char *body);                 /* a set call to the daemon: its nvmlReturn_t */
nvmlReturn_t ct_post_value(const char *body, unsigned int *value);   /* the same, and the value after it */
nvmlReturn_t ct_enter(void);                            /* initialized? lock, refresh if stale */
nvmlReturn_t ct_leave(nvmlReturn_t ret);                /* unlock, pass ret through */
nvmlReturn_t ct_device(nvmlDevice_t d, const ct_gpu **g, const ct_ci **mig);   /* with ct_lock held */
nvmlDevice_t ct_handle(int gpu, int mig);
nvmlReturn_t ct_copy_str(char *dst, unsigned int len, const char *src);
/* The GPU instance behind a handle; on success ct_lock is held (mig_instances.c). */
nvmlReturn_t ct_gpu_instance(nvmlGpuInstance_t h, const ct_gpu **g, const ct_gi **gi);
/* The compute instance behind a handle; on success ct_lock is held (mig_instances.c). */
nvmlReturn_t ct_compute_instance(nvmlComputeInstance_t h, const ct_gpu **g, const ct_ci **ci);
nvmlGpuInstance_t ct_gi_handle(int gpu, unsigned int gi_id);
nvmlComputeInstance_t ct_ci_handle(int gpu, unsigned int gi_id, unsigned int ci_id);
unsigned int ct_ci_profile_id(unsigned int slices);     /* NVML_COMPUTE_INSTANCE_PROFILE_* of a CI */
const ct_gip *ct_gip_by_id(unsigned int id);            /* with ct_lock held; NULL if none */
const ct_cip *ct_cip_of(unsigned int gi_profile, unsigned int ci_profile);

/* Enter for a device query: on error return it; else the lock is held and g (and m, its MIG device
 * or NULL) are set. Every path after it returns through ct_leave. */
#define CT_DEVICE(d, g, m) \
    const ct_gpu *g; const ct_ci *m; \
    do { nvmlReturn_t r_ = ct_enter(); if (r_) return r_; \
         r_ = ct_device(d, &g, &m); if (r_) return ct_leave(r_); } while (0)
/* The same for a query an H100 answers only for a whole GPU (NOT_SUPPORTED on a MIG device). */
#define CT_WHOLE_GPU(d, g) \
    CT_DEVICE(d, g, m_); if (m_) return ct_leave(NVML_ERROR_NOT_SUPPORTED)

#endif
