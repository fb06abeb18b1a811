/* MIG GPU instances and compute instances, as the node's layout has them (read-only: the twin
 * creates and destroys them with `twin gpu mig`, so the create/destroy calls are not exported). */
#include "twin_nvml.h"

#define CHECK(p) do { if (!(p)) return NVML_ERROR_INVALID_ARGUMENT; } while (0)

static struct nvmlGpuInstance_st gi_handles[CT_MAX_GPUS][NVML_MAX_MIG_DEVICES];
static struct nvmlComputeInstance_st ci_handles[CT_MAX_GPUS][NVML_MAX_MIG_DEVICES];

/* NVML's compute-instance profile ids by slice count (NVML_COMPUTE_INSTANCE_PROFILE_*_SLICE). */
unsigned int ct_ci_profile_id(unsigned int slices) {
    static const unsigned int by_slices[] = {0, 0, 1, 2, 3, 0, 6, 4, 5};
    return slices < sizeof by_slices / sizeof *by_slices ? by_slices[slices] : 0;
}

static nvmlGpuInstance_t gi_handle(int gpu, int gi) {
    gi_handles[gpu][gi] = (struct nvmlGpuInstance_st){gpu, gi};
    return &gi_handles[gpu][gi];
}

/* The GPU instance behind a handle, with ct_lock held (released on error). */
nvmlReturn_t ct_gpu_instance(nvmlGpuInstance_t h, const ct_gpu **g, const ct_gi **gi) {
    nvmlReturn_t r = ct_enter();
    if (r) return r;
    if (h < &gi_handles[0][0] || h > &gi_handles[CT_MAX_GPUS - 1][NVML_MAX_MIG_DEVICES - 1] || h->gpu >= ct_snap.ngpu)
        return ct_leave(NVML_ERROR_INVALID_ARGUMENT);
    *g = &ct_snap.gpu[h->gpu];
    if ((*g)->lost) return ct_leave(NVML_ERROR_GPU_IS_LOST);
    if (h->gi >= (*g)->ngi) return ct_leave(NVML_ERROR_INVALID_ARGUMENT);   /* destroyed since */
    *gi = &(*g)->gi[h->gi];
    return NVML_SUCCESS;
}

/* The GPU instances of `profile` (`*count` in: the room; out: how many there are). */
NVML_API nvmlReturn_t nvmlDeviceGetGpuInstances(nvmlDevice_t d, unsigned int profile, nvmlGpuInstance_t *out,
                                                unsigned int *count) {
    CHECK(count);
    CT_WHOLE_GPU(d, g);
    if (!g->mig) return ct_leave(NVML_ERROR_NOT_SUPPORTED);
    unsigned int n = 0;
    for (int i = 0; i < g->ngi; i++)
        if (g->gi[i].profile == profile) {
            if (out && n < *count) out[n] = gi_handle(d->gpu, i);
            n++;
        }
    nvmlReturn_t r = (n > *count || (n && !out)) ? NVML_ERROR_INSUFFICIENT_SIZE : NVML_SUCCESS;
    *count = n;
    return ct_leave(r);
}

NVML_API nvmlReturn_t nvmlDeviceGetGpuInstanceById(nvmlDevice_t d, unsigned int id, nvmlGpuInstance_t *out) {
    CHECK(out);
    CT_WHOLE_GPU(d, g);
    if (!g->mig) return ct_leave(NVML_ERROR_NOT_SUPPORTED);
    for (int i = 0; i < g->ngi; i++)
        if (g->gi[i].id == id) {
            *out = gi_handle(d->gpu, i);
            return ct_leave(NVML_SUCCESS);
        }
    return ct_leave(NVML_ERROR_NOT_FOUND);
}

NVML_API nvmlReturn_t nvmlGpuInstanceGetInfo(nvmlGpuInstance_t h, nvmlGpuInstanceInfo_t *info) {
    CHECK(info);
    const ct_gpu *g;
    const ct_gi *gi;
    nvmlReturn_t r = ct_gpu_instance(h, &g, &gi);
    if (r) return r;
    *info = (nvmlGpuInstanceInfo_t){ct_handle(h->gpu, -1), gi->id, gi->profile, {gi->start, gi->size}};
    return ct_leave(NVML_SUCCESS);
}

/* The compute instances of a GPU instance with CI profile id `profile`. */
NVML_API nvmlReturn_t nvmlGpuInstanceGetComputeInstances(nvmlGpuInstance_t h, unsigned int profile,
                                                         nvmlComputeInstance_t *out, unsigned int *count) {
    CHECK(count);
    const ct_gpu *g;
    const ct_gi *gi;
    nvmlReturn_t r = ct_gpu_instance(h, &g, &gi);
    if (r) return r;
    unsigned int n = 0;
    for (int i = 0; i < g->nci; i++)
        if (g->ci[i].gi == gi->id && ct_ci_profile_id(g->ci[i].slices) == profile) {
            if (out && n < *count) {
                ci_handles[h->gpu][i] = (struct nvmlComputeInstance_st){h->gpu, i};
                out[n] = &ci_handles[h->gpu][i];
            }
            n++;
        }
    r = (n > *count || (n && !out)) ? NVML_ERROR_INSUFFICIENT_SIZE : NVML_SUCCESS;
    *count = n;
    return ct_leave(r);
}

NVML_API nvmlReturn_t nvmlComputeInstanceGetInfo_v2(nvmlComputeInstance_t h, nvmlComputeInstanceInfo_t *info) {
    CHECK(info);
    nvmlReturn_t r = ct_enter();
    if (r) return r;
    if (h < &ci_handles[0][0] || h > &ci_handles[CT_MAX_GPUS - 1][NVML_MAX_MIG_DEVICES - 1] || h->gpu >= ct_snap.ngpu)
        return ct_leave(NVML_ERROR_INVALID_ARGUMENT);
    const ct_gpu *g = &ct_snap.gpu[h->gpu];
    if (g->lost) return ct_leave(NVML_ERROR_GPU_IS_LOST);
    if (h->ci >= g->nci) return ct_leave(NVML_ERROR_INVALID_ARGUMENT);
    const ct_ci *c = &g->ci[h->ci];
    int gi = 0;
    while (gi < g->ngi && g->gi[gi].id != c->gi) gi++;
    *info = (nvmlComputeInstanceInfo_t){ct_handle(h->gpu, -1), gi_handle(h->gpu, gi), c->id, ct_ci_profile_id(c->slices),
                                        {c->start, c->slices}};
    return ct_leave(NVML_SUCCESS);
}

NVML_API nvmlReturn_t nvmlComputeInstanceGetInfo(nvmlComputeInstance_t h, nvmlComputeInstanceInfo_t *info) {
    return nvmlComputeInstanceGetInfo_v2(h, info);
}
