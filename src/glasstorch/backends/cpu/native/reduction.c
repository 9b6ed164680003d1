/* Reductions (reduction.py). sum_rows: the column sums of a row-major (rows, cols) array,
   which are a tensor's sum over its leading dims (a bias's gradient), added row after row
   as NumPy's add.reduce over axis 0 adds them (for cols > 1), so the results are NumPy's
   bit for bit. total: the sum of a whole vector, in vector lanes of T within fixed blocks
   and in double above them, in an order that does not depend on the thread count.
   sum_trailing and extreme_trailing (at the end): sums, means, maxima and minima (with
   their indices) over a tensor's trailing dims, a row at a time. */

/* Columns in chunks of W whose partial sums stay in vector registers down the rows. */
#define SUM_COLUMNS(T, SUFFIX, W)                                                       \
static inline void sum_columns_##SUFFIX##_##W(int64_t rows, int64_t cols, const T* a,   \
                                              T* out)                                   \
{                                                                                       \
    T acc[W];                                                                           \
    for (int64_t c = 0; c < W; c++) acc[c] = a[c];                                      \
    for (int64_t r = 1; r < rows; r++) {                                                \
        const T* row = a + r * cols;                                                    \
        _Pragma("omp simd")                                                             \
        for (int64_t c = 0; c < W; c++) acc[c] += row[c];                               \
    }                                                                                   \
    for (int64_t c = 0; c < W; c++) out[c] = acc[c] + (T)0;   /* a -0.0 column: +0.0 */ \
}

/* Chunks of 64 columns (split across threads), or of 16 where there are fewer than 64, or
   single columns where fewer than 16; a last partial chunk is summed as the full one that
   ends at the last column (its first columns come out the same again). */
#define SUM_ROWS(T, SUFFIX)                                                             \
SUM_COLUMNS(T, SUFFIX, 64)                                                              \
SUM_COLUMNS(T, SUFFIX, 16)                                                              \
SUM_COLUMNS(T, SUFFIX, 1)                                                               \
void sum_rows_##SUFFIX(int64_t rows, int64_t cols, const T* a, T* out, int nthreads)    \
{                                                                                       \
    if (rows == 0) {                                                                    \
        for (int64_t c = 0; c < cols; c++) out[c] = 0;                                  \
        return;                                                                         \
    }                                                                                   \
    const int64_t wide = cols - cols % 64, narrow = cols - cols % 16;                   \
    _Pragma("omp parallel for num_threads(nthreads)")                                   \
    for (int64_t c = 0; c < wide; c += 64)                                              \
        sum_columns_##SUFFIX##_64(rows, cols, a + c, out + c);                          \
    if (wide > 0) {                                                                     \
        if (wide < cols)                                                                \
            sum_columns_##SUFFIX##_64(rows, cols, a + cols - 64, out + cols - 64);      \
    } else if (narrow > 0) {                                                            \
        for (int64_t c = 0; c < narrow; c += 16)                                        \
            sum_columns_##SUFFIX##_16(rows, cols, a + c, out + c);                      \
        if (narrow < cols)                                                              \
            sum_columns_##SUFFIX##_16(rows, cols, a + cols - 16, out + cols - 16);      \
    } else {                                                                            \
        for (int64_t c = 0; c < cols; c++)                                              \
            sum_columns_##SUFFIX##_1(rows, cols, a + c, out + c);                       \
    }                                                                                   \
}

SUM_ROWS(float, f32)
SUM_ROWS(double, f64)

/* A block's TOTAL_BLOCK elements are summed in T by TOTAL_LANES vector lanes, 8 elements
   a lane, and the lanes added to double lanes that run through a chunk of blocks; a
   chunk's lanes are summed pairwise, and the chunks' sums in order. Chunks hold at least
   64 blocks and there are at most TOTAL_CHUNKS of them (their size follows from n alone),
   so the threads, which take whole chunks, change nothing in the result. The chunks go to
   glasstorch's thread pool (pool.c) in runs of TOTAL_RUN, each read as one stream; its
   caller starts at once and its helpers join as they come (10M float32 on 2 threads on a
   noisy host, medians: 884 us on OpenMP's team, which sleeps between regions; 770 on the
   pool; PyTorch's 583). The last partial block runs on a zero-padded copy. (Measured on 2
   cores, 10M float32: 8 elements a lane run at memory speed, 4 up to 1.5x slower on a
   loaded core, all in double ~1.5x. Mean error over 20 float32 sums of 1M elements that
   cancel (normal, lognormal - 20): 1.00 with 8 a lane, 0.97 with 4, 1.27 for
   reduction.py's einsum rows, 2.01 for ATen's sum, 2.34 for NumPy's pairwise sum; all in
   double rounds correctly.) */
#define TOTAL_LANES 64
#define TOTAL_BLOCK (8 * TOTAL_LANES)
#define TOTAL_CHUNKS 256
#define TOTAL_RUN 16

#define TOTAL_BLOCK_SUM(T, SUFFIX)                                                      \
static inline void total_block_##SUFFIX(const T* x, double* lanes)                      \
{                                                                                       \
    T acc[TOTAL_LANES];                                                                 \
    for (int c = 0; c < TOTAL_LANES; c++) acc[c] = x[c];                                \
    for (int r = TOTAL_LANES; r < TOTAL_BLOCK; r += TOTAL_LANES) {                      \
        _Pragma("omp simd")                                                             \
        for (int c = 0; c < TOTAL_LANES; c++) acc[c] += x[r + c];                       \
    }                                                                                   \
    _Pragma("omp simd")                                                                 \
    for (int c = 0; c < TOTAL_LANES; c++) lanes[c] += (double)acc[c];                   \
}

#if defined(__AVX512F__)
#include <immintrin.h>
/* The same sums as TOTAL_BLOCK_SUM's, lane for lane, with the 64 float lanes held in four
   registers: GCC's vectorisation of the loop above keeps them in memory and ran at 2/3 of
   the memory's speed (10M float32, one core: 766 us against 521). */
static inline __m256 upper_half(__m512 v)
{
    return _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1));
}

static inline void total_block_f32(const float* x, double* lanes)
{
    __m512 acc[4];
    for (int v = 0; v < 4; v++) acc[v] = _mm512_loadu_ps(x + 16 * v);
    for (int r = TOTAL_LANES; r < TOTAL_BLOCK; r += TOTAL_LANES)
        for (int v = 0; v < 4; v++) acc[v] = _mm512_add_ps(acc[v], _mm512_loadu_ps(x + r + 16 * v));
    for (int v = 0; v < 4; v++) {
        double* l = lanes + 16 * v;
        _mm512_storeu_pd(l, _mm512_add_pd(_mm512_loadu_pd(l),
                                          _mm512_cvtps_pd(_mm512_castps512_ps256(acc[v]))));
        _mm512_storeu_pd(l + 8, _mm512_add_pd(_mm512_loadu_pd(l + 8),
                                              _mm512_cvtps_pd(upper_half(acc[v]))));
    }
}
#else
TOTAL_BLOCK_SUM(float, f32)
#endif
TOTAL_BLOCK_SUM(double, f64)

#define TOTAL(T, SUFFIX)                                                                \
typedef struct {                                                                        \
    const T* x;                                                                         \
    int64_t n, blocks, per, chunks;                                                     \
    double* sums;                                                                       \
} total_job_##SUFFIX;                                                                   \
                                                                                        \
/* Chunk k's sum (k == chunks: the zero-padded last partial block). */                 \
static void total_chunk_##SUFFIX(const total_job_##SUFFIX* j, int64_t k)                \
{                                                                                       \
    double lanes[TOTAL_LANES] = {0};                                                    \
    if (k < j->chunks) {                                                                \
        const int64_t end = (k + 1) * j->per < j->blocks ? (k + 1) * j->per : j->blocks;\
        for (int64_t b = k * j->per; b < end; b++)                                      \
            total_block_##SUFFIX(j->x + b * TOTAL_BLOCK, lanes);                        \
    } else if (j->blocks * TOTAL_BLOCK < j->n) {                                        \
        T tail[TOTAL_BLOCK] = {0};                                                      \
        memcpy(tail, j->x + j->blocks * TOTAL_BLOCK,                                    \
               (size_t)(j->n - j->blocks * TOTAL_BLOCK) * sizeof(T));                   \
        total_block_##SUFFIX(tail, lanes);                                              \
    }                                                                                   \
    for (int w = TOTAL_LANES / 2; w > 0; w /= 2)                                        \
        for (int c = 0; c < w; c++) lanes[c] += lanes[c + w];                           \
    j->sums[k] = lanes[0];                                                              \
}                                                                                       \
                                                                                        \
/* Piece p: TOTAL_RUN chunks in a row, which a thread reads as one stream. */           \
static void total_piece_##SUFFIX(const void* ctx, int64_t p)                            \
{                                                                                       \
    const total_job_##SUFFIX* j = (const total_job_##SUFFIX*)ctx;                       \
    const int64_t end = (p + 1) * TOTAL_RUN <= j->chunks ? (p + 1) * TOTAL_RUN          \
                                                          : j->chunks + 1;              \
    for (int64_t k = p * TOTAL_RUN; k < end; k++) total_chunk_##SUFFIX(j, k);           \
}                                                                                       \
                                                                                        \
void total_##SUFFIX(int64_t n, const T* x, T* out, int nthreads, void* runner)          \
{                                                                                       \
    const int64_t blocks = n / TOTAL_BLOCK;                                             \
    int64_t per = (blocks + TOTAL_CHUNKS - 1) / TOTAL_CHUNKS;                           \
    if (per < 64) per = 64;                                                             \
    const int64_t chunks = (blocks + per - 1) / per;                                    \
    double sums[TOTAL_CHUNKS + 1];                                                      \
    total_job_##SUFFIX j = {x, n, blocks, per, chunks, sums};                           \
    const int64_t pieces = chunks / TOTAL_RUN + 1;                                      \
    if (runner != NULL && nthreads > 1)                                                 \
        ((run_pieces_fn)runner)(total_piece_##SUFFIX, &j, pieces, nthreads);            \
    else                                                                                \
        for (int64_t p = 0; p < pieces; p++) total_piece_##SUFFIX(&j, p);               \
    double s = 0;                                                                       \
    for (int64_t k = 0; k <= chunks; k++) s += sums[k];                                 \
    out[0] = (T)s;                                                                      \
}

TOTAL(float, f32)
TOTAL(double, f64)

/* Reductions over trailing dims: each row of a (rows, n) array, n >= 1, rows lda elements
   apart, reduced on one thread (the rows split across threads, so the bits do not depend
   on their count). sum_trailing: the row's sum as np.add.reduce gives it (NumPy's pairwise
   sum added to the identity, 0.0, which makes a sum of -0.0 0.0), divided by n for a mean
   as mean_kernel's `total / count` divides (in T).
   extreme_trailing: a row's max (or min) into `values`, the index of its first max into
   `indices` (either may be NULL), as np.maximum.reduce and np.argmax give them: NaN
   propagates (the row's first NaN and its index), ties give the first index, and a max of
   0 held as both -0.0 and 0.0 is the row's last zero, as NumPy's loop keeps the later of
   two equal elements ([0.0, -0.0] -> -0.0, [-0.0, 0.0] -> 0.0; on longer rows NumPy's
   vector loop takes its lanes in an order of its own, which depends on the CPU's vector
   width). */
#define SUM_TRAILING(T, SUFFIX)                                                         \
void sum_trailing_##SUFFIX(int64_t rows, int64_t n, int64_t lda, const T* a, T* out,    \
                           int mean, int nthreads)                                      \
{                                                                                       \
    const T count = (T)n;                                                               \
    _Pragma("omp parallel for num_threads(nthreads) if(nthreads > 1)")                  \
    for (int64_t r = 0; r < rows; r++) {                                                \
        const T s = (T)0 + gt_pairwise_sum_##T(a + r * lda, n);                         \
        out[r] = mean ? s / count : s;                                                  \
    }                                                                                   \
}

SUM_TRAILING(float, f32)
SUM_TRAILING(double, f64)

/* Whether v beats the extreme so far, m: never where either is NaN (an unordered compare),
   so that the vector loops are x86's maxps and minps; NaN is looked for apart. */
#define MAX_BEATS(v, m) ((v) > (m))
#define MIN_BEATS(v, m) ((v) < (m))

/* A row's extreme over its elements other than NaN, and whether it holds NaN (*nan): from
   2 * W elements on in W lanes (two 64-byte vectors, whose dependency chains overlap),
   then the lanes pairwise and the rest in order. */
#define ROW_EXTREME(T, SUFFIX, W, NAME, BEATS)                                          \
static inline T NAME##_row_##SUFFIX(const T* x, int64_t n, int* nan)                    \
{                                                                                       \
    T m = x[0];                                                                         \
    int64_t i = 1;                                                                      \
    int bad = x[0] != x[0];                                                             \
    if (n >= 2 * W) {                                                                   \
        T acc[W];                                                                       \
        for (int j = 0; j < W; j++) acc[j] = x[j];                                      \
        for (i = W; i + W <= n; i += W) {                                               \
            _Pragma("omp simd reduction(|:bad)")                                        \
            for (int j = 0; j < W; j++) {                                               \
                acc[j] = BEATS(x[i + j], acc[j]) ? x[i + j] : acc[j];                   \
                bad |= x[i + j] != x[i + j];                                            \
            }                                                                           \
        }                                                                               \
        for (int j = 0; j < W; j++) bad |= acc[j] != acc[j];                            \
        for (int w = W / 2; w > 0; w /= 2) {                                            \
            _Pragma("omp simd")                                                         \
            for (int j = 0; j < w; j++)                                                 \
                acc[j] = BEATS(acc[j + w], acc[j]) ? acc[j + w] : acc[j];               \
        }                                                                               \
        m = acc[0];                                                                     \
    }                                                                                   \
    for (; i < n; i++) {                                                                \
        m = BEATS(x[i], m) ? x[i] : m;                                                  \
        bad |= x[i] != x[i];                                                            \
    }                                                                                   \
    *nan = bad;                                                                         \
    return m;                                                                           \
}

/* The same, with the index of the extreme's first occurrence (*at): each lane also keeps
   the index (an IT, as wide as T) of its own first extreme, chosen by a mask (a select
   there became masked stores to memory), and the lowest of those among the lanes that
   hold the row's extreme is the row's. */
#define ROW_ARG_EXTREME(T, IT, SUFFIX, W, NAME, BEATS)                                  \
static inline T NAME##_arg_row_##SUFFIX(const T* x, int64_t n, int64_t* at, int* nan)   \
{                                                                                       \
    T m = x[0];                                                                         \
    int64_t i = 1, k = 0;                                                               \
    int bad = x[0] != x[0];                                                             \
    if (n >= 2 * W) {                                                                   \
        T acc[W], tree[W];                                                              \
        IT where[W];                                                                    \
        for (int j = 0; j < W; j++) {                                                   \
            acc[j] = x[j];                                                              \
            where[j] = j;                                                               \
        }                                                                               \
        for (i = W; i + W <= n; i += W) {                                               \
            const IT base = (IT)i;                                                      \
            _Pragma("omp simd reduction(|:bad)")                                        \
            for (int j = 0; j < W; j++) {                                               \
                const T v = x[i + j];                                                   \
                const IT take = -(IT)BEATS(v, acc[j]);                                  \
                where[j] ^= (where[j] ^ (base + j)) & take;                             \
                acc[j] = BEATS(v, acc[j]) ? v : acc[j];                                 \
                bad |= v != v;                                                          \
            }                                                                           \
        }                                                                               \
        for (int j = 0; j < W; j++) {                                                   \
            bad |= acc[j] != acc[j];                                                    \
            tree[j] = acc[j];                                                           \
        }                                                                               \
        for (int w = W / 2; w > 0; w /= 2) {                                            \
            _Pragma("omp simd")                                                         \
            for (int j = 0; j < w; j++)                                                 \
                tree[j] = BEATS(tree[j + w], tree[j]) ? tree[j + w] : tree[j];          \
        }                                                                               \
        m = tree[0];                                                                    \
        IT first = (IT)i;                                                               \
        _Pragma("omp simd reduction(min:first)")                                        \
        for (int j = 0; j < W; j++)                                                     \
            first = acc[j] == m && where[j] < first ? where[j] : first;                 \
        k = first;                                                                      \
    }                                                                                   \
    for (; i < n; i++) {                                                                \
        if (BEATS(x[i], m)) {                                                           \
            m = x[i];                                                                   \
            k = i;                                                                      \
        }                                                                               \
        bad |= x[i] != x[i];                                                            \
    }                                                                                   \
    *at = k;                                                                            \
    *nan = bad;                                                                         \
    return m;                                                                           \
}

/* IT, a lane's index, is as wide as T, so that the indices fill vectors as the elements do
   (int32_t for float: rows shorter than 2^31 elements, reduction.py). */
#define EXTREME_TRAILING(T, IT, SUFFIX, W)                                              \
ROW_EXTREME(T, SUFFIX, W, max, MAX_BEATS)                                               \
ROW_EXTREME(T, SUFFIX, W, min, MIN_BEATS)                                               \
ROW_ARG_EXTREME(T, IT, SUFFIX, W, max, MAX_BEATS)                                       \
ROW_ARG_EXTREME(T, IT, SUFFIX, W, min, MIN_BEATS)                                       \
void extreme_trailing_##SUFFIX(int64_t rows, int64_t n, int64_t lda, const T* a,        \
                               T* values, int64_t* indices, int take_min, int nthreads) \
{                                                                                       \
    _Pragma("omp parallel for num_threads(nthreads) if(nthreads > 1)")                  \
    for (int64_t r = 0; r < rows; r++) {                                                \
        const T* x = a + r * lda;                                                       \
        int64_t at = 0;                                                                 \
        int nan;                                                                        \
        T m;                                                                            \
        if (indices != NULL)                                                            \
            m = take_min ? min_arg_row_##SUFFIX(x, n, &at, &nan)                        \
                         : max_arg_row_##SUFFIX(x, n, &at, &nan);                       \
        else                                                                            \
            m = take_min ? min_row_##SUFFIX(x, n, &nan) : max_row_##SUFFIX(x, n, &nan); \
        if (nan) {                                                                      \
            for (at = 0; x[at] == x[at]; at++) {}                                       \
            m = x[at];                                                                  \
        } else if (m == 0) {                                                            \
            int64_t last = n - 1;                                                       \
            while (x[last] != 0) last--;                                                \
            m = x[last];                                                                \
        }                                                                               \
        if (values != NULL) values[r] = m;                                              \
        if (indices != NULL) indices[r] = at;                                           \
    }                                                                                   \
}

EXTREME_TRAILING(float, int32_t, f32, 32)
EXTREME_TRAILING(double, int64_t, f64, 16)
