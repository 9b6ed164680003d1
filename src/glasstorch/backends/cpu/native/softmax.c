/* Softmax and log-softmax over the last dimension of a C-contiguous (rows, cols) array, and
   their gradients: the NumPy formulas of loss.py (_softmax_part, _softmax_backward_part,
   _log_softmax_backward_part) row by row, in the same order, each row on one thread.
   A row's sum is NumPy's pairwise sum (that of np.add.reduce, which the NumPy path uses on
   rows longer than 1024; its einsum on shorter rows rounds a few ulps apart). Exponentials
   run in LANES-wide vector loops, a row's last partial block as its last LANES elements (or,
   in a row shorter than LANES, on a zero-padded copy), so that every element goes through
   the vector exp. The output row holds the exponentials (or the
   products) while they are summed, so it must not overlap an input (checked in Python). */

/* The largest element of a row (NaN is passed over: a row with NaN comes out all NaN
   through its exponential, as NumPy's NaN maximum makes it). */
#define ROW_MAX(T, SUF)                                                                \
static inline T row_max_##SUF(const T* x, int64_t n)                                   \
{                                                                                      \
    T acc[LANES], m = -INFINITY;                                                       \
    int64_t i = 0;                                                                     \
    for (int j = 0; j < LANES; j++) acc[j] = -INFINITY;                                \
    for (; i + LANES <= n; i += LANES) {                                               \
        _Pragma("omp simd")                                                            \
        for (int j = 0; j < LANES; j++) acc[j] = x[i + j] > acc[j] ? x[i + j] : acc[j]; \
    }                                                                                  \
    for (; i < n; i++) m = x[i] > m ? x[i] : m;                                        \
    for (int j = 0; j < LANES; j++) m = acc[j] > m ? acc[j] : m;                       \
    return m;                                                                          \
}

/* out = f(a, b, s) over a row, LANES at a time through BLOCK(a, b, out, s). A row of at
   least LANES ends with the block of its last LANES elements, which recomputes some of the
   previous block's (out overlaps no input: the same values again); a shorter row goes
   through zero-padded copies (a vector load right after memcpy's narrow stores into the
   copy waits for them: at 65 columns that stall was a third of log_softmax's time). */
#define ROW_MAP(T, SUF, NAME, BLOCK)                                                   \
static inline void NAME##_row_##SUF(const T* a, const T* b, T* out, T s, int64_t n)    \
{                                                                                      \
    int64_t full = n - n % LANES;                                                      \
    for (int64_t i = 0; i < full; i += LANES)                                          \
        BLOCK(a + i, b + i, out + i, s);                                               \
    if (full < n && full) {                                                            \
        BLOCK(a + n - LANES, b + n - LANES, out + n - LANES, s);                       \
    } else if (full < n) {                                                             \
        T as[LANES] = {0}, bs[LANES] = {0}, os[LANES];                                 \
        memcpy(as, a + full, (size_t)(n - full) * sizeof(T));                          \
        memcpy(bs, b + full, (size_t)(n - full) * sizeof(T));                          \
        BLOCK(as, bs, os, s);                                                          \
        memcpy(out + full, os, (size_t)(n - full) * sizeof(T));                        \
    }                                                                                  \
}

/* exp(d) where d <= LOW, whose exp rounds to 0 (a masked score's -inf among them), is
   given the argument 0 and then replaced by 0: libmvec's vector exp takes a slow path, ~2x
   the loop's time, for a vector holding such an argument. The same results; nan passes. */
#define EXP_MASKED(EXP, T, LOW, d) ((d) <= (LOW) ? (T)0 : EXP((d) <= (LOW) ? (T)0 : (d)))

#define SOFTMAX_KERNELS(T, SUF, EXP, LOG, LOW)                                         \
ROW_MAX(T, SUF)                                                                        \
                                                                                       \
/* out = exp(x - m) (b unused) */                                                      \
static inline void exp_shifted_##SUF(const T* x, const T* b, T* out, T m)              \
{                                                                                      \
    (void)b;                                                                           \
    _Pragma("omp simd")                                                                \
    for (int j = 0; j < LANES; j++) {                                                  \
        T d = x[j] - m;                                                                \
        out[j] = EXP_MASKED(EXP, T, LOW, d);                                           \
    }                                                                                  \
}                                                                                      \
ROW_MAP(T, SUF, exp_shifted, exp_shifted_##SUF)                                        \
                                                                                       \
/* out = g - exp(y) * s: log_softmax's gradient, s the row's sum of g */               \
static inline void log_softmax_grad_##SUF(const T* g, const T* y, T* out, T s)         \
{                                                                                      \
    _Pragma("omp simd")                                                                \
    for (int j = 0; j < LANES; j++) out[j] = g[j] - EXP_MASKED(EXP, T, LOW, y[j]) * s; \
}                                                                                      \
ROW_MAP(T, SUF, log_softmax_grad, log_softmax_grad_##SUF)                              \
                                                                                       \
/* softmax: e = exp(x - max), e * (1 / sum e); log: (x - max) - log(sum e) */          \
void softmax_##SUF(int64_t rows, int64_t cols, const T* x, T* out, int take_log,       \
                   int nthreads)                                                       \
{                                                                                      \
    _Pragma("omp parallel for num_threads(nthreads)")                                  \
    for (int64_t r = 0; r < rows; r++) {                                               \
        const T* xr = x + r * cols;                                                    \
        T* o = out + r * cols;                                                         \
        T m = row_max_##SUF(xr, cols);                                                 \
        exp_shifted_row_##SUF(xr, xr, o, m, cols);                                     \
        T s = gt_pairwise_sum_##T(o, cols);                                            \
        if (take_log) {                                                                \
            T ls = LOG(s);                                                             \
            _Pragma("omp simd")                                                        \
            for (int64_t j = 0; j < cols; j++) o[j] = (xr[j] - m) - ls;                \
        } else {                                                                       \
            T inv = (T)1 / s;                                                          \
            _Pragma("omp simd")                                                        \
            for (int64_t j = 0; j < cols; j++) o[j] *= inv;                            \
        }                                                                              \
    }                                                                                  \
}                                                                                      \
                                                                                       \
/* softmax's gradient (y its output): (g - sum(g * y)) * y;                            \
   log-softmax's (y its output): g - exp(y) * sum(g) */                                \
void softmax_backward_##SUF(int64_t rows, int64_t cols, const T* g, const T* y, T* out, \
                            int take_log, int nthreads)                                \
{                                                                                      \
    _Pragma("omp parallel for num_threads(nthreads)")                                  \
    for (int64_t r = 0; r < rows; r++) {                                               \
        const T* gr = g + r * cols;                                                    \
        const T* yr = y + r * cols;                                                    \
        T* o = out + r * cols;                                                         \
        if (take_log) {                                                                \
            log_softmax_grad_row_##SUF(gr, yr, o, gt_pairwise_sum_##T(gr, cols), cols); \
        } else {                                                                       \
            _Pragma("omp simd")                                                        \
            for (int64_t j = 0; j < cols; j++) o[j] = gr[j] * yr[j];                   \
            T s = gt_pairwise_sum_##T(o, cols);                                        \
            _Pragma("omp simd")                                                        \
            for (int64_t j = 0; j < cols; j++) o[j] = (gr[j] - s) * yr[j];             \
        }                                                                              \
    }                                                                                  \
}

SOFTMAX_KERNELS(float, f32, expf, logf, -104.0f)      /* exp(-104) < 2^-150: rounds to 0 */
SOFTMAX_KERNELS(double, f64, exp, log, -746.0)        /* exp(-746) < 2^-1075 */
