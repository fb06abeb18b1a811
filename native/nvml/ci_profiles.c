/* MIG compute-instance profiles of a GPU instance (the page's `cip` lines: what each GPU-instance
 * profile can be split into; `cifree`: what is still free in each GPU instance) and the attributes
 * of a MIG device. A compute instance shares its GPU instance's engines: NVML's shared* counts are
 * the GPU instance's. */
#include <stddef.h>

#include "twin_nvml.h"

#define CHECK(p) do { if (!(p)) return NVML_ERROR_INVALID_ARGUMENT; } while (0)
#define NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_COUNT 0x1
#define NVML_DEVICE_NAME_V2_BUFFER_SIZE 96

typedef struct {
    unsigned int id, sliceCount, instanceCount, multiprocessorCount, sharedCopyEngineCount, sharedDecoderCount,
        sharedEncoderCount, sharedJpegCount, sharedOfaCount;
} nvmlComputeInstanceProfileInfo_t;

typedef struct {
    unsigned int version, id, sliceCount, instanceCount, multiprocessorCount, sharedCopyEngineCount,
        sharedDecoderCount, sharedEncoderCount, sharedJpegCount, sharedOfaCount;
    char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
    unsigned int capabilities;   /* v3 only */
} nvmlComputeInstanceProfileInfo_v3_t;

#define nvmlComputeInstanceProfileInfo_v2 (unsigned int)(offsetof(nvmlComputeInstanceProfileInfo_v3_t, capabilities) | (2 << 24))
#define nvmlComputeInstanceProfileInfo_v3 (unsigned int)(sizeof(nvmlComputeInstanceProfileInfo_v3_t) | (3 << 24))
_Static_assert(nvmlComputeInstanceProfileInfo_v2 == 0x02000088, "nvmlComputeInstanceProfileInfo_v2_t layout");
_Static_assert(nvmlComputeInstanceProfileInfo_v3 == 0x0300008C, "nvmlComputeInstanceProfileInfo_v3_t layout");

typedef struct {
    unsigned int multiprocessorCount, sharedCopyEngineCount, sharedDecoderCount, sharedEncoderCount, sharedJpegCount,
        sharedOfaCount, gpuInstanceSliceCount, computeInstanceSliceCount;
    unsigned long long memorySizeMB;
} nvmlDeviceAttributes_t;

const ct_cip *ct_cip_of(unsigned int gi_profile, unsigned int ci_profile) {
    for (int i = 0; i < ct_snap.ncip; i++)
        if (ct_snap.cip[i].gi_profile == gi_profile && ct_snap.cip[i].nvml == ci_profile) return &ct_snap.cip[i];
    return NULL;
}

/* The CI profile `profile` of the GPU instance behind h, and that GI's profile; ct_lock held on
 * success. `missing` is the answer for a profile NVML knows that this GI does not offer. */
static nvmlReturn_t ci_profile(nvmlGpuInstance_t h, unsigned int profile, nvmlReturn_t missing, const ct_gpu **g,
                               const ct_gi **gi, const ct_gip **gp, const ct_cip **cp) {
    if (profile >= NVML_COMPUTE_INSTANCE_PROFILE_COUNT) return NVML_ERROR_INVALID_ARGUMENT;
    nvmlReturn_t r = ct_gpu_instance(h, g, gi);
    if (r) return r;
    *gp = ct_gip_by_id((*gi)->profile);
    *cp = *gp ? ct_cip_of((*gi)->profile, profile) : NULL;
    return *cp ? NVML_SUCCESS : ct_leave(missing);
}

NVML_API nvmlReturn_t nvmlGpuInstanceGetComputeInstanceProfileInfo(nvmlGpuInstance_t h, unsigned int profile,
                                                                   unsigned int eng,
                                                                   nvmlComputeInstanceProfileInfo_t *info) {
    CHECK(info && eng < NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_COUNT);
    const ct_gpu *g; const ct_gi *gi; const ct_gip *p; const ct_cip *c;
    nvmlReturn_t r = ci_profile(h, profile, NVML_ERROR_NOT_SUPPORTED, &g, &gi, &p, &c);
    if (r) return r;
    *info = (nvmlComputeInstanceProfileInfo_t){c->nvml, c->slices, c->instances, c->sm, p->ce, p->dec, p->enc,
                                               p->jpeg, p->ofa};
    return ct_leave(NVML_SUCCESS);
}

/* v2 and v3 share the layout up to v3's trailing capabilities; the version says which was given. */
NVML_API nvmlReturn_t nvmlGpuInstanceGetComputeInstanceProfileInfoV(nvmlGpuInstance_t h, unsigned int profile,
                                                                    unsigned int eng,
                                                                    nvmlComputeInstanceProfileInfo_v3_t *info) {
    CHECK(info && eng < NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_COUNT);
    unsigned int version = info->version;
    if (version != nvmlComputeInstanceProfileInfo_v2 && version != nvmlComputeInstanceProfileInfo_v3)
        return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    const ct_gpu *g; const ct_gi *gi; const ct_gip *p; const ct_cip *c;
    nvmlReturn_t r = ci_profile(h, profile, NVML_ERROR_NOT_SUPPORTED, &g, &gi, &p, &c);
    if (r) return r;
    info->id = c->nvml;
    info->sliceCount = c->slices;
    info->instanceCount = c->instances;
    info->multiprocessorCount = c->sm;
    info->sharedCopyEngineCount = p->ce;
    info->sharedDecoderCount = p->dec;
    info->sharedEncoderCount = p->enc;
    info->sharedJpegCount = p->jpeg;
    info->sharedOfaCount = p->ofa;
    ct_copy_str(info->name, sizeof info->name, c->name);
    if (version == nvmlComputeInstanceProfileInfo_v3) info->capabilities = 0;   /* v2's struct ends before it */
    return ct_leave(NVML_SUCCESS);
}

NVML_API nvmlReturn_t nvmlGpuInstanceGetComputeInstanceRemainingCapacity(nvmlGpuInstance_t h, unsigned int profile,
                                                                         unsigned int *count) {
    CHECK(count);
    const ct_gpu *g; const ct_gi *gi; const ct_gip *p; const ct_cip *c;
    nvmlReturn_t r = ci_profile(h, profile, NVML_ERROR_INVALID_ARGUMENT, &g, &gi, &p, &c);
    if (r) return r;
    *count = 0;
    for (int i = 0; i < g->ncifree; i++)
        if (g->cifree[i].gi == gi->id && g->cifree[i].ci == profile) *count = g->cifree[i].n;
    return ct_leave(NVML_SUCCESS);
}

/* Every start (in compute slices) the CI profile allows in this GI, free or not; NULL: the count. */
NVML_API nvmlReturn_t nvmlGpuInstanceGetComputeInstancePossiblePlacements(nvmlGpuInstance_t h, unsigned int profile,
                                                                          nvmlComputeInstancePlacement_t *placements,
                                                                          unsigned int *count) {
    CHECK(count);
    const ct_gpu *g; const ct_gi *gi; const ct_gip *p; const ct_cip *c;
    nvmlReturn_t r = ci_profile(h, profile, NVML_ERROR_INVALID_ARGUMENT, &g, &gi, &p, &c);
    if (r) return r;
    unsigned int n = 0;
    for (unsigned int s = 0; s < 32; s++)
        if (c->starts & (1u << s)) {
            if (placements) placements[n] = (nvmlComputeInstancePlacement_t){s, c->slices};
            n++;
        }
    *count = n;
    return ct_leave(NVML_SUCCESS);
}

/* A MIG device's engines, slices and memory: its compute instance's SMs, its GPU instance's engines
 * and memory. NVML answers this for MIG device handles only; a whole GPU is NOT_SUPPORTED. */
NVML_API nvmlReturn_t nvmlDeviceGetAttributes_v2(nvmlDevice_t d, nvmlDeviceAttributes_t *attrs) {
    CHECK(attrs);
    CT_DEVICE(d, g, m);
    if (!m) return ct_leave(NVML_ERROR_NOT_SUPPORTED);
    const ct_gi *gi = NULL;
    for (int i = 0; i < g->ngi; i++)
        if (g->gi[i].id == m->gi) gi = &g->gi[i];
    const ct_gip *p = gi ? ct_gip_by_id(gi->profile) : NULL;
    const ct_cip *c = p ? ct_cip_of(p->id, ct_ci_profile_id(m->slices)) : NULL;
    if (!c) return ct_leave(NVML_ERROR_UNKNOWN);   /* a page without its profile tables */
    *attrs = (nvmlDeviceAttributes_t){c->sm, p->ce, p->dec, p->enc, p->jpeg, p->ofa, p->slices, c->slices,
                                      gi->mem_mib};
    return ct_leave(NVML_SUCCESS);
}

NVML_API nvmlReturn_t nvmlDeviceGetAttributes(nvmlDevice_t d, nvmlDeviceAttributes_t *attrs) {
    return nvmlDeviceGetAttributes_v2(d, attrs);
}
