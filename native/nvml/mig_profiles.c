/* MIG GPU-instance profiles: what an H100 80GB can be cut into (the page's `gip` lines, rendered from
 * the twin's MIG model) and how much of it is still free on a GPU (`gifree`).
 *
 * NVML numbers a profile twice: the info calls take the enum NVML_GPU_INSTANCE_PROFILE_* and answer
 * the profile id (19 for 1g.10gb, 0 for 7g.80gb) that every other call takes. An enum past NVML's
 * list or an id the board has no profile for is INVALID_ARGUMENT; an enum NVML knows but an H100
 * does not offer (8-slice, graphics, ...) is NOT_SUPPORTED. */
#include <string.h>

#include "twin_nvml.h"

#define CHECK(p) do { if (!(p)) return NVML_ERROR_INVALID_ARGUMENT; } while (0)
#define NVML_GPU_INSTANCE_PROFILE_COUNT 0x12
#define NVML_DEVICE_NAME_V2_BUFFER_SIZE 96

typedef struct {
    unsigned int id, isP2pSupported, sliceCount, instanceCount, multiprocessorCount, copyEngineCount, decoderCount,
        encoderCount, jpegCount, ofaCount;
    unsigned long long memorySizeMB;
} nvmlGpuInstanceProfileInfo_t;

/* v2 adds the version in front and the name behind; v3 drops isP2pSupported and adds capabilities. */
typedef struct {
    unsigned int version, id, isP2pSupported, sliceCount, instanceCount, multiprocessorCount, copyEngineCount,
        decoderCount, encoderCount, jpegCount, ofaCount;
    unsigned long long memorySizeMB;
    char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
} nvmlGpuInstanceProfileInfo_v2_t;

typedef struct {
    unsigned int version, id, sliceCount, instanceCount, multiprocessorCount, copyEngineCount, decoderCount,
        encoderCount, jpegCount, ofaCount;
    unsigned long long memorySizeMB;
    char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
    unsigned int capabilities;
} nvmlGpuInstanceProfileInfo_v3_t;

#define nvmlGpuInstanceProfileInfo_v2 (unsigned int)(sizeof(nvmlGpuInstanceProfileInfo_v2_t) | (2 << 24))
#define nvmlGpuInstanceProfileInfo_v3 (unsigned int)(sizeof(nvmlGpuInstanceProfileInfo_v3_t) | (3 << 24))
/* The values pynvml (nvidia-ml-py 13) stamps: the layouts above must give the same sizes. */
_Static_assert(nvmlGpuInstanceProfileInfo_v2 == 0x02000098, "nvmlGpuInstanceProfileInfo_v2_t layout");
_Static_assert(nvmlGpuInstanceProfileInfo_v3 == 0x03000098, "nvmlGpuInstanceProfileInfo_v3_t layout");

const ct_gip *ct_gip_by_id(unsigned int id) {
    for (int i = 0; i < ct_snap.ngip; i++)
        if (ct_snap.gip[i].id == id) return &ct_snap.gip[i];
    return NULL;
}

static const ct_gip *gip_by_enum(unsigned int profile) {
    for (int i = 0; i < ct_snap.ngip; i++)
        if (ct_snap.gip[i].nvml == profile) return &ct_snap.gip[i];
    return NULL;
}

/* The whole GPU behind d (ct_lock held on success); with need_mig, NOT_SUPPORTED unless its MIG mode
 * is enabled: the profile info "is immutable throughout the lifetime of a MIG mode" (nvml.h), and
 * the twin answers a GPU with MIG disabled as one without MIG (not verified on hardware). */
static nvmlReturn_t mig_gpu(nvmlDevice_t d, int need_mig, const ct_gpu **out) {
    CT_WHOLE_GPU(d, g);
    if (need_mig && !g->mig) return ct_leave(NVML_ERROR_NOT_SUPPORTED);
    *out = g;
    return NVML_SUCCESS;
}

/* The profile of enum `profile` on a MIG-enabled GPU, ct_lock held on success. */
static nvmlReturn_t profile_by_enum(nvmlDevice_t d, unsigned int profile, const ct_gip **p) {
    if (profile >= NVML_GPU_INSTANCE_PROFILE_COUNT) return NVML_ERROR_INVALID_ARGUMENT;
    const ct_gpu *g;
    nvmlReturn_t r = mig_gpu(d, 1, &g);
    if (r) return r;
    *p = gip_by_enum(profile);
    return *p ? NVML_SUCCESS : ct_leave(NVML_ERROR_NOT_SUPPORTED);
}

NVML_API nvmlReturn_t nvmlDeviceGetGpuInstanceProfileInfo(nvmlDevice_t d, unsigned int profile,
                                                          nvmlGpuInstanceProfileInfo_t *info) {
    CHECK(info);
    const ct_gip *p;
    nvmlReturn_t r = profile_by_enum(d, profile, &p);
    if (r) return r;
    *info = (nvmlGpuInstanceProfileInfo_t){p->id, 0, p->slices, p->instances, p->sm, p->ce, p->dec, p->enc, p->jpeg,
                                           p->ofa, p->mem_mib};   /* no P2P between MIG instances on H100 */
    return ct_leave(NVML_SUCCESS);
}

/* The versioned layouts; the caller's version says which (checked before anything is written). */
static void fill_versioned(const ct_gip *p, void *out) {
    unsigned int version = *(unsigned int *)out;
    if (version == nvmlGpuInstanceProfileInfo_v3) {
        nvmlGpuInstanceProfileInfo_v3_t *v3 = out;
        *v3 = (nvmlGpuInstanceProfileInfo_v3_t){version, p->id, p->slices, p->instances, p->sm, p->ce, p->dec,
                                                p->enc, p->jpeg, p->ofa, p->mem_mib, "", 0};
        ct_copy_str(v3->name, sizeof v3->name, p->name);
    } else {
        nvmlGpuInstanceProfileInfo_v2_t *v2 = out;
        *v2 = (nvmlGpuInstanceProfileInfo_v2_t){version, p->id, 0, p->slices, p->instances, p->sm, p->ce, p->dec,
                                                p->enc, p->jpeg, p->ofa, p->mem_mib, ""};
        ct_copy_str(v2->name, sizeof v2->name, p->name);
    }
}

static int known_version(const nvmlGpuInstanceProfileInfo_v2_t *info) {
    return info->version == nvmlGpuInstanceProfileInfo_v2 || info->version == nvmlGpuInstanceProfileInfo_v3;
}

NVML_API nvmlReturn_t nvmlDeviceGetGpuInstanceProfileInfoV(nvmlDevice_t d, unsigned int profile,
                                                           nvmlGpuInstanceProfileInfo_v2_t *info) {
    CHECK(info);
    if (!known_version(info)) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    const ct_gip *p;
    nvmlReturn_t r = profile_by_enum(d, profile, &p);
    if (r) return r;
    fill_versioned(p, info);
    return ct_leave(NVML_SUCCESS);
}

/* The profile of id `id` (on a MIG-enabled GPU if need_mig), ct_lock held on success. */
static nvmlReturn_t profile_by_id(nvmlDevice_t d, unsigned int id, int need_mig, const ct_gip **p,
                                  const ct_gpu **g) {
    nvmlReturn_t r = mig_gpu(d, need_mig, g);
    if (r) return r;
    *p = ct_gip_by_id(id);
    return *p ? NVML_SUCCESS : ct_leave(NVML_ERROR_INVALID_ARGUMENT);
}

NVML_API nvmlReturn_t nvmlDeviceGetGpuInstanceProfileInfoByIdV(nvmlDevice_t d, unsigned int id,
                                                               nvmlGpuInstanceProfileInfo_v2_t *info) {
    CHECK(info);
    if (!known_version(info)) return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    const ct_gip *p;
    const ct_gpu *g;
    nvmlReturn_t r = profile_by_id(d, id, 1, &p, &g);
    if (r) return r;
    fill_versioned(p, info);
    return ct_leave(NVML_SUCCESS);
}

/* Every start the profile allows, free or not, "regardless of whether MIG is enabled" (nvml.h). NULL
 * placements: the count alone; otherwise the caller sized the array from the profile, as NVML says
 * (count is not read). */
NVML_API nvmlReturn_t nvmlDeviceGetGpuInstancePossiblePlacements_v2(nvmlDevice_t d, unsigned int id,
                                                                    nvmlGpuInstancePlacement_t *placements,
                                                                    unsigned int *count) {
    CHECK(count);
    const ct_gip *p;
    const ct_gpu *g;
    nvmlReturn_t r = profile_by_id(d, id, 0, &p, &g);
    if (r) return r;
    unsigned int n = 0;
    for (unsigned int s = 0; s < 32; s++)
        if (p->starts & (1u << s)) {
            if (placements) placements[n] = (nvmlGpuInstancePlacement_t){s, p->size};
            n++;
        }
    *count = n;
    return ct_leave(NVML_SUCCESS);
}

NVML_API nvmlReturn_t nvmlDeviceGetGpuInstanceRemainingCapacity(nvmlDevice_t d, unsigned int id, unsigned int *count) {
    CHECK(count);
    const ct_gip *p;
    const ct_gpu *g;
    nvmlReturn_t r = profile_by_id(d, id, 1, &p, &g);
    if (r) return r;
    *count = 0;
    for (int i = 0; i < g->ngifree; i++)
        if (g->gifree[i].id == id) *count = g->gifree[i].n;
    return ct_leave(NVML_SUCCESS);
}
