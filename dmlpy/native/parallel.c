/*
 * parallel.c - a small fork-join parallel-for on pthreads.
 *
 * The calling thread and up to threads-1 workers of a persistent, lazily created pool (below) take chunks
 * of `grain` items through an atomic counter. The callers only ask for threads when the work is large
 * enough to pay for waking them (dmlpy_choose_threads).
 */
#if !defined(_WIN32) && !defined(_GNU_SOURCE)
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#endif

#include "dmlpy_internal.h"

#if !defined(_WIN32) || defined(DMLPY_HAVE_PTHREADS)
#define DMLPY_USE_PTHREADS 1
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <time.h>
#include <unistd.h>
#elif defined(_WIN32)
#include <windows.h>
#endif

#define DMLPY_MAX_THREADS 256u

/* How long a pool worker (and a caller waiting for its workers) watches for its event before sleeping. */
#ifndef DMLPY_SPIN_NS
#define DMLPY_SPIN_NS 100000
#endif

/* The one rule every kernel's thread count goes through ("small problems use one thread when a second
 * cannot help"). Work is measured in units of about one vectorised element operation (~1/16 ns on a
 * current x86 core; callers scale scalar work up). Below DMLPY_PARALLEL_MIN_WORK (~33 us of work) one
 * thread is used, and every extra thread must get at least DMLPY_WORK_PER_THREAD (~16 us). The pool's
 * workers watch for the next job for DMLPY_SPIN_NS after each one, so in a loop of kernels (a model's
 * layers, a benchmark) a second thread joins within a microsecond or two, and a worker that is late
 * costs only parallelism (the caller takes every chunk left; see below). Both peers split work this
 * small too (PyTorch's parallel_for at 32768 elements). The thresholds were 4x higher before the pool
 * spun; on a busy machine a woken worker can still land on the caller's core, and then 30-130 us
 * problems run 10-15% slower on two threads than on one. */
#ifndef DMLPY_PARALLEL_MIN_WORK
#define DMLPY_PARALLEL_MIN_WORK ((uint64_t)1 << 19)
#endif
#ifndef DMLPY_WORK_PER_THREAD
#define DMLPY_WORK_PER_THREAD ((uint64_t)1 << 18)
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

uint64_t dmlpy_core_cache_bytes(void) {
    static volatile uint64_t cached = 0; /* two first calls store the same value */
    uint64_t bytes = cached;
    if (bytes == 0) {
        long l2 = 0;
#if defined(_SC_LEVEL2_CACHE_SIZE)
        l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
#endif
        bytes = l2 > 0 ? (uint64_t)l2 : (uint64_t)1 << 20;
        cached = bytes;
    }
    return bytes;
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

/*
 * A persistent pool, created lazily by the first parallel call and grown to the largest thread count
 * asked for. A worker that finishes a job watches for the next one for DMLPY_SPIN_NS (pausing, without
 * the lock), then sleeps on a condition variable: kernels called back to back (a model's layers, a
 * benchmark's loop) find their workers running instead of paying a wake-up each, which on a busy
 * machine is often a scheduler time slice (measured: the second thread joined a 300 us softmax in about
 * half the calls, 20-350 us late). An idle pool costs nothing after that. A call publishes its job
 * under the pool lock and wakes the workers, then works on it itself; a worker that wakes while the
 * job is still open joins it with the next free worker number (1 .. threads-1), takes chunks until none
 * are left, and reports back. When the caller runs out of chunks it closes the job (late workers then
 * skip it) and waits only for the workers that joined, for at most the chunk each is running: a slow
 * wake-up costs parallelism, not waiting.
 *
 * One call uses the pool at a time; a concurrent call (another host thread) or a nested one spawns
 * its own threads as before. After fork() the child starts without a pool (pthread_atfork) and
 * creates one again when it needs it.
 */

/* A job's items are handed out in chunks of `grain`. The calling thread (worker 0) takes chunks from the
 * front and the pool's workers from the back, so with two threads each takes about the same half call after
 * call: a kernel run in a loop (a benchmark, a model whose layers split alike) finds its half of the data in
 * its own core's L2 instead of the other core's (12x197x197 ReduceSum on two threads: 41 -> 3x us). Which
 * thread computes a chunk never changes a result. */
typedef struct dmlpy_job {
    atomic_uint_fast64_t ends; /* (first chunk not taken from the front) << 32 | (first chunk taken from the back) */
    atomic_uint_fast64_t next; /* beyond 2^32 chunks: the next item, every thread from the front */
    uint64_t count;
    uint64_t grain;
    int two_ended;
    dmlpy_range_fn fn;
    void* ctx;
} dmlpy_job;

static void dmlpy_job_start(dmlpy_job* job, uint64_t count, uint64_t grain) {
    const uint64_t chunks = count / grain + (count % grain != 0);
    job->count = count;
    job->grain = grain;
    job->two_ended = chunks < ((uint64_t)1 << 32);
    atomic_store_explicit(&job->ends, job->two_ended ? chunks : 0, memory_order_relaxed);
    atomic_store_explicit(&job->next, 0, memory_order_relaxed);
}

/* The first item of a chunk for this worker, or job->count when none is left. */
static uint64_t dmlpy_claim(dmlpy_job* job, unsigned worker) {
    uint64_t cur;
    if (!job->two_ended) return atomic_fetch_add_explicit(&job->next, job->grain, memory_order_relaxed);
    cur = atomic_load_explicit(&job->ends, memory_order_relaxed);
    for (;;) {
        const uint64_t front = cur >> 32, back = cur & 0xffffffffu;
        if (front >= back) return job->count;
        if (worker == 0) {
            if (atomic_compare_exchange_weak_explicit(&job->ends, &cur, ((front + 1) << 32) | back, memory_order_relaxed,
                                                      memory_order_relaxed)) {
                return front * job->grain;
            }
        } else if (atomic_compare_exchange_weak_explicit(&job->ends, &cur, (front << 32) | (back - 1),
                                                         memory_order_relaxed, memory_order_relaxed)) {
            return (back - 1) * job->grain;
        }
    }
}

static void dmlpy_run_chunks(dmlpy_job* job, unsigned worker) {
    for (;;) {
        uint64_t begin = dmlpy_claim(job, worker);
        uint64_t end;
        if (begin >= job->count) break;
        end = job->count - begin > job->grain ? begin + job->grain : job->count;
        job->fn(job->ctx, begin, end, worker);
    }
}

typedef struct dmlpy_pool {
    pthread_mutex_t lock;
    pthread_cond_t wake;   /* workers wait here for a job */
    pthread_cond_t done;   /* the caller waits here for the joined workers */
    unsigned created;      /* worker threads alive */
    uint64_t generation;   /* incremented by every job */
    int open;              /* the current job accepts workers */
    unsigned joined;       /* workers that joined the current job (their numbers are 1 .. joined) */
    unsigned limit;        /* most workers the current job takes (threads - 1) */
    unsigned active;       /* joined and not finished */
    dmlpy_job job;
} dmlpy_pool;

static dmlpy_pool dmlpy_the_pool = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER,
                                    0, 0, 0, 0, 0, 0, {0, 0, 0, 0, 0, NULL, NULL}};
static atomic_int dmlpy_pool_busy;            /* a call owns the pool */
static atomic_uint_fast64_t dmlpy_pool_posted;  /* the generation of the last job published (read unlocked) */
static atomic_uint dmlpy_pool_active;         /* pool->active, readable without the lock */

static uint64_t dmlpy_now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static inline void dmlpy_cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

/* Spins until *flag (an atomic the caller names through `ready`) holds, or DMLPY_SPIN_NS pass. */
#define DMLPY_SPIN_UNTIL(ready)                                                      \
    do {                                                                             \
        uint64_t deadline_ = 0;                                                      \
        unsigned n_;                                                                 \
        for (n_ = 1; !(ready); ++n_) {                                               \
            dmlpy_cpu_relax();                                                       \
            if ((n_ & 63u) == 0) {                                                   \
                const uint64_t t_ = dmlpy_now_ns();                                  \
                if (deadline_ == 0) deadline_ = t_ + DMLPY_SPIN_NS;                  \
                else if (t_ >= deadline_) break;                                     \
            }                                                                        \
        }                                                                            \
    } while (0)
static pthread_once_t dmlpy_pool_once = PTHREAD_ONCE_INIT;

static void dmlpy_pool_prepare_fork(void) { pthread_mutex_lock(&dmlpy_the_pool.lock); }
static void dmlpy_pool_parent_fork(void) { pthread_mutex_unlock(&dmlpy_the_pool.lock); }
static void dmlpy_pool_child_fork(void) {
    /* Only the forking thread exists in the child: no workers, no call in progress. */
    dmlpy_pool* pool = &dmlpy_the_pool;
    pthread_mutex_init(&pool->lock, NULL);
    pthread_cond_init(&pool->wake, NULL);
    pthread_cond_init(&pool->done, NULL);
    pool->created = 0;
    pool->open = 0;
    pool->joined = 0;
    pool->limit = 0;
    pool->active = 0;
    atomic_store(&dmlpy_pool_busy, 0);
    atomic_store(&dmlpy_pool_active, 0u);
}
static void dmlpy_pool_init_once(void) {
    pthread_atfork(dmlpy_pool_prepare_fork, dmlpy_pool_parent_fork, dmlpy_pool_child_fork);
}

static void* dmlpy_pool_main(void* unused) {
    dmlpy_pool* pool = &dmlpy_the_pool;
    uint64_t last = 0; /* the generation this worker last took part in (0: none; jobs start at 1) */
    (void)unused;
    pthread_mutex_lock(&pool->lock);
    for (;;) {
        unsigned worker;
        if (last != 0 && !(pool->open && pool->generation != last)) { /* watch for the next job first */
            pthread_mutex_unlock(&pool->lock);
            DMLPY_SPIN_UNTIL(atomic_load_explicit(&dmlpy_pool_posted, memory_order_acquire) != last);
            pthread_mutex_lock(&pool->lock);
        }
        while (!(pool->open && pool->generation != last && pool->joined < pool->limit)) {
            pthread_cond_wait(&pool->wake, &pool->lock);
        }
        last = pool->generation;
        worker = ++pool->joined;
        ++pool->active;
        atomic_fetch_add_explicit(&dmlpy_pool_active, 1u, memory_order_relaxed);
        pthread_mutex_unlock(&pool->lock);
        dmlpy_run_chunks(&pool->job, worker);
        pthread_mutex_lock(&pool->lock);
        atomic_fetch_sub_explicit(&dmlpy_pool_active, 1u, memory_order_release);
        if (--pool->active == 0 && !pool->open) pthread_cond_signal(&pool->done);
    }
    return NULL;
}

/* Grows the pool to `want` workers (caller holds the lock). Returns how many exist. */
static unsigned dmlpy_pool_grow(dmlpy_pool* pool, unsigned want) {
    if (pool->created < want) {
        pthread_attr_t attr;
        sigset_t all, old;
        if (pthread_attr_init(&attr) != 0) return pool->created;
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        /* Workers inherit a fully blocked signal mask: signals stay with the host's threads. */
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        while (pool->created < want) {
            pthread_t handle;
            if (pthread_create(&handle, &attr, dmlpy_pool_main, NULL) != 0) break;
            ++pool->created;
        }
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        pthread_attr_destroy(&attr);
    }
    return pool->created;
}

typedef struct dmlpy_worker_arg {
    dmlpy_job* job;
    unsigned worker;
} dmlpy_worker_arg;

static void* dmlpy_thread_main(void* p) {
    dmlpy_worker_arg* arg = (dmlpy_worker_arg*)p;
    dmlpy_run_chunks(arg->job, arg->worker);
    return NULL;
}

/* The pool is in use (another host thread, or a nested call): fork-join on fresh threads. */
static void dmlpy_parallel_spawn(uint64_t count, uint64_t grain, unsigned threads, dmlpy_range_fn fn, void* ctx) {
    dmlpy_job job;
    pthread_t handles[DMLPY_MAX_THREADS];
    dmlpy_worker_arg args[DMLPY_MAX_THREADS];
    unsigned created = 0, i;
    atomic_init(&job.next, 0);
    atomic_init(&job.ends, 0);
    dmlpy_job_start(&job, count, grain);
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

void dmlpy_parallel_for(uint64_t count, uint64_t grain, unsigned threads, dmlpy_range_fn fn, void* ctx) {
    dmlpy_pool* pool = &dmlpy_the_pool;
    unsigned workers;

    if (count == 0) return;
    if (grain == 0) grain = 1;
    if (threads > DMLPY_MAX_THREADS) threads = DMLPY_MAX_THREADS;
    if (threads <= 1 || count <= grain) {
        fn(ctx, 0, count, 0);
        return;
    }
    if (atomic_exchange(&dmlpy_pool_busy, 1) != 0) {
        dmlpy_parallel_spawn(count, grain, threads, fn, ctx);
        return;
    }
    pthread_once(&dmlpy_pool_once, dmlpy_pool_init_once);

    pthread_mutex_lock(&pool->lock);
    workers = dmlpy_pool_grow(pool, threads - 1);
    if (workers > threads - 1) workers = threads - 1;
    dmlpy_job_start(&pool->job, count, grain);
    pool->job.fn = fn;
    pool->job.ctx = ctx;
    ++pool->generation;
    atomic_store_explicit(&dmlpy_pool_posted, pool->generation, memory_order_release);
    pool->open = workers > 0;
    pool->joined = 0;
    pool->limit = workers;
    pool->active = 0;
    if (workers == 1) {
        pthread_cond_signal(&pool->wake);
    } else if (workers > 1) {
        pthread_cond_broadcast(&pool->wake);
    }
    pthread_mutex_unlock(&pool->lock);

    dmlpy_run_chunks(&pool->job, 0);

    pthread_mutex_lock(&pool->lock);
    pool->open = 0; /* no worker joins from here on: only the joined ones can still be running */
    if (pool->active > 0) { /* each is finishing at most one chunk: watch before sleeping */
        pthread_mutex_unlock(&pool->lock);
        DMLPY_SPIN_UNTIL(atomic_load_explicit(&dmlpy_pool_active, memory_order_acquire) == 0);
        pthread_mutex_lock(&pool->lock);
    }
    while (pool->active > 0) pthread_cond_wait(&pool->done, &pool->lock);
    pthread_mutex_unlock(&pool->lock);
    atomic_store(&dmlpy_pool_busy, 0);
}

#else /* no threads */

void dmlpy_parallel_for(uint64_t count, uint64_t grain, unsigned threads, dmlpy_range_fn fn, void* ctx) {
    (void)grain;
    (void)threads;
    if (count) fn(ctx, 0, count, 0);
}

#endif
