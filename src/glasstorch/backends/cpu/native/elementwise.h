/* Elementwise kernels in blocks of LANES elements, each block one vector loop. The last,
   partial block runs on a zero-padded copy through the same loop, so every element goes
   through the vector math functions (libmvec's, whose last bit can differ from the scalar
   libm's): a result does not depend on where its element falls, on the thread count or
   on the tensor's length. Threads split at block boundaries. */
#include <string.h>

#define LANES 16

/* void NAME(int64_t n, const T* x, T* out, int param, int nthreads): BLOCK(x, out, param) */
#define UNARY_KERNEL(NAME, T, BLOCK)                                                   \
void NAME(int64_t n, const T* x, T* out, int param, int nthreads)                      \
{                                                                                      \
    int64_t full = n - n % LANES;                                                      \
    _Pragma("omp parallel for num_threads(nthreads)")                                  \
    for (int64_t i = 0; i < full; i += LANES)                                          \
        BLOCK(x + i, out + i, param);                                                  \
    if (full < n) {                                                                    \
        T xs[LANES] = {0}, os[LANES];                                                  \
        memcpy(xs, x + full, (size_t)(n - full) * sizeof(T));                          \
        BLOCK(xs, os, param);                                                          \
        memcpy(out + full, os, (size_t)(n - full) * sizeof(T));                        \
    }                                                                                  \
}

/* void NAME(int64_t n, const T* a, const T* b, T* out, int param, int nthreads) */
#define BINARY_KERNEL(NAME, T, BLOCK)                                                  \
void NAME(int64_t n, const T* a, const T* b, T* out, int param, int nthreads)          \
{                                                                                      \
    int64_t full = n - n % LANES;                                                      \
    _Pragma("omp parallel for num_threads(nthreads)")                                  \
    for (int64_t i = 0; i < full; i += LANES)                                          \
        BLOCK(a + i, b + i, out + i, param);                                           \
    if (full < n) {                                                                    \
        T as[LANES] = {0}, bs[LANES] = {0}, os[LANES];                                 \
        memcpy(as, a + full, (size_t)(n - full) * sizeof(T));                          \
        memcpy(bs, b + full, (size_t)(n - full) * sizeof(T));                          \
        BLOCK(as, bs, os, param);                                                      \
        memcpy(out + full, os, (size_t)(n - full) * sizeof(T));                        \
    }                                                                                  \
}
