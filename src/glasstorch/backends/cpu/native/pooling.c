/* 2-d max pooling with PyTorch's flat indices, and its gradient, over C-contiguous
   (planes, H, W) arrays: what max_pool_cpu and scatter_add_cpu of pooling.py compute with
   NumPy passes, here in the cache, a plane at a time. A window's positions are taken in
   row-major order; a larger value or a NaN takes the maximum, so ties keep the first
   position and the last NaN wins, and a window with nothing above -inf keeps its first
   position inside the plane (PyTorch's loop). The gradient adds each output's gradient at
   its index, in output order within a plane (np.add.at's order). Planes run in parallel. */
#include <omp.h>

/* The windows of a plane, for every output o in one vector loop per kernel offset k:
   the maximum so far in values[o], its index in indices[o], reading src (the plane, or a
   copy of it in a -inf border when a window reaches outside it; -inf is never taken, so
   a window's index stays inside the plane) at start[o] + kstart[k]. An index taken is
   at[o] + kat[k]; a window starts at first[o], its first position inside the plane. */
#define POOL_PLANE(T)                                                                  \
    for (int64_t o = 0; o < n_out; o++) {                                              \
        vp[o] = -INFINITY;                                                             \
        ip[o] = first[o];                                                              \
    }                                                                                  \
    for (int64_t k = 0; k < n_k; k++) {                                                \
        const T* s = src + kstart[k];                                                  \
        int64_t ka = kat[k];                                                           \
        _Pragma("omp simd")                                                            \
        for (int64_t o = 0; o < n_out; o++) {                                          \
            T v = s[start[o]];                                                         \
            bool take = (v > vp[o]) | (v != v);                                        \
            vp[o] = take ? v : vp[o];                                                  \
            ip[o] = take ? at[o] + ka : ip[o];                                         \
        }                                                                              \
    }

/* tables (int64): start, at, first (n_out each), kstart, kat (n_k each), filled by the
   caller (pooling.py, _pool_tables); border: nthreads planes of hp x wp, or none when
   hp is 0 (every window inside the plane, read in place). */
#define MAX_POOL2D(NAME, T)                                                            \
void NAME(int64_t planes, int64_t ih, int64_t iw, int64_t n_out, int64_t n_k,          \
          int64_t hp, int64_t wp, int64_t ph, int64_t pw, const int64_t* tables,       \
          const T* x, T* values, int64_t* indices, T* border, int nthreads)           \
{                                                                                      \
    const int64_t *start = tables, *at = tables + n_out, *first = tables + 2 * n_out;  \
    const int64_t *kstart = tables + 3 * n_out, *kat = kstart + n_k;                   \
    _Pragma("omp parallel num_threads(nthreads)")                                      \
    {                                                                                  \
        T* own = hp ? border + (int64_t)omp_get_thread_num() * hp * wp : NULL;         \
        if (own)                                                                       \
            for (int64_t e = 0; e < hp * wp; e++)                                      \
                own[e] = -INFINITY;                                                    \
        _Pragma("omp for")                                                             \
        for (int64_t p = 0; p < planes; p++) {                                         \
            const T* xp = x + p * ih * iw;                                             \
            T* vp = values + p * n_out;                                                \
            int64_t* ip = indices + p * n_out;                                         \
            const T* src = xp;                                                         \
            if (own) {                                                                 \
                for (int64_t h = 0; h < ih; h++)                                       \
                    memcpy(own + (h + ph) * wp + pw, xp + h * iw, (size_t)iw * sizeof(T)); \
                src = own;                                                             \
            }                                                                          \
            POOL_PLANE(T)                                                              \
        }                                                                              \
    }                                                                                  \
}

/* out (planes, in_plane) = 0, then out[p][indices[p][o]] += g[p][o]; an index outside
   the plane is skipped and counted in *bad (the caller then runs the NumPy path). */
#define MAX_POOL_BACKWARD(NAME, T)                                                     \
void NAME(int64_t planes, int64_t in_plane, int64_t out_plane, const T* g,             \
          const int64_t* indices, T* out, int64_t* bad, int nthreads)                  \
{                                                                                      \
    int64_t nbad = 0;                                                                  \
    _Pragma("omp parallel for num_threads(nthreads) reduction(+:nbad)")                \
    for (int64_t p = 0; p < planes; p++) {                                             \
        T* op = out + p * in_plane;                                                    \
        const T* gp = g + p * out_plane;                                               \
        const int64_t* ip = indices + p * out_plane;                                   \
        memset(op, 0, (size_t)in_plane * sizeof(T));                                   \
        for (int64_t o = 0; o < out_plane; o++) {                                      \
            int64_t k = ip[o];                                                         \
            if ((uint64_t)k < (uint64_t)in_plane)                                      \
                op[k] += gp[o];                                                        \
            else                                                                       \
                nbad++;                                                                \
        }                                                                              \
    }                                                                                  \
    *bad = nbad;                                                                       \
}

MAX_POOL2D(max_pool2d_f32, float)
MAX_POOL2D(max_pool2d_f64, double)
MAX_POOL_BACKWARD(max_pool_backward_f32, float)
MAX_POOL_BACKWARD(max_pool_backward_f64, double)
