/* NumPy's pairwise summation (as the prelude's gt_pairwise_sum_*, bit for bit) of terms
   computed on the fly: TERM(i), which reads a, b, c and d, instead of an array of them. */
#define PAIRWISE_TERMS(NAME, T, TERM)                                                  \
static T NAME(const T* a, const T* b, T c, T d, int64_t n)                             \
{                                                                                      \
    if (n < 8) {                                                                       \
        T r = -0.0;                                                                    \
        for (int64_t i = 0; i < n; i++) r += TERM(i);                                  \
        return r;                                                                      \
    }                                                                                  \
    if (n <= 128) {                                                                    \
        T r[8];                                                                        \
        int64_t i;                                                                     \
        for (int j = 0; j < 8; j++) r[j] = TERM(j);                                    \
        for (i = 8; i < n - (n % 8); i += 8)                                           \
            for (int j = 0; j < 8; j++) r[j] += TERM(i + j);                           \
        T res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));     \
        for (; i < n; i++) res += TERM(i);                                             \
        return res;                                                                    \
    }                                                                                  \
    int64_t half = n / 2;                                                              \
    half -= half % 8;                                                                  \
    return NAME(a, b, c, d, half) + NAME(a + half, b + half, c, d, n - half);          \
}
