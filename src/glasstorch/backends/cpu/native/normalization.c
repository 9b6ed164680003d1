/* LayerNorm over the last dimension of a C-contiguous (rows, cols) array, and its gradient:
   the NumPy formulas of normalization.py (layer_norm_cpu, layer_norm_backward_cpu) row by
   row, each row on one thread, the same roundings in the same order. The sums are NumPy's
   pairwise sums (the NumPy path sums by BLAS, a few ulps apart), those of squares and
   products without an array of the terms. The weight and bias gradients are column sums:
   rows are taken in chunks of a fixed size, each chunk's sums kept apart and added in
   chunk order, so that they do not depend on the thread count. The output row holds the
   centred row (the gradient's g * w) while it is summed, so it must not overlap an input
   (checked in Python). */

#define SQUARE(i) (a[i] * a[i])
#define TIMES_NORMALIZED(i) (a[i] * ((b[i] - c) * d))   /* a * (x - mean) * rstd */

#define LAYER_NORM_KERNELS(T, SUF, SQRT)                                               \
PAIRWISE_TERMS(sum_squares_##SUF, T, SQUARE)                                           \
PAIRWISE_TERMS(dot_normalized_##SUF, T, TIMES_NORMALIZED)                              \
                                                                                       \
/* y = (x - mean) * rstd (* w) (+ b), rstd = 1 / sqrt(mean((x - mean)^2) + eps);       \
   w and b may be NULL */                                                              \
void layer_norm_##SUF(int64_t rows, int64_t cols, const T* x, const T* w, const T* b,   \
                      double eps, T* out, T* mean, T* rstd, int nthreads)              \
{                                                                                      \
    const T n = (T)cols, e = (T)eps;                                                   \
    _Pragma("omp parallel for num_threads(nthreads)")                                  \
    for (int64_t r = 0; r < rows; r++) {                                               \
        const T* xr = x + r * cols;                                                    \
        T* o = out + r * cols;                                                         \
        T mu = gt_pairwise_sum_##T(xr, cols) / n;                                      \
        _Pragma("omp simd")                                                            \
        for (int64_t j = 0; j < cols; j++) o[j] = xr[j] - mu;                          \
        T rs = (T)1 / SQRT(sum_squares_##SUF(o, o, 0, 0, cols) / n + e);               \
        if (w && b) {                                                                  \
            _Pragma("omp simd")                                                        \
            for (int64_t j = 0; j < cols; j++) o[j] = o[j] * rs * w[j] + b[j];         \
        } else if (w) {                                                                \
            _Pragma("omp simd")                                                        \
            for (int64_t j = 0; j < cols; j++) o[j] = o[j] * rs * w[j];                \
        } else if (b) {                                                                \
            _Pragma("omp simd")                                                        \
            for (int64_t j = 0; j < cols; j++) o[j] = o[j] * rs + b[j];                \
        } else {                                                                       \
            _Pragma("omp simd")                                                        \
            for (int64_t j = 0; j < cols; j++) o[j] *= rs;                             \
        }                                                                              \
        mean[r] = mu;                                                                  \
        rstd[r] = rs;                                                                  \
    }                                                                                  \
}                                                                                      \
                                                                                       \
/* The row's sum(a) and sum(a * xhat) in one pass, each the sum PAIRWISE_TERMS gives: for \
   8 to 128 terms the same eight partial sums, added in the same order; otherwise the two \
   sums apart. */                                                                      \
static void sum_and_dot_normalized_##SUF(const T* a, const T* x, T mu, T rs, int64_t n,  \
                                         T* sum, T* dot)                               \
{                                                                                      \
    if (n < 8 || n > 128) {                                                            \
        *sum = gt_pairwise_sum_##T(a, n);                                              \
        *dot = dot_normalized_##SUF(a, x, mu, rs, n);                                  \
        return;                                                                        \
    }                                                                                  \
    T s[8], d[8];                                                                      \
    int64_t i;                                                                         \
    for (int j = 0; j < 8; j++) {                                                      \
        s[j] = a[j];                                                                   \
        d[j] = a[j] * ((x[j] - mu) * rs);                                              \
    }                                                                                  \
    for (i = 8; i < n - (n % 8); i += 8) {                                             \
        _Pragma("omp simd")                                                            \
        for (int j = 0; j < 8; j++) {                                                  \
            s[j] += a[i + j];                                                          \
            d[j] += a[i + j] * ((x[i + j] - mu) * rs);                                 \
        }                                                                              \
    }                                                                                  \
    T rs_ = ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));         \
    T rd = ((d[0] + d[1]) + (d[2] + d[3])) + ((d[4] + d[5]) + (d[6] + d[7]));          \
    for (; i < n; i++) {                                                               \
        rs_ += a[i];                                                                   \
        rd += a[i] * ((x[i] - mu) * rs);                                               \
    }                                                                                  \
    *sum = rs_;                                                                        \
    *dot = rd;                                                                         \
}                                                                                      \
                                                                                       \
/* With xhat = (x - mean) * rstd and gx = g * w (g without w): dx = ((gx - xhat *       \
   (sum(gx * xhat) / cols)) - sum(gx) / cols) * rstd; dw = column sums of g * xhat, db   \
   those of g. Any of dx, w, dw, db may be NULL. Rows go in chunks of `chunk`: the first \
   chunk's column sums go into dw and db, chunk k's into row k - 1 of the dw and db      \
   halves of `parts` (2 x (rows / chunk rounded up - 1) x cols), added to them in order  \
   last. A row's two sums are one pass. */                                             \
void layer_norm_backward_##SUF(int64_t rows, int64_t cols, const T* g, const T* x,     \
                               const T* mean, const T* rstd, const T* w, T* dx, T* dw,  \
                               T* db, T* parts, int64_t chunk, int nthreads)            \
{                                                                                      \
    const T n = (T)cols;                                                               \
    int64_t chunks = (rows + chunk - 1) / chunk;                                       \
    T* dw_parts = parts;                                                               \
    T* db_parts = parts + (chunks > 1 ? (chunks - 1) * cols : 0);                      \
    _Pragma("omp parallel for num_threads(nthreads)")                                  \
    for (int64_t k = 0; k < chunks; k++) {                                             \
        T* pw = dw ? (k ? dw_parts + (k - 1) * cols : dw) : NULL;                      \
        T* pb = db ? (k ? db_parts + (k - 1) * cols : db) : NULL;                      \
        if (pw) memset(pw, 0, (size_t)cols * sizeof(T));                               \
        if (pb) memset(pb, 0, (size_t)cols * sizeof(T));                               \
        int64_t end = (k + 1) * chunk < rows ? (k + 1) * chunk : rows;                 \
        for (int64_t r = k * chunk; r < end; r++) {                                    \
            const T* gr = g + r * cols;                                                \
            const T* xr = x + r * cols;                                                \
            T mu = mean[r], rs = rstd[r];                                              \
            if (pw) {                                                                  \
                _Pragma("omp simd")                                                    \
                for (int64_t j = 0; j < cols; j++) pw[j] += gr[j] * ((xr[j] - mu) * rs); \
            }                                                                          \
            if (pb) {                                                                  \
                _Pragma("omp simd")                                                    \
                for (int64_t j = 0; j < cols; j++) pb[j] += gr[j];                     \
            }                                                                          \
            if (!dx)                                                                   \
                continue;                                                              \
            T* o = dx + r * cols;                                                      \
            if (w) {                                                                   \
                _Pragma("omp simd")                                                    \
                for (int64_t j = 0; j < cols; j++) o[j] = gr[j] * w[j];                \
            } else {                                                                   \
                memcpy(o, gr, (size_t)cols * sizeof(T));                               \
            }                                                                          \
            T a, bx;                                                                   \
            sum_and_dot_normalized_##SUF(o, xr, mu, rs, cols, &a, &bx);                \
            a /= n;                                                                    \
            bx /= n;                                                                   \
            _Pragma("omp simd")                                                        \
            for (int64_t j = 0; j < cols; j++)                                         \
                o[j] = ((o[j] - ((xr[j] - mu) * rs) * bx) - a) * rs;                   \
        }                                                                              \
    }                                                                                  \
    for (int64_t k = 1; k < chunks; k++) {                                             \
        if (dw) {                                                                      \
            _Pragma("omp simd")                                                        \
            for (int64_t j = 0; j < cols; j++) dw[j] += dw_parts[(k - 1) * cols + j];  \
        }                                                                              \
        if (db) {                                                                      \
            _Pragma("omp simd")                                                        \
            for (int64_t j = 0; j < cols; j++) db[j] += db_parts[(k - 1) * cols + j];  \
        }                                                                              \
    }                                                                                  \
}

LAYER_NORM_KERNELS(float, f32, sqrtf)
LAYER_NORM_KERNELS(double, f64, sqrt)
