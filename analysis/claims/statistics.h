// Interval estimates behind every verdict of the claims engine: Student-t
// intervals of a mean (one sample or paired differences), Welch's interval of a
// difference of means, and Fisher's z interval of a correlation. All intervals
// are two-sided at the stated confidence (the engine uses 95%).
#ifndef SPARSE_LAYERS_ANALYSIS_CLAIMS_STATISTICS_H_
#define SPARSE_LAYERS_ANALYSIS_CLAIMS_STATISTICS_H_

#include <vector>

namespace sparse_layers::claims {

// A point estimate with its interval; low/high are -inf/+inf when the data
// cannot bound it (n too small).
struct Interval {
  double estimate = 0.0;
  double low = 0.0;
  double high = 0.0;
  int n = 0;
};

// Arithmetic mean (NaN for no values).
double Mean(const std::vector<double>& values);

// P(T <= t) for Student's t with `df` degrees of freedom (df may be fractional,
// as Welch's is).
double StudentTCdf(double t, double df);

// The t with P(T <= t) = p, for 0 < p < 1.
double StudentTQuantile(double p, double df);

// Mean of `values` with the t interval mean +- t_{(1+c)/2, n-1} s / sqrt(n);
// unbounded for n < 2.
Interval MeanInterval(const std::vector<double>& values, double confidence);

// mean(a) - mean(b) with Welch's interval (unequal variances, Satterthwaite
// degrees of freedom); unbounded when either side has fewer than 2 values. n is
// the smaller of the two sizes.
Interval WelchInterval(const std::vector<double>& a,
                       const std::vector<double>& b, double confidence);

// mean(a) / mean(b) - 1 with a delta-method interval that carries both arms'
// sampling variances (var(mean a) / mb^2 + ma^2 var(mean b) / mb^4) on
// Welch-Satterthwaite degrees of freedom; undefined (NaN estimate, unbounded)
// when mean(b) is 0 or B's own interval reaches 0 (the ratio is then
// unbounded), unbounded when either side has fewer than 2 values.
Interval RatioInterval(const std::vector<double>& a,
                       const std::vector<double>& b, double confidence);

// Whether `values` (at least 2) agree to within 1e-9 of their scale: every seed
// gave the same value, so a t interval has no noise estimate.
bool NoSpread(const std::vector<double>& values);

// The smallest n >= 2 at which a one-sample t test at two-sided level `alpha`
// detects a true mean `effect` (> 0) with probability `power`, when values
// scatter with standard deviation `sd`; uses the shifted central t
// approximation to the noncentral t. `two_sided_band` (equivalence: both ends
// of the interval inside +-effect when the truth is 0) needs both one-sided
// tests to pass. Returns `cap` + 1 when even `cap` seeds are not enough.
int SeedsForPower(double sd, double effect, double alpha, double power,
                  bool two_sided_band, int cap);

// The standard deviation behind a two-sided interval of half-width `half` at
// `confidence` on n values (half = t_{(1+c)/2, n-1} sd / sqrt(n)); NaN for n
// < 2.
double SdFromHalfWidth(double half, int n, double confidence);

// Pearson's r of (x, y) with Fisher's z interval tanh(atanh(r) +- z_{(1+c)/2} /
// sqrt(m - 3)); unbounded (in
// [-1, 1]) for m < 4 points. n is the number of points.
Interval CorrelationInterval(const std::vector<double>& x,
                             const std::vector<double>& y, double confidence);

// Least-squares slope of y on x (0 when x has no spread).
double Slope(const std::vector<double>& x, const std::vector<double>& y);

}  // namespace sparse_layers::claims

#endif  // SPARSE_LAYERS_ANALYSIS_CLAIMS_STATISTICS_H_
