/* MIG GPU instances and compute instances, as the node's layout has them, and their handles (the
 * calls that create and destroy them: mig_create.c). */
#include <stddef.h>

#include "twin_nvml.h"

#define CHECK(p) do { if (!(p)) return NVML_ERROR_INVALID_ARGUMENT; } while (0)

static struct nvmlGpuInstance_st gi_handles[CT_MAX_GPUS][CT_GI_IDS];
static struct nvmlComputeInstance_st ci_handles[CT_MAX_GPUS][CT_GI_IDS][CT_CI_IDS];

/* NVML's compute-instance profile ids by slice count (NVML_COMPUTE_INSTANCE_PROFILE_*_SLICE). */
unsigned int ct_ci_profile_id(unsigned int slices) {
    static const unsigned int by_slices[] = {0, 0, 1, 2, 3, 0, 6, 4, 5};
    return slices < sizeof by_slices / sizeof *by_slices ? by_slices[slices] : 0;
}

nvmlGpuInstance_t ct_gi_handle(int gpu, unsigned int gi_id) {
    if (gi_id >= CT_GI_IDS) return NULL;
    gi_handles[gpu][gi_id] = (struct nvmlGpuInstance_st){gpu, gi_id};
    return &gi_handles[gpu][gi_id];
}

nvmlComputeInstance_t ct_ci_handle(int gpu, unsigned int gi_id, unsigned int ci_id) {
    if (gi_id >= CT_GI_IDS || ci_id >= CT_CI_IDS) return NULL;
    ci_handles[gpu][gi_id][ci_id] = (struct nvmlComputeInstance_st){gpu, gi_id, ci_id};
    return &ci_handles[gpu][gi_id][ci_id];
}

/* The GPU (ct_lock taken) of an instance handle that points into `table` of `size` bytes. */
static nvmlReturn_t handle_gpu(const void *h, const void *table, size_t size, int gpu, const ct_gpu **g) {
    nvmlReturn_t r = ct_enter();
    if (r) return r;
    if ((const char *)h < (const char *)table || (const char *)h >= (const char *)table + size || gpu >= ct_snap.ngpu)
        return ct_leave(NVML_ERROR_INVALID_ARGUMENT);
    *g = &ct_snap.gpu[gpu];
    return (*g)->lost ? ct_leave(NVML_ERROR_GPU_IS_LOST) : NVML_SUCCESS;
}

/* The GPU instance behind a handle, with ct_lock held (released on error). */
nvmlReturn_t ct_gpu_instance(nvmlGpuInstance_t h, const ct_gpu **g, const ct_gi **gi) {
    nvmlReturn_t r = handle_gpu(h, gi_handles, sizeof gi_handles, h ? h->gpu : 0, g);
    if (r) return r;
    for (int i = 0; i < (*g)->ngi; i++)
        if ((*g)->gi[i].id == h->gi) {
            *gi = &(*g)->gi[i];
            return NVML_SUCCESS;
        }
    return ct_leave(NVML_ERROR_INVALID_ARGUMENT);   /* destroyed since */
}

/* The compute instance behind a handle, with ct_lock held (released on error). */
nvmlReturn_t ct_compute_instance(nvmlComputeInstance_t h, const ct_gpu **g, const ct_ci **ci) {
    nvmlReturn_t r = handle_gpu(h, ci_handles, sizeof ci_handles, h ? h->gpu : 0, g);
    if (r) return r;
    for (int i = 0; i < (*g)->nci; i++)
        if ((*g)->ci[i].gi == h->gi && (*g)->ci[i].id == h->ci) {
            *ci = &(*g)->ci[i];
            return NVML_SUCCESS;
        }
    return ct_leave(NVML_ERROR_INVALID_ARGUMENT);   /* destroyed since */
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
            if (out && n < *count) out[n] = ct_gi_handle(d->gpu, g->gi[i].id);
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
            *out = ct_gi_handle(d->gpu, id);
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
            if (out && n < *count) out[n] = ct_ci_handle(h->gpu, gi->id, g->ci[i].id);
            n++;
        }
    r = (n > *count || (n && !out)) ? NVML_ERROR_INSUFFICIENT_SIZE : NVML_SUCCESS;
    *count = n;
    return ct_leave(r);
}

NVML_API nvmlReturn_t nvmlComputeInstanceGetInfo_v2(nvmlComputeInstance_t h, nvmlComputeInstanceInfo_t *info) {
    CHECK(info);
    const ct_gpu *g;
    const ct_ci *c;
    nvmlReturn_t r = ct_compute_instance(h, &g, &c);
    if (r) return r;
    *info = (nvmlComputeInstanceInfo_t){ct_handle(h->gpu, -1), ct_gi_handle(h->gpu, c->gi), c->id,
                                        ct_ci_profile_id(c->slices), {c->start, c->slices}};
    return ct_leave(NVML_SUCCESS);
}

NVML_API nvmlReturn_t nvmlComputeInstanceGetInfo(nvmlComputeInstance_t h, nvmlComputeInstanceInfo_t *info) {
    return nvmlComputeInstanceGetInfo_v2(h, info);
}

NVML_API nvmlReturn_t nvmlGpuInstanceGetComputeInstanceById(nvmlGpuInstance_t h, unsigned int id,
                                                            nvmlComputeInstance_t *out) {
    CHECK(out);
    const ct_gpu *g;
    const ct_gi *gi;
    nvmlReturn_t r = ct_gpu_instance(h, &g, &gi);
    if (r) return r;
    for (int i = 0; i < g->nci; i++)
        if (g->ci[i].gi == gi->id && g->ci[i].id == id) {
            *out = ct_ci_handle(h->gpu, gi->id, id);
            return ct_leave(NVML_SUCCESS);
        }
    return ct_leave(NVML_ERROR_NOT_FOUND);
}
