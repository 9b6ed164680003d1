/* Matrix products split across threads that glasstorch starts itself, each block one
   single-threaded call of the BLAS NumPy loaded (backends/cpu/split_gemm.py says why), the
   blocks claimed by the caller and the pool's helpers (pool.c: `runner` is its
   gt_run_pieces). */

enum { ROW_MAJOR = 101, NO_TRANS = 111, TRANS = 112 };

/* C[b] = A[b] @ B[b] for `batch` products, row-major, C's rows dense (unit column stride),
   through the BLAS's CBLAS gemm at `entry` (ILP64: 64-bit sizes), which the caller has set
   to one thread. `ta`/`tb`: the operand is stored transposed, with leading dimension
   `lda`/`ldb`; `sa`, `sb`, `sc`: batch strides in elements (0: a broadcast operand). Each
   product is cut into `blocks` pieces along C's rows or, when C is wider than tall, its
   columns (duplicating the packing of the smaller operand, B or A). */
#define GEMM_SPLIT(NAME, T)                                                              \
typedef void (*NAME##_blas)(int, int, int, int64_t, int64_t, int64_t, T, const T*,       \
                            int64_t, const T*, int64_t, T, T*, int64_t);                 \
typedef struct {                                                                         \
    NAME##_blas gemm;                                                                    \
    int ta, tb, by_rows;                                                                 \
    int64_t m, n, k, per, pieces, lda, sa, ldb, sb, ldc, sc;                             \
    const T *a, *b;                                                                      \
    T* c;                                                                                \
} NAME##_job;                                                                            \
                                                                                         \
static void NAME##_piece(const void* ctx, int64_t t)                                     \
{                                                                                        \
    const NAME##_job* j = (const NAME##_job*)ctx;                                        \
    const int64_t p = t / j->pieces, lo = (t % j->pieces) * j->per;                      \
    const int64_t extent = j->by_rows ? j->m : j->n;                                     \
    const int64_t len = extent - lo < j->per ? extent - lo : j->per;                     \
    const T* a = j->a + p * j->sa;                                                       \
    const T* b = j->b + p * j->sb;                                                       \
    T* c = j->c + p * j->sc;                                                             \
    const int ta = j->ta ? TRANS : NO_TRANS, tb = j->tb ? TRANS : NO_TRANS;              \
    if (j->by_rows)                                                                      \
        j->gemm(ROW_MAJOR, ta, tb, len, j->n, j->k, 1, a + (j->ta ? lo : lo * j->lda),   \
                j->lda, b, j->ldb, 0, c + lo * j->ldc, j->ldc);                          \
    else                                                                                 \
        j->gemm(ROW_MAJOR, ta, tb, j->m, len, j->k, 1, a, j->lda,                        \
                b + (j->tb ? lo * j->ldb : lo), j->ldb, 0, c + lo, j->ldc);              \
}                                                                                        \
                                                                                         \
void NAME(void* entry, int ta, int tb, int64_t batch, int64_t m, int64_t n, int64_t k,   \
          const T* a, int64_t lda, int64_t sa, const T* b, int64_t ldb, int64_t sb,      \
          T* c, int64_t ldc, int64_t sc, int64_t blocks, int nthreads, void* runner)     \
{                                                                                        \
    NAME##_job j = {(NAME##_blas)entry, ta, tb, m >= n, m, n, k, 0, 0,                   \
                    lda, sa, ldb, sb, ldc, sc, a, b, c};                                 \
    const int64_t extent = j.by_rows ? m : n;                                            \
    j.per = (extent + blocks - 1) / blocks;                                              \
    j.pieces = (extent + j.per - 1) / j.per;                                             \
    ((run_pieces_fn)runner)(NAME##_piece, &j, batch * j.pieces, nthreads);               \
}

GEMM_SPLIT(gemm_split_f32, float)
GEMM_SPLIT(gemm_split_f64, double)
