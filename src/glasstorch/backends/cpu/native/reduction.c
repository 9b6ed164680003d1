/* The column sums of a row-major (rows, cols) array, which are a tensor's sum over its
   leading dims (a bias's gradient; reduction.py), added row after row as NumPy's
   add.reduce over axis 0 adds them, so the results are NumPy's bit for bit. */

/* Columns in chunks of 64 whose partial sums stay in vector registers down the rows. */
#define SUM_CHUNK 64
#define SUM_ROWS(T, SUFFIX)                                                             \
void sum_rows_##SUFFIX(int64_t rows, int64_t cols, const T* restrict a, T* restrict out,\
                       int nthreads)                                                    \
{                                                                                       \
    _Pragma("omp parallel for num_threads(nthreads)")                                   \
    for (int64_t c0 = 0; c0 < cols; c0 += SUM_CHUNK) {                                  \
        const int64_t w = cols - c0 < SUM_CHUNK ? cols - c0 : SUM_CHUNK;                \
        T acc[SUM_CHUNK] = {0};                                                         \
        if (rows > 0 && w == SUM_CHUNK) {                                               \
            for (int64_t c = 0; c < SUM_CHUNK; c++) acc[c] = a[c0 + c];                 \
            for (int64_t r = 1; r < rows; r++) {                                        \
                const T* row = a + r * cols + c0;                                       \
                _Pragma("omp simd")                                                     \
                for (int64_t c = 0; c < SUM_CHUNK; c++) acc[c] += row[c];               \
            }                                                                           \
        } else if (rows > 0) {                                                          \
            for (int64_t c = 0; c < w; c++) acc[c] = a[c0 + c];                         \
            for (int64_t r = 1; r < rows; r++) {                                        \
                const T* row = a + r * cols + c0;                                       \
                for (int64_t c = 0; c < w; c++) acc[c] += row[c];                       \
            }                                                                           \
        }                                                                               \
        for (int64_t c = 0; c < w; c++) out[c0 + c] = acc[c];                           \
    }                                                                                   \
}

SUM_ROWS(float, f32)
SUM_ROWS(double, f64)
