/* The 2-norm of a dense float32/float64 array, as reduction.py's norm_kernel computes it
   for ord 2 over every element: sqrt of NumPy's pairwise sum of the squares (the flat
   array's, which is what NumPy's reduction over all axes of a contiguous array sums),
   without the |x| and x * x arrays. The foreach norm (gradient clipping) calls it once per
   tensor. */

#define SQUARE(i) (a[i] * a[i])

#define NORM_KERNELS(T, SUF, SQRT)                                                     \
PAIRWISE_TERMS(sum_of_squares_##SUF, T, SQUARE)                                        \
                                                                                       \
void norm2_##SUF(int64_t n, const T* a, T* out)                                        \
{                                                                                      \
    *out = SQRT(sum_of_squares_##SUF(a, a, 0, 0, n));                                  \
}

NORM_KERNELS(float, f32, sqrtf)
NORM_KERNELS(double, f64, sqrt)
