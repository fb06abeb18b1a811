/* How the library reaches its host's GPU-server daemon and keeps the node's snapshot.
 *
 * CLUSTERTWIN_NVML names the daemon: HOST:PORT (its HTTP port, loopback twins), @NAME (an abstract
 * Unix socket) or /PATH; unset, @clustertwin-nvml, which the daemon binds in its own network
 * namespace (services/gpu_node/nvml_endpoint.py). One `GET /nvml` fetches the whole node; calls are
 * answered from it until it is CLUSTERTWIN_NVML_TTL_MS old (default 250). */
#define _GNU_SOURCE
#include <errno.h>
#include <netdb.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "twin_nvml.h"

#define DEFAULT_ADDRESS "@clustertwin-nvml"
#define DEFAULT_TTL_MS 250
#define MAX_PAGE (1 << 20)
#define IO_TIMEOUT_S 5

pthread_mutex_t ct_lock = PTHREAD_MUTEX_INITIALIZER;
ct_snapshot ct_snap;
int ct_initialized;
static double fetched_at = -1e9;
static struct nvmlDevice_st handles[CT_MAX_GPUS][NVML_MAX_MIG_DEVICES + 1];

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static double ttl_s(void) {
    const char *v = getenv("CLUSTERTWIN_NVML_TTL_MS");
    return (v && *v ? atof(v) : DEFAULT_TTL_MS) / 1000.0;
}

static int connect_unix(const char *addr) {
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    size_t n = strlen(addr);
    if (n >= sizeof sa.sun_path) return -1;
    memcpy(sa.sun_path, addr, n);
    if (addr[0] == '@') sa.sun_path[0] = '\0';   /* abstract: the name after a NUL, no terminator */
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, offsetof(struct sockaddr_un, sun_path) + n) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static int connect_tcp(const char *addr) {
    char host[256];
    const char *colon = strrchr(addr, ':');
    if (!colon || (size_t)(colon - addr) >= sizeof host) return -1;
    memcpy(host, addr, colon - addr);
    host[colon - addr] = '\0';
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res;
    if (getaddrinfo(host, colon + 1, &hints, &res) != 0) return -1;
    int fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0 && connect(fd, res->ai_addr, res->ai_addrlen) != 0) {
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    return fd;
}

/* The body of the daemon's answer to `req` (one HTTP/1.1 exchange), malloc'ed; NULL if it cannot be
 * reached or does not answer 200. */
static char *exchange(const char *req, size_t req_len) {
    const char *addr = getenv("CLUSTERTWIN_NVML");
    if (!addr || !*addr) addr = DEFAULT_ADDRESS;
    int fd = (addr[0] == '@' || addr[0] == '/') ? connect_unix(addr) : connect_tcp(addr);
    if (fd < 0) return NULL;
    struct timeval tv = {.tv_sec = IO_TIMEOUT_S};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    char *buf = malloc(MAX_PAGE + 1);
    size_t len = 0;
    /* MSG_NOSIGNAL: a daemon gone mid-request must not SIGPIPE the client process. */
    ssize_t n = buf && send(fd, req, req_len, MSG_NOSIGNAL) == (ssize_t)req_len ? 1 : -1;
    while (n > 0 && len < MAX_PAGE && (n = read(fd, buf + len, MAX_PAGE - len)) > 0) len += n;
    close(fd);
    if (!buf || n < 0) { free(buf); return NULL; }
    buf[len] = '\0';
    char *body = strstr(buf, "\r\n\r\n");
    if (strncmp(buf, "HTTP/1.1 200", 12) != 0 || !body) { free(buf); return NULL; }
    memmove(buf, body + 4, len - (body + 4 - buf) + 1);
    return buf;
}

/* The daemon's page (the body of GET /nvml), malloc'ed; NULL if it cannot be reached. */
static char *fetch_page(void) {
    static const char req[] = "GET /nvml HTTP/1.1\r\nHost: nvml\r\nConnection: close\r\n\r\n";
    return exchange(req, sizeof req - 1);
}

nvmlReturn_t ct_post(const char *body) { return ct_post_value(body, NULL); }

/* The answer is `ret N [VALUE]` (nvml_endpoint.py): a MIG create's new instance id follows N. */
nvmlReturn_t ct_post_value(const char *body, unsigned int *value) {
    char req[512];
    int n = snprintf(req, sizeof req, "POST /nvml/set HTTP/1.1\r\nHost: nvml\r\nContent-Length: %zu\r\n"
                     "Connection: close\r\n\r\n%s", strlen(body), body);
    if (n < 0 || (size_t)n >= sizeof req) return NVML_ERROR_INVALID_ARGUMENT;
    char *answer = exchange(req, (size_t)n);
    int ret = -1;
    unsigned int v = 0;
    int got = answer ? sscanf(answer, "ret %d %u", &ret, &v) : 0;
    if (got < 1) ret = NVML_ERROR_UNKNOWN;   /* the daemon gone */
    else if (value) {
        if (got < 2 && ret == NVML_SUCCESS) ret = NVML_ERROR_UNKNOWN;   /* a success must say what it made */
        *value = v;
    }
    free(answer);
    return (nvmlReturn_t)ret;
}

/* One line of a GPU's block into g. */
static void parse_gpu_line(ct_gpu *g, const char *key, const char *rest) {
    if (!strcmp(key, "uuid")) sscanf(rest, "%95s", g->uuid);
    else if (!strcmp(key, "serial")) sscanf(rest, "%31s", g->serial);
    else if (!strcmp(key, "bus")) sscanf(rest, "%31s", g->bus);
    else if (!strcmp(key, "name")) snprintf(g->name, sizeof g->name, "%s", rest);
    else if (!strcmp(key, "pciid")) sscanf(rest, "%x", &g->pciid);
    else if (!strcmp(key, "numa")) sscanf(rest, "%u", &g->numa);
    else if (!strcmp(key, "lost")) sscanf(rest, "%u", &g->lost);
    else if (!strcmp(key, "mig")) sscanf(rest, "%u %u", &g->mig, &g->mig_pend);
    else if (!strcmp(key, "lastxid")) sscanf(rest, "%u", &g->lastxid);
    else if (!strcmp(key, "replay")) sscanf(rest, "%u", &g->replay);
    else if (!strcmp(key, "reasons")) sscanf(rest, "%llu", &g->reasons);
    else if (!strcmp(key, "mem")) sscanf(rest, "%llu %llu %llu", &g->mem_total, &g->mem_reserved, &g->mem_used);
    else if (!strcmp(key, "therm"))
        sscanf(rest, "%d %d %u %u %llu", &g->temp, &g->memtemp, &g->power_mw, &g->limit_mw, &g->energy_mj);
    else if (!strcmp(key, "util")) sscanf(rest, "%u %u", &g->util_gpu, &g->util_mem);
    else if (!strcmp(key, "clocks")) sscanf(rest, "%u %u %u", &g->clk_sm, &g->clk_mem, &g->clk_max);
    else if (!strcmp(key, "ecc")) sscanf(rest, "%llu %llu %llu %llu", &g->ecc[0], &g->ecc[1], &g->ecc[2], &g->ecc[3]);
    else if (!strcmp(key, "remap")) sscanf(rest, "%u %u %u %u", &g->remap[0], &g->remap[1], &g->remap[2], &g->remap[3]);
    else if (!strcmp(key, "modes")) sscanf(rest, "%u %u %u", &g->persist, &g->ecc_cur, &g->ecc_pend);
    else if (!strcmp(key, "appclk")) sscanf(rest, "%u %u", &g->app_sm, &g->app_mem);
    else if (!strcmp(key, "link") && g->nlinks < NVML_NVLINK_MAX_LINKS) {
        ct_link *l = &g->link[g->nlinks++];
        sscanf(rest, "%*u %u %u %u %u", &l->up, &l->crc, &l->replay, &l->recovery);
    } else if (!strcmp(key, "proc") && g->nproc < CT_MAX_PROCS) {
        ct_proc *p = &g->proc[g->nproc++];
        sscanf(rest, "%u %llu %u %u", &p->pid, &p->used_mib, &p->gi, &p->ci);
    } else if (!strcmp(key, "gi") && g->ngi < NVML_MAX_MIG_DEVICES) {
        ct_gi *x = &g->gi[g->ngi++];
        sscanf(rest, "%u %u %u %u %llu %llu", &x->id, &x->profile, &x->start, &x->size, &x->mem_mib, &x->used_mib);
    } else if (!strcmp(key, "ci") && g->nci < NVML_MAX_MIG_DEVICES) {
        ct_ci *c = &g->ci[g->nci++];
        sscanf(rest, "%u %u %u %u %95s %31s", &c->gi, &c->id, &c->slices, &c->start, c->uuid, c->profile);
    } else if (!strcmp(key, "gifree") && g->ngifree < CT_MAX_GIP) {
        ct_gifree *f = &g->gifree[g->ngifree++];
        sscanf(rest, "%u %u", &f->id, &f->n);
    } else if (!strcmp(key, "cifree") && g->ncifree < CT_MAX_CIFREE) {
        ct_cifree *f = &g->cifree[g->ncifree++];
        sscanf(rest, "%u %u %u", &f->gi, &f->ci, &f->n);
    }
}

/* A MIG profile table line (`gip` or `cip`, before the GPUs) into s. */
static void parse_profile_line(ct_snapshot *s, const char *key, const char *rest) {
    if (!strcmp(key, "gip") && s->ngip < CT_MAX_GIP) {
        ct_gip *p = &s->gip[s->ngip++];
        int at = 0;
        sscanf(rest, "%u %u %u %u %u %llu %u %u %u %u %u %u %u %n", &p->nvml, &p->id, &p->slices, &p->instances,
               &p->sm, &p->mem_mib, &p->ce, &p->dec, &p->enc, &p->jpeg, &p->ofa, &p->size, &p->starts, &at);
        snprintf(p->name, sizeof p->name, "%s", rest + at);
    } else if (!strcmp(key, "cip") && s->ncip < CT_MAX_CIP) {
        ct_cip *c = &s->cip[s->ncip++];
        int at = 0;
        sscanf(rest, "%u %u %u %u %u %u %n", &c->gi_profile, &c->nvml, &c->slices, &c->instances, &c->sm, &c->starts,
               &at);
        snprintf(c->name, sizeof c->name, "%s", rest + at);
    }
}

/* The whole page into s (every GPU the daemon has, in its order); 0 if it is not a snapshot. */
static int parse_page(char *page, ct_snapshot *s) {
    ct_gpu *g = NULL;
    int version = 0;
    for (char *save = NULL, *line = strtok_r(page, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char *rest = strchr(line, ' ');
        if (!rest) continue;
        *rest++ = '\0';
        if (!strcmp(line, "nvml")) version = atoi(rest);
        else if (!strcmp(line, "driver")) sscanf(rest, "%31s", s->driver);
        else if (!strcmp(line, "cuda")) s->cuda = atoi(rest);
        else if (!strcmp(line, "seq")) s->seq = strtoull(rest, NULL, 10);
        else if (!strcmp(line, "event") && s->nevent < CT_MAX_EVENTS) {
            ct_event *e = &s->event[s->nevent++];
            sscanf(rest, "%llu %d %llu %llu", &e->id, &e->gpu, &e->type, &e->data);
        } else if (!strcmp(line, "supclk")) {
            int n = sscanf(rest, "%u %u %u %u %u %u %u", &s->sup_sm_max, &s->sup_sm_min, &s->sup_sm_step,
                           &s->sup_mem[0], &s->sup_mem[1], &s->sup_mem[2], &s->sup_mem[3]);
            s->nsup_mem = n > 3 ? (unsigned int)(n - 3) : 0;
        } else if (!strcmp(line, "gip") || !strcmp(line, "cip")) {
            parse_profile_line(s, line, rest);
        } else if (!strcmp(line, "gpu") && s->ngpu < CT_MAX_GPUS) {
            g = &s->gpu[s->ngpu++];
            g->index = atoi(rest);
            g->persist = g->ecc_cur = g->ecc_pend = 1;   /* a daemon without `modes`: the defaults */
        } else if (g) parse_gpu_line(g, line, rest);
    }
    return version == 1;
}

/* A CUDA_VISIBLE_DEVICES entry: an index or a GPU UUID (or its prefix, as CUDA takes it), or a MIG
 * device's UUID (*mig set to its position on the GPU). The GPU's position in `all`, or -1. */
static int find_visible(const ct_snapshot *all, const char *item, int *mig) {
    char *end;
    long i = strtol(item, &end, 10);
    *mig = -1;
    if (*item && !*end) return (i >= 0 && i < all->ngpu) ? (int)i : -1;
    for (int k = 0; k < all->ngpu; k++) {
        if (!strncmp(all->gpu[k].uuid, item, strlen(item))) return k;
        for (int m = 0; m < all->gpu[k].nci; m++)
            if (!strcmp(all->gpu[k].ci[m].uuid, item)) {
                *mig = m;
                return k;
            }
    }
    return -1;
}

/* A job given MIG devices sees their GPUs, each with only those of its MIG devices (and their
 * processes). */
static void keep_mig(ct_gpu *g, const ct_gpu *orig, unsigned int named) {
    g->nci = g->nproc = 0;
    for (int m = 0; m < orig->nci; m++)
        if (named & (1u << m)) g->ci[g->nci++] = orig->ci[m];
    for (int p = 0; p < orig->nproc; p++)
        for (int m = 0; m < g->nci; m++)
            if (orig->proc[p].gi == g->ci[m].gi && orig->proc[p].ci == g->ci[m].id) g->proc[g->nproc++] = orig->proc[p];
}

/* The GPUs a process may open. Real NVML sees every GPU whose device node the process can open; a
 * Slurm job's device cgroup leaves it those of its GRES (which Slurm names in CUDA_VISIBLE_DEVICES),
 * a container those of NVIDIA_VISIBLE_DEVICES (the lease's env). So: NVIDIA_VISIBLE_DEVICES if set
 * ("all": every GPU; "none" or "void": none), else CUDA_VISIBLE_DEVICES; NULL: every GPU. */
static const char *visible_list(void) {
    const char *nvd = getenv("NVIDIA_VISIBLE_DEVICES");
    if (nvd) return strcmp(nvd, "all") == 0 ? NULL : (!strcmp(nvd, "none") || !strcmp(nvd, "void")) ? "" : nvd;
    return getenv("CUDA_VISIBLE_DEVICES");
}

/* The visible GPUs, renumbered from 0 in the list's order. CUDA stops at the first entry that is not
 * a device; so does this. */
static void apply_visible(ct_snapshot *s) {
    const char *cvd = visible_list();
    if (!cvd) return;
    static ct_snapshot all;
    all = *s;
    s->ngpu = 0;
    int pos[CT_MAX_GPUS];            /* the visible position of each GPU of `all`, or -1 */
    unsigned int named[CT_MAX_GPUS] = {0};
    for (int k = 0; k < CT_MAX_GPUS; k++) pos[k] = -1;
    char list[1024];
    snprintf(list, sizeof list, "%s", cvd);
    for (char *save = NULL, *item = strtok_r(list, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        int mig, k = find_visible(&all, item, &mig);
        if (k < 0) break;
        if (pos[k] < 0) {
            pos[k] = s->ngpu;
            s->gpu[s->ngpu++] = all.gpu[k];
        }
        if (mig >= 0) named[k] |= 1u << mig;
    }
    for (int k = 0; k < all.ngpu; k++)
        if (pos[k] >= 0 && named[k]) keep_mig(&s->gpu[pos[k]], &all.gpu[k], named[k]);
}

nvmlReturn_t ct_refresh(int force) {
    double t = now_s();
    if (!force && t - fetched_at < ttl_s()) return NVML_SUCCESS;
    char *page = fetch_page();
    if (!page) return NVML_ERROR_DRIVER_NOT_LOADED;
    static ct_snapshot fresh;
    memset(&fresh, 0, sizeof fresh);
    int ok = parse_page(page, &fresh);
    free(page);
    if (!ok) return NVML_ERROR_LIB_RM_VERSION_MISMATCH;
    apply_visible(&fresh);
    ct_snap = fresh;
    fetched_at = t;
    return NVML_SUCCESS;
}

nvmlReturn_t ct_enter(void) {
    pthread_mutex_lock(&ct_lock);
    if (!ct_initialized) return ct_leave(NVML_ERROR_UNINITIALIZED);
    nvmlReturn_t r = ct_refresh(0);
    /* The daemon gone after nvmlInit: as a driver that stopped answering. */
    return r ? ct_leave(r == NVML_ERROR_DRIVER_NOT_LOADED ? NVML_ERROR_UNKNOWN : r) : NVML_SUCCESS;
}

nvmlReturn_t ct_leave(nvmlReturn_t ret) {
    pthread_mutex_unlock(&ct_lock);
    return ret;
}

nvmlDevice_t ct_handle(int gpu, int mig) {
    struct nvmlDevice_st *h = &handles[gpu][mig + 1];
    h->gpu = gpu;
    h->mig = mig;
    return h;
}

nvmlReturn_t ct_device(nvmlDevice_t d, const ct_gpu **g, const ct_ci **mig) {
    struct nvmlDevice_st *first = &handles[0][0], *last = &handles[CT_MAX_GPUS - 1][NVML_MAX_MIG_DEVICES];
    if (d < first || d > last || d->gpu >= ct_snap.ngpu) return NVML_ERROR_INVALID_ARGUMENT;
    *g = &ct_snap.gpu[d->gpu];
    *mig = NULL;
    if ((*g)->lost) return NVML_ERROR_GPU_IS_LOST;
    if (d->mig >= 0) {
        if (d->mig >= (*g)->nci) return NVML_ERROR_NOT_FOUND;   /* its MIG device was destroyed */
        *mig = &(*g)->ci[d->mig];
    }
    return NVML_SUCCESS;
}

nvmlReturn_t ct_copy_str(char *dst, unsigned int len, const char *src) {
    if (!dst) return NVML_ERROR_INVALID_ARGUMENT;
    if (strlen(src) + 1 > len) return NVML_ERROR_INSUFFICIENT_SIZE;
    memcpy(dst, src, strlen(src) + 1);
    return NVML_SUCCESS;
}
