/* embedding and embedding_dense_backward over int64 indices. The forward copies the weight
   row each index names (bytes: any dtype). The backward adds each row of the incoming
   gradient into the row of the weight's gradient that its index names, rows whose index is
   padding_idx left out (the NumPy path of normalization.py, embedding_grad_cpu without
   scale_grad_by_freq, which sums by a one-hot product or a stable sort and
   np.add.reduceat); each sum is made in index order, whatever the number of threads: they
   split the columns, never the rows. Both first check every index against [0,
   num_weights): finding one outside, they write its position to *bad and nothing else. */

#define CHECK_INDICES(n, idx, num_weights, bad)                                        \
    for (int64_t i = 0; i < (n); i++) {                                                \
        if ((idx)[i] < 0 || (idx)[i] >= (num_weights)) {                               \
            *(bad) = i;                                                                \
            return;                                                                    \
        }                                                                              \
    }                                                                                  \
    *(bad) = -1;

/* out (n rows of row_bytes) = the weight's rows idx[i] */
void embedding_forward(int64_t n, int64_t row_bytes, int64_t num_weights,
                       const int64_t* idx, const char* weight, char* out, int64_t* bad)
{
    CHECK_INDICES(n, idx, num_weights, bad)
    for (int64_t i = 0; i < n; i++)
        memcpy(out + i * row_bytes, weight + idx[i] * row_bytes, (size_t)row_bytes);
}

#define EMBEDDING_KERNELS(T, SUF)                                                      \
void embedding_backward_##SUF(int64_t n, int64_t width, int64_t num_weights,          \
                              const int64_t* idx, const T* grad, int64_t padding_idx,   \
                              T* out, int64_t* bad, int nthreads)                      \
{                                                                                      \
    CHECK_INDICES(n, idx, num_weights, bad)                                            \
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
