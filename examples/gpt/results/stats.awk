# stats.awk - the seed statistics of results/cap and results/muown (POSIX awk, mawk included):
# Student's t 95 % quantiles, mean, sample sd and the paired 95 % interval of a mean difference,
# the same definitions as report.c (exp_t975, exp_mean_sd, exp_pair_summarize).
function t975(df) {
    if (df == 1) return 12.706204736174707; if (df == 2) return 4.302652729749464
    if (df == 3) return 3.182446305284263;  if (df == 4) return 2.7764451051977934
    if (df == 5) return 2.570581835636314;  if (df == 6) return 2.4469118511449692
    if (df == 7) return 2.3646242515927844; if (df == 8) return 2.306004135204166
    return "nan"
}
# mean and sample sd of x[1..n] into M_MEAN, M_SD (sd 0 for n = 1)
function mean_sd(x, n,    i, s, q) {
    s = 0; for (i = 1; i <= n; i++) s += x[i]; M_MEAN = s / n
    q = 0; for (i = 1; i <= n; i++) q += (x[i] - M_MEAN) ^ 2; M_SD = n > 1 ? sqrt(q / (n - 1)) : 0
}
# the 95 % interval of the mean of d[1..n] (paired differences) into CI_MEAN, CI_LO, CI_HI
function ci(d, n,    h) {
    mean_sd(d, n); h = n > 1 ? t975(n - 1) * M_SD / sqrt(n) : 0
    CI_MEAN = M_MEAN; CI_LO = M_MEAN - h; CI_HI = M_MEAN + h
}
# "beyond seed noise" when the interval excludes v, else "within seed noise"
function noise(lo, hi, v) { return (lo > v || hi < v) ? "beyond seed noise" : "within seed noise" }
# least-squares slope of y on x over the n points x[1..n], y[1..n]
function slope(x, y, n,    i, mx, my, sxy, sxx) {
    mx = 0; my = 0; for (i = 1; i <= n; i++) { mx += x[i]; my += y[i] } mx /= n; my /= n
    sxy = 0; sxx = 0; for (i = 1; i <= n; i++) { sxy += (x[i] - mx) * (y[i] - my); sxx += (x[i] - mx) ^ 2 }
    return sxy / sxx
}
