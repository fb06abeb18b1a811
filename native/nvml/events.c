/* Event sets: Xid critical errors, single/double-bit ECC errors, MIG configuration and clock changes,
 * read from the node's event log (services/gpu_node/nvml_snapshot.py says which of its events are which).
 * A set remembers the id of the last event it has seen; a wait re-reads the node every POLL_MS until
 * an event of a type registered for its GPU comes after it, or the timeout. */
#include <stdlib.h>
#include <time.h>

#include "twin_nvml.h"

#define POLL_MS 50
#define CHECK(p) do { if (!(p)) return NVML_ERROR_INVALID_ARGUMENT; } while (0)

struct nvmlEventSet_st {
    unsigned long long seen;                 /* the node's last event id when last looked */
    unsigned long long types[CT_MAX_GPUS];   /* event types registered, per visible GPU */
};

NVML_API nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t *set) {
    CHECK(set);
    nvmlReturn_t r = ct_enter();
    if (r) return r;
    *set = calloc(1, sizeof **set);
    if (!*set) return ct_leave(NVML_ERROR_MEMORY);
    (*set)->seen = ct_snap.seq;
    return ct_leave(NVML_SUCCESS);
}

NVML_API nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set) {
    CHECK(set);
    free(set);
    return NVML_SUCCESS;
}

NVML_API nvmlReturn_t nvmlDeviceGetSupportedEventTypes(nvmlDevice_t d, unsigned long long *types) {
    CHECK(types);
    CT_WHOLE_GPU(d, g);
    *types = NVML_EVENT_H100;
    return ct_leave(NVML_SUCCESS);
}

NVML_API nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t d, unsigned long long types, nvmlEventSet_t set) {
    CHECK(set);
    CT_WHOLE_GPU(d, g);
    if (types & ~NVML_EVENT_H100) return ct_leave(NVML_ERROR_NOT_SUPPORTED);
    set->types[d->gpu] |= types;
    return ct_leave(NVML_SUCCESS);
}

/* The first event after set->seen of a type registered for its GPU; 1 if found (data filled). */
static int next_event(nvmlEventSet_t set, nvmlEventData_t *data) {
    for (int i = 0; i < ct_snap.nevent; i++) {
        const ct_event *e = &ct_snap.event[i];
        if (e->id <= set->seen) continue;
        set->seen = e->id;
        for (int k = 0; k < ct_snap.ngpu; k++)
            if (ct_snap.gpu[k].index == e->gpu && (set->types[k] & e->type)) {
                *data = (nvmlEventData_t){ct_handle(k, -1), e->type, e->data, NVML_VALUE_NOT_AVAILABLE_UINT,
                                          NVML_VALUE_NOT_AVAILABLE_UINT};
                return 1;
            }
    }
    if (ct_snap.seq > set->seen) set->seen = ct_snap.seq;
    return 0;
}

NVML_API nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t *data, unsigned int timeout_ms) {
    CHECK(set && data);
    for (unsigned int waited = 0;; waited += POLL_MS) {
        nvmlReturn_t r = ct_enter();
        if (r) return r;
        r = ct_refresh(waited > 0);   /* the first look may use a fresh snapshot */
        if (r) return ct_leave(NVML_ERROR_UNKNOWN);
        if (next_event(set, data)) return ct_leave(NVML_SUCCESS);
        ct_leave(NVML_SUCCESS);
        if (waited >= timeout_ms) return NVML_ERROR_TIMEOUT;
        struct timespec t = {0, POLL_MS * 1000000L};
        nanosleep(&t, NULL);
    }
}

NVML_API nvmlReturn_t nvmlEventSetWait(nvmlEventSet_t set, nvmlEventData_t *data, unsigned int timeout_ms) {
    return nvmlEventSetWait_v2(set, data, timeout_ms);
}
