/* glasstorch's thread pool for the C kernels: `gt_run_pieces(fn, ctx, pieces, nthreads)`
   runs fn(ctx, 0 .. pieces-1) on the calling thread and up to nthreads - 1 helpers that
   glasstorch starts itself. Kernels in other libraries get its address from Python
   (native.runner()) and call it through a pointer, so one pool serves them all.

   The caller never waits for a thread that has not started. A job is `pieces` numbered
   pieces that the caller and the helpers claim one at a time; the caller works through
   them too, and when none is left it waits only for the pieces other threads claimed and
   are running. A helper that wakes late, because another process held its core, finds
   nothing left and sleeps again: the work then takes the one-thread time, not a time slice
   per rendezvous as OpenMP's barrier and OpenBLAS's yielding threads do. Helpers keep
   looking for the next job for SPIN_NS after their last one (a training step's next
   kernel comes within that), yielding the core at each look, then sleep on a condition
   variable. One job runs at a time; a call made while one runs (another Python thread, or
   a piece's own work) runs all its pieces on its own thread. Claims carry the job's
   generation in the same atomic word, so a late helper's claim on a finished job fails
   instead of taking a piece of the next. */

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <time.h>

#if defined(__x86_64__) || defined(__i386__)
#define CPU_RELAX() __builtin_ia32_pause()
#else
#define CPU_RELAX() ((void)0)
#endif

#define MAX_HELPERS 63
#define SPIN_NS 2000000

static pthread_mutex_t job_lock = PTHREAD_MUTEX_INITIALIZER;   /* one job at a time */
static pthread_mutex_t sleep_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake = PTHREAD_COND_INITIALIZER;
static _Atomic uint64_t claim;        /* generation << 32 | next piece */
static _Atomic int64_t finished;      /* pieces of the current job done */
static _Atomic int sleepers;
static piece_fn job_fn;
static const void* job_ctx;
static _Atomic int64_t job_pieces;    /* atomic: a late helper may read it as it changes */
static _Atomic int job_helpers;       /* helpers taking part: the caller's threads - 1 */
static int started;                   /* helpers created (under job_lock) */

static int64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* Claim and run pieces of generation `gen` until none is left. */
static void work(uint32_t gen)
{
    for (;;) {
        uint64_t c = atomic_load(&claim);
        if ((uint32_t)(c >> 32) != gen || (int64_t)(c & 0xffffffffu) >= job_pieces) break;
        if (!atomic_compare_exchange_weak(&claim, &c, c + 1)) continue;
        job_fn(job_ctx, (int64_t)(c & 0xffffffffu));   /* the job stays while a piece runs */
        atomic_fetch_add(&finished, 1);
    }
}

static void* helper(void* arg)
{
    const int index = (int)(intptr_t)arg;
    uint32_t seen = (uint32_t)(atomic_load(&claim) >> 32);
    for (;;) {
        int64_t until = now_ns() + SPIN_NS;
        uint32_t gen;
        while ((gen = (uint32_t)(atomic_load(&claim) >> 32)) == seen && now_ns() < until)
            sched_yield();
        if (gen == seen) {
            atomic_fetch_add(&sleepers, 1);
            pthread_mutex_lock(&sleep_lock);
            while ((gen = (uint32_t)(atomic_load(&claim) >> 32)) == seen)
                pthread_cond_wait(&wake, &sleep_lock);
            pthread_mutex_unlock(&sleep_lock);
            atomic_fetch_sub(&sleepers, 1);
        }
        seen = gen;
        if (index < job_helpers) work(gen);
    }
    return NULL;
}

/* Run fn(ctx, 0..pieces-1) on `nthreads` threads (the caller one of them). */
void gt_run_pieces(piece_fn fn, const void* ctx, int64_t pieces, int nthreads)
{
    if (nthreads > MAX_HELPERS + 1) nthreads = MAX_HELPERS + 1;
    if (nthreads < 2 || pieces < 2 || pthread_mutex_trylock(&job_lock) != 0) {
        for (int64_t p = 0; p < pieces; p++) fn(ctx, p);
        return;
    }
    while (started < nthreads - 1) {
        pthread_t t;
        if (pthread_create(&t, NULL, helper, (void*)(intptr_t)started) != 0) break;
        pthread_detach(t);
        started++;
    }
    job_fn = fn;
    job_ctx = ctx;
    job_pieces = pieces;
    job_helpers = nthreads - 1;
    atomic_store(&finished, 0);
    const uint32_t gen = (uint32_t)(atomic_load(&claim) >> 32) + 1;
    atomic_store(&claim, (uint64_t)gen << 32);                 /* publishes the job */
    if (atomic_load(&sleepers) > 0) {
        pthread_mutex_lock(&sleep_lock);
        pthread_cond_broadcast(&wake);
        pthread_mutex_unlock(&sleep_lock);
    }
    work(gen);
    while (atomic_load(&finished) < pieces) CPU_RELAX();
    pthread_mutex_unlock(&job_lock);
}
