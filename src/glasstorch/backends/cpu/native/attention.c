/* The softmax inside CPU attention (attention.py), the matrix products staying with BLAS.
   Scores are q.k products, one per (batch, head, query i, key j); the causal mask is
   top-left aligned (query i sees keys j <= i) and masked entries come out exactly 0. A nan
   score makes its query's results nan, as in the NumPy formulas. Loops run over a whole
   row or column with the mask as a select, never a length that varies per query: a loop's
   scalar remainder calls the scalar expf, ten times the vector one's cost per element. A
   masked entry's exp gets the argument 0 and its result is then dropped: libmvec's expf
   takes a slow path for a vector holding -inf or an argument that underflows. */

/* Forward on the transposed layout of _scores_t: x is S rows (keys) of ld elements, column
   c < W being (batch, head, query c % L). Each column is scaled, masked, exponentiated and
   normalised in place and its logsumexp stored: the NumPy formulas' passes (max and sum
   down the columns, in row order) fused, in blocks of CH columns that stay in cache. */
#define CH 256
#define SOFTMAX_COLUMNS(T, SUFFIX, EXP, LOG)                                            \
void softmax_columns_##SUFFIX(int64_t S, int64_t W, int64_t ld, int64_t L, T* x, T* lse,\
                              double scale, int causal, int nthreads)                   \
{                                                                                       \
    const T sc = (T)scale;                                                              \
    _Pragma("omp parallel for num_threads(nthreads)")                                   \
    for (int64_t c0 = 0; c0 < W; c0 += CH) {                                            \
        const int64_t w = W - c0 < CH ? W - c0 : CH;                                    \
        int32_t query[CH];                                                              \
        T m[CH], total[CH];                                                             \
        for (int64_t c = 0; c < w; c++) {                                               \
            query[c] = (int32_t)(causal ? (c0 + c) % L : S);                                \
            m[c] = -INFINITY;                                                           \
            total[c] = 0;                                                               \
        }                                                                               \
        for (int32_t j = 0; j < S; j++) {                                               \
            const T* row = x + j * ld + c0;                                             \
            _Pragma("omp simd")                                                         \
            for (int64_t c = 0; c < w; c++) {                                           \
                T v = j <= query[c] ? row[c] * sc : -INFINITY;                          \
                m[c] = (v > m[c] || v != v) ? v : m[c];                                 \
            }                                                                           \
        }                                                                               \
        for (int32_t j = 0; j < S; j++) {                                               \
            T* row = x + j * ld + c0;                                                   \
            _Pragma("omp simd")                                                         \
            for (int64_t c = 0; c < w; c++) {                                           \
                int seen = j <= query[c];                                               \
                T e = EXP(seen ? row[c] * sc - m[c] : 0);                               \
                e = seen ? e : 0;                                                       \
                row[c] = e;                                                             \
                total[c] += e;                                                          \
            }                                                                           \
        }                                                                               \
        for (int64_t j = 0; j < S; j++) {                                               \
            T* row = x + j * ld + c0;                                                   \
            _Pragma("omp simd")                                                         \
            for (int64_t c = 0; c < w; c++) row[c] = row[c] / total[c];                 \
        }                                                                               \
        for (int64_t c = 0; c < w; c++) lse[c0 + c] = LOG(total[c]) + m[c];             \
    }                                                                                   \
}

/* Forward on rows (long keys, the products' own layout): row r of S scores is query r % L.
   The exps go by blocks of LANES keys, as the backward's below and for its reason (GCC
   split the loop over the whole row at the mask, the parts' ends on the scalar expf: the
   8 x 4 heads x 512 causal rows of 512 keys took 9.8 ms, now 6.0), the sums per lane. */
#define SOFTMAX_BLOCK(T, SUFFIX, EXP)                                                   \
static inline void softmax_block_##SUFFIX(T* x, int64_t seen, T sc, T m, T* sums)       \
{                                                                                       \
    _Pragma("omp simd")                                                                 \
    for (int64_t j = 0; j < LANES; j++) {                                               \
        T e = EXP(j < seen ? x[j] * sc - m : 0);                                        \
        e = j < seen ? e : 0;                                                           \
        x[j] = e;                                                                       \
        sums[j] += e;                                                                   \
    }                                                                                   \
}

#define SOFTMAX_ROWS(T, SUFFIX, EXP, LOG)                                               \
SOFTMAX_BLOCK(T, SUFFIX, EXP)                                                           \
void softmax_rows_##SUFFIX(int64_t rows, int64_t L, int64_t S, T* s, T* lse,            \
                           double scale, int causal, int nthreads)                      \
{                                                                                       \
    const T sc = (T)scale;                                                              \
    const int64_t full = S - S % LANES;                                                 \
    _Pragma("omp parallel for num_threads(nthreads)")                                   \
    for (int64_t r = 0; r < rows; r++) {                                                \
        T* x = s + r * S;                                                               \
        const int64_t n = causal ? r % L + 1 : S;       /* keys this query sees */      \
        T m = -INFINITY;                                                                \
        int nan = 0;                                                                    \
        _Pragma("omp simd reduction(max:m) reduction(|:nan)")                           \
        for (int64_t j = 0; j < S; j++) {                                               \
            T v = j < n ? x[j] * sc : -INFINITY;                                        \
            m = v > m ? v : m;                                                          \
            nan |= v != v;                                                              \
        }                                                                               \
        if (nan) m = NAN;                                                               \
        T sums[LANES] = {0};                                                            \
        for (int64_t j = 0; j < full; j += LANES) {                                     \
            if (j < n)                                                                  \
                softmax_block_##SUFFIX(x + j, n - j, sc, m, sums);                      \
            else                        /* every key masked: zeros, no exp */           \
                memset(x + j, 0, LANES * sizeof(T));                                    \
        }                                                                               \
        if (full < S) {                                                                 \
            T xs[LANES] = {0};                                                          \
            memcpy(xs, x + full, (size_t)(S - full) * sizeof(T));                       \
            softmax_block_##SUFFIX(xs, n - full, sc, m, sums);                          \
            memcpy(x + full, xs, (size_t)(S - full) * sizeof(T));                       \
        }                                                                               \
        T total = 0;                                                                    \
        for (int64_t j = 0; j < LANES; j++) total += sums[j];                           \
        _Pragma("omp simd")                                                             \
        for (int64_t j = 0; j < S; j++) x[j] = x[j] / total;                            \
        lse[r] = LOG(total) + m;                                                        \
    }                                                                                   \
}

/* Backward on rows: in place, s (the q.k products) becomes p = exp(s * scale - lse) and ds
   (the g.v products) the scores' gradient before the scale, p * (ds - rowsum(g * out)).
   A row goes by blocks of LANES keys, each one vector loop of a fixed length (keys from
   `seen` on masked), its last partial block on zero-padded copies, and a block of masked
   keys only is zeroed without exp: a loop over the whole row, its length a variable, was
   peeled to align its stores and split at the mask, both on the scalar expf (nanoGPT's
   1024 causal rows of 32 keys: 43 -> 28 us). */
#define SOFTMAX_BACKWARD_BLOCK(T, SUFFIX, EXP)                                          \
static inline void softmax_backward_block_##SUFFIX(T* x, T* d, int64_t seen, T sc,      \
                                                   T l, T dot)                          \
{                                                                                       \
    _Pragma("omp simd")                                                                 \
    for (int64_t j = 0; j < LANES; j++) {                                               \
        T p = EXP(j < seen ? x[j] * sc - l : 0);                                        \
        p = j < seen ? p : 0;                                                           \
        x[j] = p;                                                                       \
        d[j] = j < seen ? (d[j] - dot) * p : 0;                                         \
    }                                                                                   \
}

#define SOFTMAX_BACKWARD_ROWS(T, SUFFIX, EXP)                                           \
SOFTMAX_BACKWARD_BLOCK(T, SUFFIX, EXP)                                                  \
void softmax_backward_rows_##SUFFIX(int64_t rows, int64_t L, int64_t S, T* s, T* ds,    \
                                    const T* lse, const T* rowdot, double scale,        \
                                    int causal, int nthreads)                           \
{                                                                                       \
    const T sc = (T)scale;                                                              \
    const int64_t full = S - S % LANES;                                                 \
    _Pragma("omp parallel for num_threads(nthreads)")                                   \
    for (int64_t r = 0; r < rows; r++) {                                                \
        T* x = s + r * S;                                                               \
        T* d = ds + r * S;                                                              \
        const int64_t n = causal ? r % L + 1 : S;                                       \
        const T l = lse[r], dot = rowdot[r];                                            \
        for (int64_t j = 0; j < full; j += LANES) {                                     \
            if (j < n)                                                                  \
                softmax_backward_block_##SUFFIX(x + j, d + j, n - j, sc, l, dot);       \
            else {                      /* every key masked: zeros, no exp */           \
                memset(x + j, 0, LANES * sizeof(T));                                    \
                memset(d + j, 0, LANES * sizeof(T));                                    \
            }                                                                           \
        }                                                                               \
        if (full < S) {                                                                 \
            T xs[LANES] = {0}, dss[LANES] = {0};                                        \
            memcpy(xs, x + full, (size_t)(S - full) * sizeof(T));                      \
            memcpy(dss, d + full, (size_t)(S - full) * sizeof(T));                      \
            softmax_backward_block_##SUFFIX(xs, dss, n - full, sc, l, dot);             \
            memcpy(x + full, xs, (size_t)(S - full) * sizeof(T));                       \
            memcpy(d + full, dss, (size_t)(S - full) * sizeof(T));                      \
        }                                                                               \
    }                                                                                   \
}

SOFTMAX_COLUMNS(float, f32, expf, logf)
SOFTMAX_COLUMNS(double, f64, exp, log)
SOFTMAX_ROWS(float, f32, expf, logf)
SOFTMAX_ROWS(double, f64, exp, log)
SOFTMAX_BACKWARD_ROWS(float, f32, expf)
SOFTMAX_BACKWARD_ROWS(double, f64, exp)
