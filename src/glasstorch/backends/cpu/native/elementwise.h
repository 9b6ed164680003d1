/* Elementwise kernels in blocks of LANES elements, each block one vector loop. The last,
   partial block runs on a zero-padded copy through the same loop, so every element goes
   through the vector math functions (libmvec's, whose last bit can differ from the scalar
   libm's): a result does not depend on where its element falls, on the thread count or
   on the tensor's length. Threads split at block boundaries. */
#include <string.h>

#define LANES 16

/* Elements per piece when a kernel runs on glasstorch's pool (pool.c): whole blocks. */
#define POOL_PIECE (LANES * 1024)

/* Where piece p's whole blocks of n elements end (they start at p * POOL_PIECE). */
static inline int64_t pool_piece_end(int64_t n, int64_t p)
{
    const int64_t full = n - n % LANES;
    return (p + 1) * POOL_PIECE < full ? (p + 1) * POOL_PIECE : full;
}

/* void NAME(int64_t n, const T* x, T* out, int param, int nthreads, void* runner):
   BLOCK(x, out, param) over every block. With a `runner` (pool.c's gt_run_pieces) and more
   than one thread the blocks go to the pool in pieces of POOL_PIECE elements, the caller
   starting at once; otherwise to an OpenMP team of nthreads. */
#define UNARY_KERNEL(NAME, T, BLOCK)                                                   \
typedef struct { int64_t n; const T* x; T* out; int param; } NAME##_job;              \
                                                                                       \
static void NAME##_piece(const void* ctx, int64_t p)                                   \
{                                                                                      \
    const NAME##_job* j = (const NAME##_job*)ctx;                                      \
    const int64_t end = pool_piece_end(j->n, p);                                       \
    for (int64_t i = p * POOL_PIECE; i < end; i += LANES)                              \
        BLOCK(j->x + i, j->out + i, j->param);                                         \
}                                                                                      \
                                                                                       \
void NAME(int64_t n, const T* x, T* out, int param, int nthreads, void* runner)        \
{                                                                                      \
    int64_t full = n - n % LANES;                                                      \
    if (runner != NULL && nthreads > 1) {                                              \
        const NAME##_job j = {n, x, out, param};                                       \
        ((run_pieces_fn)runner)(NAME##_piece, &j, (full + POOL_PIECE - 1) / POOL_PIECE, \
                                nthreads);                                             \
    } else {                                                                           \
        _Pragma("omp parallel for num_threads(nthreads)")                              \
        for (int64_t i = 0; i < full; i += LANES)                                      \
            BLOCK(x + i, out + i, param);                                              \
    }                                                                                  \
    if (full < n) {                                                                    \
        T xs[LANES] = {0}, os[LANES];                                                  \
        memcpy(xs, x + full, (size_t)(n - full) * sizeof(T));                          \
        BLOCK(xs, os, param);                                                          \
        memcpy(out + full, os, (size_t)(n - full) * sizeof(T));                        \
    }                                                                                  \
}

/* void NAME(int64_t n, const T* a, const T* b, T* out, int param, int nthreads,
   void* runner): as UNARY_KERNEL, over two inputs */
#define BINARY_KERNEL(NAME, T, BLOCK)                                                  \
typedef struct { int64_t n; const T *a, *b; T* out; int param; } NAME##_job;          \
                                                                                       \
static void NAME##_piece(const void* ctx, int64_t p)                                   \
{                                                                                      \
    const NAME##_job* j = (const NAME##_job*)ctx;                                      \
    const int64_t end = pool_piece_end(j->n, p);                                       \
    for (int64_t i = p * POOL_PIECE; i < end; i += LANES)                              \
        BLOCK(j->a + i, j->b + i, j->out + i, j->param);                               \
}                                                                                      \
                                                                                       \
void NAME(int64_t n, const T* a, const T* b, T* out, int param, int nthreads,          \
          void* runner)                                                                \
{                                                                                      \
    int64_t full = n - n % LANES;                                                      \
    if (runner != NULL && nthreads > 1) {                                              \
        const NAME##_job j = {n, a, b, out, param};                                    \
        ((run_pieces_fn)runner)(NAME##_piece, &j, (full + POOL_PIECE - 1) / POOL_PIECE, \
                                nthreads);                                             \
    } else {                                                                           \
        _Pragma("omp parallel for num_threads(nthreads)")                              \
        for (int64_t i = 0; i < full; i += LANES)                                      \
            BLOCK(a + i, b + i, out + i, param);                                       \
    }                                                                                  \
    if (full < n) {                                                                    \
        T as[LANES] = {0}, bs[LANES] = {0}, os[LANES];                                 \
        memcpy(as, a + full, (size_t)(n - full) * sizeof(T));                          \
        memcpy(bs, b + full, (size_t)(n - full) * sizeof(T));                          \
        BLOCK(as, bs, os, param);                                                      \
        memcpy(out + full, os, (size_t)(n - full) * sizeof(T));                        \
    }                                                                                  \
}
