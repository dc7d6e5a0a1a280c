/*
 * parallel.c - a small fork-join parallel-for on pthreads.
 *
 * Each call spawns threads-1 pthreads (the calling thread works too), hands out chunks of `grain` items
 * through an atomic counter, and joins. No pool is kept between calls: the callers only ask for threads
 * when the work is large enough to pay for creating them (dmlpy_choose_threads).
 */
#if !defined(_WIN32) && !defined(_GNU_SOURCE)
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#endif

#include "dmlpy_internal.h"

#if !defined(_WIN32) || defined(DMLPY_HAVE_PTHREADS)
#define DMLPY_USE_PTHREADS 1
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <unistd.h>
#elif defined(_WIN32)
#include <windows.h>
#endif

#define DMLPY_MAX_THREADS 256u

/* Work is measured in units of about one vectorised element operation (~1/16 ns on a current x86 core;
 * callers scale scalar work up). Creating and joining a thread costs 15-90 us, so below
 * DMLPY_PARALLEL_MIN_WORK (~130 us of work) one thread is used, and every extra thread must get at least
 * DMLPY_WORK_PER_THREAD (~65 us). */
#ifndef DMLPY_PARALLEL_MIN_WORK
#define DMLPY_PARALLEL_MIN_WORK ((uint64_t)1 << 21)
#endif
#ifndef DMLPY_WORK_PER_THREAD
#define DMLPY_WORK_PER_THREAD ((uint64_t)1 << 20)
#endif

unsigned dmlpy_online_cpus(void) {
#if defined(DMLPY_USE_PTHREADS)
#if defined(CPU_COUNT) && defined(__linux__)
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0) {
        int n = CPU_COUNT(&set);
        if (n > 0) return (unsigned)n;
    }
#endif
    {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        return n > 0 ? (unsigned)n : 1u;
    }
#elif defined(_WIN32)
    SYSTEM_INFO info;
    GetSystemInfo(&info);
    return info.dwNumberOfProcessors > 0 ? (unsigned)info.dwNumberOfProcessors : 1u;
#else
    return 1u;
#endif
}

unsigned dmlpy_choose_threads(uint64_t work, uint64_t items, unsigned requested) {
    uint64_t limit = requested ? requested : dmlpy_online_cpus();
    uint64_t by_work;
    if (limit > DMLPY_MAX_THREADS) limit = DMLPY_MAX_THREADS;
    if (limit > items) limit = items;
    if (limit <= 1 || work < DMLPY_PARALLEL_MIN_WORK) return 1;
    by_work = work / DMLPY_WORK_PER_THREAD;
    if (by_work < limit) limit = by_work;
    return limit < 1 ? 1u : (unsigned)limit;
}

uint64_t dmlpy_choose_grain(uint64_t items, unsigned threads) {
    uint64_t grain;
    if (threads <= 1) return items ? items : 1;
    /* About 8 chunks per thread: enough to balance uneven rows, few enough to keep rows of one chunk
     * adjacent (consecutive output rows share input rows in cache). */
    grain = items / ((uint64_t)threads * 8u);
    return grain ? grain : 1;
}

#if defined(DMLPY_USE_PTHREADS)

typedef struct dmlpy_job {
    atomic_uint_fast64_t next;
    uint64_t count;
    uint64_t grain;
    dmlpy_range_fn fn;
    void* ctx;
} dmlpy_job;

typedef struct dmlpy_worker_arg {
    dmlpy_job* job;
    unsigned worker;
} dmlpy_worker_arg;

static void dmlpy_run_chunks(dmlpy_job* job, unsigned worker) {
    for (;;) {
        uint64_t begin = atomic_fetch_add_explicit(&job->next, job->grain, memory_order_relaxed);
        uint64_t end;
        if (begin >= job->count) break;
        end = job->count - begin > job->grain ? begin + job->grain : job->count;
        job->fn(job->ctx, begin, end, worker);
    }
}

static void* dmlpy_thread_main(void* p) {
    dmlpy_worker_arg* arg = (dmlpy_worker_arg*)p;
    dmlpy_run_chunks(arg->job, arg->worker);
    return NULL;
}

void dmlpy_parallel_for(uint64_t count, uint64_t grain, unsigned threads, dmlpy_range_fn fn, void* ctx) {
    dmlpy_job job;
    pthread_t handles[DMLPY_MAX_THREADS];
    dmlpy_worker_arg args[DMLPY_MAX_THREADS];
    unsigned created = 0, i;

    if (count == 0) return;
    if (grain == 0) grain = 1;
    if (threads > DMLPY_MAX_THREADS) threads = DMLPY_MAX_THREADS;
    if (threads <= 1 || count <= grain) {
        fn(ctx, 0, count, 0);
        return;
    }
    atomic_init(&job.next, 0);
    job.count = count;
    job.grain = grain;
    job.fn = fn;
    job.ctx = ctx;
    for (i = 1; i < threads; ++i) {
        args[created].job = &job;
        args[created].worker = i;
        if (pthread_create(&handles[created], NULL, dmlpy_thread_main, &args[created]) != 0) {
            break; /* the workers already running (and this thread) take the rest */
        }
        ++created;
    }
    dmlpy_run_chunks(&job, 0);
    for (i = 0; i < created; ++i) {
        pthread_join(handles[i], NULL);
    }
}

#else /* no threads */

void dmlpy_parallel_for(uint64_t count, uint64_t grain, unsigned threads, dmlpy_range_fn fn, void* ctx) {
    (void)grain;
    (void)threads;
    if (count) fn(ctx, 0, count, 0);
}

#endif
