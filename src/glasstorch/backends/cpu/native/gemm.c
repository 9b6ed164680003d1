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

/* glasstorch's own matrix-product kernel, for CPUs with AVX-512 (built with -march=native,
   so only where the building CPU has it). OpenBLAS runs its AVX2 ("Haswell") kernels where
   the machine says so (OPENBLAS_CORETYPE=Haswell on the project's VMs) or where it does not
   know the CPU: half of an AVX-512 core's multiply-adds. This kernel is BLIS's design in
   small: B is packed into panels NR columns wide and A into panels MR rows tall (any strides:
   a transposed operand is read as it lies, and the panels' padding is zeros), and an MR x NR
   block of C is kept in 16 vector registers while k runs. Each element of C is one chain of
   fused multiply-adds in k's order, a chain per KC-long stretch of k added to C in turn: the
   same bits however the product is cut into pieces or threads. */
#if defined(__AVX512F__)
#include <immintrin.h>
#include <stdatomic.h>

#include <pthread.h>

#define GT_GEMM_OWN 1
#define GEMM_MR 8
#define GEMM_KC 256
#define GEMM_MC 144
#define GEMM_NC 2048

/* Each thread's packing memory, kept between products (a fresh buffer of a large product's
   size would be fresh pages, each one a fault) and freed when the thread ends. */
typedef struct { size_t size; void* data; } gemm_pack;
static pthread_key_t gemm_pack_key;
static pthread_once_t gemm_pack_once = PTHREAD_ONCE_INIT;

static void gemm_pack_free(void* p)
{
    free(((gemm_pack*)p)->data);
    free(p);
}

static void gemm_pack_key_make(void) { pthread_key_create(&gemm_pack_key, gemm_pack_free); }

/* At least `bytes` of this thread's packing memory, 64-byte aligned; NULL if it ran out. */
static void* gemm_pack_memory(size_t bytes)
{
    pthread_once(&gemm_pack_once, gemm_pack_key_make);
    gemm_pack* p = pthread_getspecific(gemm_pack_key);
    if (p == NULL) {
        if ((p = calloc(1, sizeof *p)) == NULL) return NULL;
        if (pthread_setspecific(gemm_pack_key, p) != 0) {
            free(p);
            return NULL;
        }
    }
    if (p->size < bytes) {
        free(p->data);
        bytes = (bytes + 63) / 64 * 64;
        p->data = aligned_alloc(64, bytes);
        p->size = p->data == NULL ? 0 : bytes;
    }
    return p->data;
}

#define GEMM_OWN(NAME, T, VEC, W, LOADU, MASK_LOADU, MASK_STOREU, STOREU, SET1, FMA, ADD, \
                 ZERO, MASK_T)                                                           \
enum { NAME##_NR = 2 * W };                                                              \
                                                                                         \
/* C[m x n block at c] (= or +=) the product of a packed A panel (kc x MR, k-major) and a  \
   packed B panel (kc x NR, k-major); m <= MR and n <= NR (the rest is padding). */       \
static inline void NAME##_micro(int64_t kc, const T* restrict a, const T* restrict b,    \
                                T* restrict c, int64_t ldc, int m, int n, int add)       \
{                                                                                        \
    VEC acc[GEMM_MR][2];                                                                 \
    for (int i = 0; i < GEMM_MR; i++) acc[i][0] = acc[i][1] = ZERO();                    \
    for (int64_t p = 0; p < kc; p++) {                                                   \
        const VEC b0 = LOADU(b), b1 = LOADU(b + W);                                      \
        for (int i = 0; i < GEMM_MR; i++) {                                              \
            const VEC ai = SET1(a[i]);                                                   \
            acc[i][0] = FMA(ai, b0, acc[i][0]);                                          \
            acc[i][1] = FMA(ai, b1, acc[i][1]);                                          \
        }                                                                                \
        a += GEMM_MR;                                                                    \
        b += 2 * W;                                                                      \
    }                                                                                    \
    const MASK_T m0 = n >= W ? (MASK_T)~0u : (MASK_T)((1u << n) - 1);                     \
    const MASK_T m1 = n >= 2 * W ? (MASK_T)~0u                                           \
                    : n <= W ? (MASK_T)0 : (MASK_T)((1u << (n - W)) - 1);                \
    for (int i = 0; i < m; i++) {                                                        \
        T* ci = c + i * ldc;                                                             \
        if (n == 2 * W) {                                                                \
            if (add) {                                                                   \
                acc[i][0] = ADD(LOADU(ci), acc[i][0]);                                   \
                acc[i][1] = ADD(LOADU(ci + W), acc[i][1]);                               \
            }                                                                            \
            STOREU(ci, acc[i][0]);                                                       \
            STOREU(ci + W, acc[i][1]);                                                   \
        } else {                                                                         \
            if (add) {                                                                   \
                acc[i][0] = ADD(MASK_LOADU(m0, ci), acc[i][0]);                          \
                acc[i][1] = ADD(MASK_LOADU(m1, ci + W), acc[i][1]);                      \
            }                                                                            \
            MASK_STOREU(ci, m0, acc[i][0]);                                              \
            MASK_STOREU(ci + W, m1, acc[i][1]);                                          \
        }                                                                                \
    }                                                                                    \
}                                                                                        \
                                                                                         \
/* The same for a panel's first W columns only (n <= W): a ragged last panel (vocabulary \
   65 wide, say) costs half the multiply-adds. */                                        \
static inline void NAME##_micro_half(int64_t kc, const T* restrict a, const T* restrict b, \
                                     T* restrict c, int64_t ldc, int m, int n, int add)  \
{                                                                                        \
    VEC acc[GEMM_MR];                                                                    \
    for (int i = 0; i < GEMM_MR; i++) acc[i] = ZERO();                                   \
    for (int64_t p = 0; p < kc; p++) {                                                   \
        const VEC b0 = LOADU(b);                                                         \
        for (int i = 0; i < GEMM_MR; i++) acc[i] = FMA(SET1(a[i]), b0, acc[i]);          \
        a += GEMM_MR;                                                                    \
        b += 2 * W;                                                                      \
    }                                                                                    \
    const MASK_T m0 = n >= W ? (MASK_T)~0u : (MASK_T)((1u << n) - 1);                    \
    for (int i = 0; i < m; i++) {                                                        \
        T* ci = c + i * ldc;                                                             \
        if (add) acc[i] = ADD(MASK_LOADU(m0, ci), acc[i]);                               \
        MASK_STOREU(ci, m0, acc[i]);                                                     \
    }                                                                                    \
}                                                                                        \
                                                                                         \
/* Rows [0, mc) and columns [0, kc) of A (strides rs, cs) as MR-row panels, k-major. */   \
static void NAME##_pack_a(int64_t mc, int64_t kc, const T* a, int64_t rs, int64_t cs,    \
                          T* restrict out)                                               \
{                                                                                        \
    for (int64_t i0 = 0; i0 < mc; i0 += GEMM_MR, out += GEMM_MR * kc) {                 \
        const int64_t mr = mc - i0 < GEMM_MR ? mc - i0 : GEMM_MR;                        \
        if (mr < GEMM_MR) memset(out, 0, sizeof(T) * GEMM_MR * kc);                      \
        if (rs == 1)               /* column-major: each k's MR values lie together */  \
            for (int64_t p = 0; p < kc; p++)                                             \
                for (int64_t i = 0; i < mr; i++) out[p * GEMM_MR + i] = a[i0 + i + p * cs]; \
        else                                                                             \
            for (int64_t i = 0; i < mr; i++) {                                           \
                const T* row = a + (i0 + i) * rs;                                        \
                for (int64_t p = 0; p < kc; p++) out[p * GEMM_MR + i] = row[p * cs];     \
            }                                                                            \
    }                                                                                    \
}                                                                                        \
                                                                                         \
/* Rows [0, kc) and columns [0, nc) of B (strides rs, cs) as NR-column panels, k-major. */\
static void NAME##_pack_b(int64_t kc, int64_t nc, const T* b, int64_t rs, int64_t cs,    \
                          T* restrict out)                                               \
{                                                                                        \
    const int64_t nr_full = NAME##_NR;                                                   \
    for (int64_t j0 = 0; j0 < nc; j0 += nr_full, out += nr_full * kc) {                  \
        const int64_t nr = nc - j0 < nr_full ? nc - j0 : nr_full;                        \
        if (cs == 1 && nr == nr_full) {                                                  \
            for (int64_t p = 0; p < kc; p++)                                             \
                memcpy(out + p * nr_full, b + p * rs + j0, sizeof(T) * nr_full);         \
            continue;                                                                    \
        }                                                                                \
        if (nr < nr_full) memset(out, 0, sizeof(T) * nr_full * kc);                      \
        if (cs == 1)               /* row-major: each k's columns lie together */       \
            for (int64_t p = 0; p < kc; p++)                                             \
                for (int64_t j = 0; j < nr; j++) out[p * nr_full + j] = b[p * rs + j0 + j]; \
        else                                                                             \
            for (int64_t j = 0; j < nr; j++) {                                           \
                const T* col = b + (j0 + j) * cs;                                        \
                for (int64_t p = 0; p < kc; p++) out[p * nr_full + j] = col[p * rs];     \
            }                                                                            \
    }                                                                                    \
}                                                                                        \
                                                                                         \
/* C (m x n, row stride ldc, columns dense) = A (m x k) @ B (k x n), k > 0, through the  \
   packing memory ap (an A block: up to MC x KC) and bp (a B block: up to KC x NC). */    \
static void NAME##_one(int64_t m, int64_t n, int64_t k, const T* a, int64_t ars,         \
                       int64_t acs, const T* b, int64_t brs, int64_t bcs, T* c,          \
                       int64_t ldc, T* ap, T* bp)                                        \
{                                                                                        \
    for (int64_t j0 = 0; j0 < n; j0 += GEMM_NC) {                                        \
        const int64_t nc = n - j0 < GEMM_NC ? n - j0 : GEMM_NC;                          \
        for (int64_t p0 = 0; p0 < k; p0 += GEMM_KC) {                                    \
            const int64_t kc = k - p0 < GEMM_KC ? k - p0 : GEMM_KC;                      \
            NAME##_pack_b(kc, nc, b + p0 * brs + j0 * bcs, brs, bcs, bp);                \
            for (int64_t i0 = 0; i0 < m; i0 += GEMM_MC) {                                \
                const int64_t mc = m - i0 < GEMM_MC ? m - i0 : GEMM_MC;                  \
                NAME##_pack_a(mc, kc, a + i0 * ars + p0 * acs, ars, acs, ap);            \
                for (int64_t jr = 0; jr < nc; jr += NAME##_NR)                           \
                    for (int64_t ir = 0; ir < mc; ir += GEMM_MR)                         \
                        (nc - jr <= W ? NAME##_micro_half : NAME##_micro)(               \
                            kc, ap + ir * kc, bp + jr * kc, c + (i0 + ir) * ldc + j0 + jr, \
                            ldc, (int)(mc - ir < GEMM_MR ? mc - ir : GEMM_MR),           \
                            (int)(nc - jr < NAME##_NR ? nc - jr : NAME##_NR), p0 > 0);   \
            }                                                                            \
        }                                                                                \
    }                                                                                    \
}                                                                                        \
                                                                                         \
typedef struct {                                                                         \
    int by_rows;                                                                         \
    _Atomic int failed;          /* a piece could not allocate its packing buffer */     \
    int64_t m, n, k, per, pieces, inner;                                                 \
    int64_t ars, acs, sa, sa2, brs, bcs, sb, sb2, ldc, sc, sc2;                          \
    const T *a, *b;                                                                      \
    T* c;                                                                                \
} NAME##_job;                                                                            \
                                                                                         \
static void NAME##_piece(const void* ctx, int64_t t)                                     \
{                                                                                        \
    NAME##_job* j = (NAME##_job*)ctx;                                                    \
    const int64_t p = t / j->pieces, lo = (t % j->pieces) * j->per;                      \
    const int64_t extent = j->by_rows ? j->m : j->n;                                     \
    const int64_t len = extent - lo < j->per ? extent - lo : j->per;                     \
    const int64_t p1 = p / j->inner, p2 = p % j->inner;                                  \
    const T* a = j->a + p1 * j->sa + p2 * j->sa2;                                        \
    const T* b = j->b + p1 * j->sb + p2 * j->sb2;                                        \
    T* c = j->c + p1 * j->sc + p2 * j->sc2;                                              \
    const int64_t rows = j->by_rows ? len : j->m, cols = j->by_rows ? j->n : len;        \
    const int64_t mc = rows < GEMM_MC ? rows : GEMM_MC, nc = cols < GEMM_NC ? cols : GEMM_NC; \
    const int64_t kc = j->k < GEMM_KC ? j->k : GEMM_KC;                                  \
    const int64_t a_size = (mc + GEMM_MR - 1) / GEMM_MR * GEMM_MR * kc;                  \
    T* pack = gemm_pack_memory(sizeof(T) *                                               \
                               (a_size + (nc + NAME##_NR - 1) / NAME##_NR * NAME##_NR * kc)); \
    if (pack == NULL) {                                                                  \
        atomic_store(&j->failed, 1);                                                     \
        return;                                                                          \
    }                                                                                    \
    if (j->by_rows)                                                                      \
        NAME##_one(len, j->n, j->k, a + lo * j->ars, j->ars, j->acs, b, j->brs, j->bcs,  \
                   c + lo * j->ldc, j->ldc, pack, pack + a_size);                        \
    else                                                                                 \
        NAME##_one(j->m, len, j->k, a, j->ars, j->acs, b + lo * j->bcs, j->brs, j->bcs,  \
                   c + lo, j->ldc, pack, pack + a_size);                                 \
}                                                                                        \
                                                                                         \
/* C[b1, b2] = A[b1, b2] @ B[b1, b2] for outer x inner products (m x n x k, k > 0): A's  \
   element (i, p) at a + i*ars + p*acs, B's (p, j) at b + p*brs + j*bcs, C's rows ldc    \
   apart with dense columns; sa/sa2, sb/sb2, sc/sc2: the two batch dims' strides (0: a   \
   broadcast operand). Each product is cut into `blocks` pieces along C's rows or, when C \
   is wider than tall, its columns, run on `nthreads` threads of the pool (`runner`).    \
   Returns 0, or -1 where memory for packing ran out (C is then partly written). */      \
int NAME(int64_t outer, int64_t inner, int64_t m, int64_t n, int64_t k, const T* a,      \
         int64_t ars, int64_t acs, int64_t sa, int64_t sa2, const T* b, int64_t brs,     \
         int64_t bcs, int64_t sb, int64_t sb2, T* c, int64_t ldc, int64_t sc,            \
         int64_t sc2, int64_t blocks, int nthreads, void* runner)                        \
{                                                                                        \
    NAME##_job j = {m >= n, 0, m, n, k, 0, 0, inner, ars, acs, sa, sa2, brs, bcs, sb,    \
                    sb2, ldc, sc, sc2, a, b, c};                                         \
    const int64_t batch = outer * inner;                                                 \
    const int64_t extent = j.by_rows ? m : n;                                            \
    const int64_t grain = j.by_rows ? GEMM_MR : NAME##_NR;                               \
    j.per = (extent + blocks - 1) / blocks;                                              \
    j.per = (j.per + grain - 1) / grain * grain;                                         \
    j.pieces = (extent + j.per - 1) / j.per;                                             \
    if (nthreads < 2 || runner == NULL || batch * j.pieces < 2)                          \
        for (int64_t t = 0; t < batch * j.pieces; t++) NAME##_piece(&j, t);              \
    else                                                                                 \
        ((run_pieces_fn)runner)(NAME##_piece, &j, batch * j.pieces, nthreads);           \
    return atomic_load(&j.failed) ? -1 : 0;                                              \
}

GEMM_OWN(gemm_own_f32, float, __m512, 16, _mm512_loadu_ps, _mm512_maskz_loadu_ps,
         _mm512_mask_storeu_ps, _mm512_storeu_ps, _mm512_set1_ps, _mm512_fmadd_ps,
         _mm512_add_ps, _mm512_setzero_ps, __mmask16)
GEMM_OWN(gemm_own_f64, double, __m512d, 8, _mm512_loadu_pd, _mm512_maskz_loadu_pd,
         _mm512_mask_storeu_pd, _mm512_storeu_pd, _mm512_set1_pd, _mm512_fmadd_pd,
         _mm512_add_pd, _mm512_setzero_pd, __mmask8)
#else
#define GT_GEMM_OWN 0
#endif

/* Whether this build has glasstorch's own product kernel (gemm_own_f32/f64). */
int gemm_own_available(void) { return GT_GEMM_OWN; }
