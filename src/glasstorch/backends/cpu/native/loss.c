/* nll_loss over a C-contiguous (n, c) array of log-probabilities and int64 class targets,
   and its input gradient, as loss.py's nll_kernel and nll_backward_kernel compute them:
   the terms -x[i, t_i] * w_i, w_i the weight of class t_i (1 without weights), each sum
   NumPy's pairwise sum. A row whose target is ignore_index adds nothing and gets no
   gradient, as in PyTorch. Both kernels first check every other target against [0, c)
   and, finding one outside, write its row to *bad and nothing else. */

#define NLL_CHECK(n, c, t, ignore, bad)                                                \
    for (int64_t i = 0; i < (n); i++) {                                                \
        if ((t)[i] != (ignore) && ((t)[i] < 0 || (t)[i] >= (c))) {                     \
            *(bad) = i;                                                                \
            return;                                                                    \
        }                                                                              \
    }                                                                                  \
    *(bad) = -1;

#define NLL_KERNELS(T, SUF)                                                            \
/* terms (n) gets the rows' losses and weights (n) their weights, both 0 where ignored. */ \
void nll_forward_##SUF(int64_t n, int64_t c, const T* x, const int64_t* t,             \
                       int64_t ignore, const T* weight, T* terms, T* weights,          \
                       int64_t* bad)                                                   \
{                                                                                      \
    NLL_CHECK(n, c, t, ignore, bad)                                                    \
    for (int64_t i = 0; i < n; i++) {                                                  \
        if (t[i] == ignore) {                                                          \
            terms[i] = 0;                                                              \
            weights[i] = 0;                                                            \
            continue;                                                                  \
        }                                                                              \
        T w = weight ? weight[t[i]] : (T)1;                                            \
        terms[i] = -x[i * c + t[i]] * w;                                               \
        weights[i] = w;                                                                \
    }                                                                                  \
}                                                                                      \
                                                                                       \
/* The reduced loss straight into the 0-dim outputs: *loss the terms' sum (divided by the \
   weights' for 'mean': all ignored is 0/0 = nan, as PyTorch's) and *total the weights'   \
   sum; scratch holds 2n elements (the terms, then the weights). Nothing is written when \
   a target is out of range. */                                                        \
void nll_forward_reduced_##SUF(int64_t n, int64_t c, const T* x, const int64_t* t,     \
                               int64_t ignore, const T* weight, int mean, T* scratch,  \
                               T* loss, T* total, int64_t* bad)                        \
{                                                                                      \
    nll_forward_##SUF(n, c, x, t, ignore, weight, scratch, scratch + n, bad);          \
    if (*bad >= 0)                                                                     \
        return;                                                                        \
    T terms = gt_pairwise_sum_##T(scratch, n), weights = gt_pairwise_sum_##T(scratch + n, n); \
    /* + 0: a zero loss is +0 (PyTorch subtracts the terms from 0), not the terms' -0 */  \
    *loss = (mean ? terms / weights : terms) + (T)0;                                   \
    *total = weights;                                                                  \
}                                                                                      \
                                                                                       \
/* out (n, c) = 0, and -(w_i * g_i) at each kept row's target: g_i is grad[i] when      \
   per_row, else grad[0] (the reduced loss's gradient, already divided by the total     \
   weight for 'mean'). */                                                              \
void nll_backward_##SUF(int64_t n, int64_t c, const int64_t* t, int64_t ignore,       \
                        const T* weight, const T* grad, int per_row, T* out,           \
                        int64_t* bad)                                                  \
{                                                                                      \
    NLL_CHECK(n, c, t, ignore, bad)                                                    \
    memset(out, 0, (size_t)(n * c) * sizeof(T));                                       \
    for (int64_t i = 0; i < n; i++) {                                                  \
        if (t[i] == ignore)                                                            \
            continue;                                                                  \
        T w = weight ? weight[t[i]] : (T)1;                                            \
        out[i * c + t[i]] = -(w * grad[per_row ? i : 0]);                              \
    }                                                                                  \
}

NLL_KERNELS(float, f32)
NLL_KERNELS(double, f64)
