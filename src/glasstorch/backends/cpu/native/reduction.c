/* The column sums of a row-major (rows, cols) array, which are a tensor's sum over its
   leading dims (a bias's gradient; reduction.py), added row after row as NumPy's
   add.reduce over axis 0 adds them (for cols > 1), so the results are NumPy's bit for
   bit. */

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
    for (int64_t c = 0; c < W; c++) out[c] = acc[c];                                    \
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
    if (wide > 0 && wide < cols)                                                        \
        sum_columns_##SUFFIX##_64(rows, cols, a + cols - 64, out + cols - 64);          \
    if (wide > 0) return;                                                               \
    for (int64_t c = 0; c < narrow; c += 16)                                            \
        sum_columns_##SUFFIX##_16(rows, cols, a + c, out + c);                          \
    if (narrow > 0 && narrow < cols)                                                    \
        sum_columns_##SUFFIX##_16(rows, cols, a + cols - 16, out + cols - 16);          \
    for (int64_t c = narrow > 0 ? cols : 0; c < cols; c++)                              \
        sum_columns_##SUFFIX##_1(rows, cols, a + c, out + c);                           \
}

SUM_ROWS(float, f32)
SUM_ROWS(double, f64)
