/* embedding_dense_backward: each row of the incoming gradient added into the row of the
   weight's gradient that its index names, rows whose index is padding_idx left out (the
   NumPy path of normalization.py, embedding_grad_cpu without scale_grad_by_freq, which
   sums by a one-hot product or a stable sort and np.add.reduceat). Each sum is made in
   index order, whatever the number of threads: they split the columns, never the rows.
   The indices are checked in Python to lie in [0, num_weights). */

#define EMBEDDING_KERNELS(T, SUF)                                                      \
void embedding_backward_##SUF(int64_t n, int64_t width, int64_t num_weights,          \
                              const int64_t* idx, const T* grad, int64_t padding_idx,   \
                              T* out, int nthreads)                                    \
{                                                                                      \
    memset(out, 0, (size_t)(num_weights * width) * sizeof(T));                        \
    int64_t part = (width + nthreads - 1) / nthreads;                                  \
    part += (LANES - part % LANES) % LANES;                                            \
    _Pragma("omp parallel for num_threads(nthreads)")                                  \
    for (int64_t lo = 0; lo < width; lo += part) {                                     \
        int64_t hi = lo + part < width ? lo + part : width;                            \
        for (int64_t i = 0; i < n; i++) {                                              \
            if (idx[i] == padding_idx)                                                 \
                continue;                                                              \
            T* o = out + idx[i] * width;                                               \
            const T* g = grad + i * width;                                             \
            _Pragma("omp simd")                                                        \
            for (int64_t j = lo; j < hi; j++) o[j] += g[j];                            \
        }                                                                              \
    }                                                                                  \
}

EMBEDDING_KERNELS(float, f32)
EMBEDDING_KERNELS(double, f64)
