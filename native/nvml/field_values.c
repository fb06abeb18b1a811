/* nvmlDeviceGetFieldValues: many counters in one call, each with its own return code. The call
 * succeeds if the device does; a field the twin cannot answer gets NOT_SUPPORTED in its own
 * nvmlReturn (an unknown id too), a link-scoped field with no such link INVALID_ARGUMENT, and the
 * other fields are answered as usual. Field ids and value types: nvml.h (NVML_FI_DEV_*). */
#define _GNU_SOURCE
#include <time.h>

#include "twin_nvml.h"

typedef union {
    double dVal; unsigned int uiVal; unsigned long ulVal; unsigned long long ullVal; signed long long sllVal;
    signed int siVal; unsigned short usVal;
} nvmlValue_t;

typedef struct {
    unsigned int fieldId, scopeId;
    long long timestamp, latencyUsec;
    int valueType;   /* nvmlValueType_t */
    nvmlReturn_t nvmlReturn;
    nvmlValue_t value;
} nvmlFieldValue_t;
_Static_assert(sizeof(nvmlFieldValue_t) == 40, "nvmlFieldValue_t layout");

enum { VT_UINT = 1, VT_ULL = 3 };
enum { FI_LINK_COUNT = 91, FI_DL_REPLAY = 161, FI_DL_RECOVERY = 162, FI_DL_CRC = 163, FI_LINK_STATE = 165 };

static nvmlReturn_t set_uint(nvmlFieldValue_t *v, unsigned int x) {
    v->valueType = VT_UINT;
    v->value.uiVal = x;
    return NVML_SUCCESS;
}

static nvmlReturn_t set_ull(nvmlFieldValue_t *v, unsigned long long x) {
    v->valueType = VT_ULL;
    v->value.ullVal = x;
    return NVML_SUCCESS;
}

/* The per-link error counters of NVML's first fields: for counter k (CRC flit, CRC data, replay,
 * recovery) links 0-5 are 32+7k .. 37+7k, the total over all links 38+7k, links 6-11 96+6k ..
 * 101+6k. 1 and *link (-1: the total) if `id` is one of them. */
static int link_counter(unsigned int id, int *counter, int *link) {
    for (int k = 0; k < 4; k++) {
        unsigned int low = 32 + 7 * k, high = 96 + 6 * k;
        if (id >= low && id <= low + 6) { *counter = k; *link = id == low + 6 ? -1 : (int)(id - low); return 1; }
        if (id >= high && id < high + 6) { *counter = k; *link = 6 + (int)(id - high); return 1; }
    }
    return 0;
}

/* CRC data errors are not modelled apart from flit errors (as nvmlDeviceGetNvLinkErrorCounter). */
static unsigned long long link_count(const ct_link *l, int counter) {
    return counter == 0 ? l->crc : counter == 2 ? l->replay : counter == 3 ? l->recovery : 0;
}

static nvmlReturn_t nvlink_field(const ct_gpu *g, nvmlFieldValue_t *v) {
    int counter, link;
    if (link_counter(v->fieldId, &counter, &link)) {
        if (link >= g->nlinks) return NVML_ERROR_INVALID_ARGUMENT;
        unsigned long long sum = 0;
        for (int i = 0; i < g->nlinks; i++)
            if (link < 0 || i == link) sum += link_count(&g->link[i], counter);
        return set_ull(v, sum);
    }
    if (v->fieldId == FI_LINK_COUNT) return set_uint(v, (unsigned int)g->nlinks);
    /* the fields scoped by link: scopeId names the link */
    if (v->scopeId >= (unsigned int)g->nlinks) return NVML_ERROR_INVALID_ARGUMENT;
    const ct_link *l = &g->link[v->scopeId];
    switch (v->fieldId) {
    case FI_DL_REPLAY: return set_ull(v, l->replay);
    case FI_DL_RECOVERY: return set_ull(v, l->recovery);
    case FI_DL_CRC: return set_ull(v, l->crc);
    case FI_LINK_STATE: return set_uint(v, l->up);
    default: return NVML_ERROR_NOT_SUPPORTED;
    }
}

static int is_nvlink_field(unsigned int id) {
    int counter, link;
    return link_counter(id, &counter, &link) || id == FI_LINK_COUNT || (id >= FI_DL_REPLAY && id <= FI_DL_CRC) ||
           id == FI_LINK_STATE;
}

/* Power fields are scoped: scopeId 0 is the GPU (NVML_POWER_SCOPE_GPU); the module and memory
 * rails are not modelled. */
static nvmlReturn_t power_field(const ct_gpu *g, nvmlFieldValue_t *v) {
    if (v->scopeId != 0) return NVML_ERROR_NOT_SUPPORTED;
    switch (v->fieldId) {
    case 185: case 186: return set_uint(v, g->power_mw);             /* POWER_AVERAGE, POWER_INSTANT */
    case 187: return set_uint(v, H100_POWER_MIN_MW);                 /* POWER_MIN_LIMIT */
    case 188: case 189: return set_uint(v, H100_POWER_MAX_MW);       /* POWER_MAX_LIMIT, POWER_DEFAULT_LIMIT */
    case 190: case 192: return set_uint(v, g->limit_mw);             /* POWER_CURRENT_LIMIT, ..._REQUESTED_LIMIT */
    case 191: return set_ull(v, g->energy_mj);                       /* ENERGY */
    default: return NVML_ERROR_NOT_SUPPORTED;
    }
}

static nvmlReturn_t field(const ct_gpu *g, nvmlFieldValue_t *v) {
    unsigned int id = v->fieldId;
    if (is_nvlink_field(id)) return nvlink_field(g, v);
    if (id >= 185 && id <= 192) return power_field(g, v);
    switch (id) {
    case 1: return set_uint(v, g->ecc_cur);                          /* ECC_CURRENT */
    case 2: return set_uint(v, g->ecc_pend);                         /* ECC_PENDING */
    case 3: case 4: case 5: case 6: return set_ull(v, g->ecc[id - 3]);   /* SBE/DBE, volatile/aggregate */
    case 82: return set_uint(v, (unsigned int)g->memtemp);          /* MEMORY_TEMP */
    case 83: return set_ull(v, g->energy_mj);                        /* TOTAL_ENERGY_CONSUMPTION */
    case 94: return set_uint(v, g->replay);                          /* PCIE_REPLAY_COUNTER */
    case 95: return set_uint(v, 0);                                  /* PCIE_REPLAY_ROLLOVER_COUNTER */
    case 142: case 143: case 144: case 145: return set_uint(v, g->remap[id - 142]);   /* REMAPPED_* */
    default: return NVML_ERROR_NOT_SUPPORTED;   /* retired pages (29-31, 92, 93): Hopper remaps rows */
    }
}

NVML_API nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t d, int count, nvmlFieldValue_t *values) {
    if (!values || count <= 0) return NVML_ERROR_INVALID_ARGUMENT;
    CT_DEVICE(d, g, m);
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    for (int i = 0; i < count; i++) {
        nvmlFieldValue_t *v = &values[i];
        v->timestamp = now.tv_sec * 1000000LL + now.tv_nsec / 1000;
        v->latencyUsec = 0;   /* every field is read from one snapshot */
        v->value.ullVal = 0;
        /* a MIG device has no counters of its own here: its GPU's are the whole GPU's */
        v->nvmlReturn = m ? NVML_ERROR_NOT_SUPPORTED : field(g, v);
    }
    return ct_leave(NVML_SUCCESS);
}
