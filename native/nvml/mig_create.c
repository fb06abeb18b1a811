/* The MIG calls that change the layout (nvidia-smi -mig, mig -cgi / -dgi / -cci / -dci): the daemon's
 * MIG model makes the change (services/gpu_node/nvml_mig_control.py), with the placement engine that
 * `twin gpu mig`, Kubernetes and Slurm use, so every reader sees it; on success the snapshot is
 * refetched and the new instance's handle names it by id.
 *
 * As the driver, they want root: another caller gets NO_PERMISSION and nothing is sent (the library
 * checks its own effective uid, as set_calls.c does). The daemon answers the rest: NOT_SUPPORTED
 * with MIG disabled, INSUFFICIENT_RESOURCES when the instance does not fit, IN_USE for an instance
 * with compute instances or a lease. Codes as nvml.h gives them for each call. */
#include <stdio.h>
#include <unistd.h>

#include "twin_nvml.h"

#define CHECK(p) do { if (!(p)) return NVML_ERROR_INVALID_ARGUMENT; } while (0)
#define NVML_DEVICE_MIG_ENABLE 1

/* POST one MIG request; on success refetch the snapshot. With ct_lock held. */
static nvmlReturn_t change(const char *body, unsigned int *value) {
    if (geteuid() != 0) return NVML_ERROR_NO_PERMISSION;
    nvmlReturn_t r = ct_post_value(body, value);
    if (r == NVML_SUCCESS) ct_refresh(1);
    return r;
}

/* Root: the mode now if the GPU is idle (the driver resets it), else pending until a reset with
 * activationStatus IN_USE (nvml.h: "if device unbind fails because the device isn't idle"). */
NVML_API nvmlReturn_t nvmlDeviceSetMigMode(nvmlDevice_t d, unsigned int mode, nvmlReturn_t *activationStatus) {
    CHECK(activationStatus);
    CT_WHOLE_GPU(d, g);
    if (mode > NVML_DEVICE_MIG_ENABLE) return ct_leave(NVML_ERROR_INVALID_ARGUMENT);
    char body[64];
    snprintf(body, sizeof body, "migmode %d %u", g->index, mode);
    unsigned int status = 0;
    nvmlReturn_t r = change(body, &status);
    if (r == NVML_SUCCESS) *activationStatus = (nvmlReturn_t)status;
    return ct_leave(r);
}

/* A GPU instance of the profile whose nvmlGpuInstanceProfileInfo_t id is `profile`, at `pl` or the
 * first free placement. */
static nvmlReturn_t create_gi(nvmlDevice_t d, unsigned int profile, const nvmlGpuInstancePlacement_t *pl,
                              nvmlGpuInstance_t *out) {
    CHECK(out);
    CT_WHOLE_GPU(d, g);
    if (geteuid() != 0) return ct_leave(NVML_ERROR_NO_PERMISSION);
    if (!g->mig) return ct_leave(NVML_ERROR_NOT_SUPPORTED);
    const ct_gip *p = ct_gip_by_id(profile);
    if (!p || (pl && pl->size != p->size)) return ct_leave(NVML_ERROR_INVALID_ARGUMENT);
    char body[64];
    if (pl) snprintf(body, sizeof body, "gi %d %u %u", g->index, profile, pl->start);
    else snprintf(body, sizeof body, "gi %d %u", g->index, profile);
    unsigned int id = 0;
    nvmlReturn_t r = change(body, &id);
    if (r == NVML_SUCCESS) *out = ct_gi_handle(d->gpu, id);
    return ct_leave(r);
}

NVML_API nvmlReturn_t nvmlDeviceCreateGpuInstance(nvmlDevice_t d, unsigned int profile, nvmlGpuInstance_t *out) {
    return create_gi(d, profile, NULL, out);
}

NVML_API nvmlReturn_t nvmlDeviceCreateGpuInstanceWithPlacement(nvmlDevice_t d, unsigned int profile,
                                                               const nvmlGpuInstancePlacement_t *pl,
                                                               nvmlGpuInstance_t *out) {
    CHECK(pl);
    return create_gi(d, profile, pl, out);
}

/* IN_USE while it has compute instances or a lease holds it (nvml.h: "compute instances or
 * processes are active"). */
NVML_API nvmlReturn_t nvmlGpuInstanceDestroy(nvmlGpuInstance_t h) {
    const ct_gpu *g;
    const ct_gi *gi;
    nvmlReturn_t r = ct_gpu_instance(h, &g, &gi);
    if (r) return r;
    char body[64];
    snprintf(body, sizeof body, "gidel %d %u", g->index, gi->id);
    return ct_leave(change(body, NULL));
}

/* A compute instance of NVML_COMPUTE_INSTANCE_PROFILE_* `profile` (its profile info's id). A profile
 * NVML knows that this GPU instance does not offer is NOT_SUPPORTED, as the profile-info call says. */
static nvmlReturn_t create_ci(nvmlGpuInstance_t h, unsigned int profile, const nvmlComputeInstancePlacement_t *pl,
                              nvmlComputeInstance_t *out) {
    CHECK(out);
    const ct_gpu *g;
    const ct_gi *gi;
    nvmlReturn_t r = ct_gpu_instance(h, &g, &gi);
    if (r) return r;
    if (geteuid() != 0) return ct_leave(NVML_ERROR_NO_PERMISSION);
    if (profile >= NVML_COMPUTE_INSTANCE_PROFILE_COUNT) return ct_leave(NVML_ERROR_INVALID_ARGUMENT);
    const ct_cip *c = ct_cip_of(gi->profile, profile);
    if (!c) return ct_leave(NVML_ERROR_NOT_SUPPORTED);
    if (pl && pl->size != c->slices) return ct_leave(NVML_ERROR_INVALID_ARGUMENT);
    unsigned int gi_id = gi->id, id = 0;
    char body[64];
    if (pl) snprintf(body, sizeof body, "ci %d %u %u %u", g->index, gi_id, c->slices, pl->start);
    else snprintf(body, sizeof body, "ci %d %u %u", g->index, gi_id, c->slices);
    r = change(body, &id);
    if (r == NVML_SUCCESS) *out = ct_ci_handle(h->gpu, gi_id, id);
    return ct_leave(r);
}

NVML_API nvmlReturn_t nvmlGpuInstanceCreateComputeInstance(nvmlGpuInstance_t h, unsigned int profile,
                                                           nvmlComputeInstance_t *out) {
    return create_ci(h, profile, NULL, out);
}

NVML_API nvmlReturn_t nvmlGpuInstanceCreateComputeInstanceWithPlacement(nvmlGpuInstance_t h, unsigned int profile,
                                                                        const nvmlComputeInstancePlacement_t *pl,
                                                                        nvmlComputeInstance_t *out) {
    CHECK(pl);
    return create_ci(h, profile, pl, out);
}

/* IN_USE while a lease holds its MIG device (nvml.h: "processes are active on the compute instance"). */
NVML_API nvmlReturn_t nvmlComputeInstanceDestroy(nvmlComputeInstance_t h) {
    const ct_gpu *g;
    const ct_ci *c;
    nvmlReturn_t r = ct_compute_instance(h, &g, &c);
    if (r) return r;
    char body[64];
    snprintf(body, sizeof body, "cidel %d %u %u", g->index, c->gi, c->id);
    return ct_leave(change(body, NULL));
}
