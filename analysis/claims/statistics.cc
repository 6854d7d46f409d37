#include "analysis/claims/statistics.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace sparse_layers::claims {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Continued fraction of the regularised incomplete beta function (modified
// Lentz's method).
double BetaContinuedFraction(double a, double b, double x) {
  constexpr double kTiny = 1e-300;
  constexpr double kEpsilon = 1e-15;
  double c = 1.0;
  double d = 1.0 - (a + b) * x / (a + 1.0);
  if (std::fabs(d) < kTiny) d = kTiny;
  d = 1.0 / d;
  double h = d;
  for (int m = 1; m <= 10000; ++m) {
    const double m2 = 2.0 * m;
    double aa = m * (b - m) * x / ((a + m2 - 1.0) * (a + m2));
    d = 1.0 + aa * d;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = 1.0 + aa / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1.0 / d;
    h *= d * c;
    aa = -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1.0));
    d = 1.0 + aa * d;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = 1.0 + aa / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1.0 / d;
    const double delta = d * c;
    h *= delta;
    if (std::fabs(delta - 1.0) < kEpsilon) break;
  }
  return h;
}

// I_x(a, b), the regularised incomplete beta function.
double RegularisedBeta(double a, double b, double x) {
  if (x <= 0.0) return 0.0;
  if (x >= 1.0) return 1.0;
  const double log_front = std::lgamma(a + b) - std::lgamma(a) -
                           std::lgamma(b) + a * std::log(x) +
                           b * std::log1p(-x);
  if (x < (a + 1.0) / (a + b + 2.0)) {
    return std::exp(log_front) * BetaContinuedFraction(a, b, x) / a;
  }
  return 1.0 - std::exp(log_front) * BetaContinuedFraction(b, a, 1.0 - x) / b;
}

// Unbiased sample variance.
double Variance(const std::vector<double>& values, double mean) {
  double sum = 0.0;
  for (double v : values) sum += (v - mean) * (v - mean);
  return sum / (values.size() - 1);
}

// The standard normal quantile, by bisection on erfc (only used for Fisher's
// z).
double NormalQuantile(double p) {
  double low = -40.0, high = 40.0;
  for (int i = 0; i < 200; ++i) {
    const double mid = 0.5 * (low + high);
    if (0.5 * std::erfc(-mid / std::sqrt(2.0)) < p) {
      low = mid;
    } else {
      high = mid;
    }
  }
  return 0.5 * (low + high);
}

}  // namespace

double Mean(const std::vector<double>& values) {
  return std::accumulate(values.begin(), values.end(), 0.0) / values.size();
}

double StudentTCdf(double t, double df) {
  const double tail = 0.5 * RegularisedBeta(0.5 * df, 0.5, df / (df + t * t));
  return t >= 0.0 ? 1.0 - tail : tail;
}

double StudentTQuantile(double p, double df) {
  // The CDF is monotone: bisect on a bracket wide enough for df >= 1 at p in
  // [1e-9, 1 - 1e-9].
  double low = -1e9, high = 1e9;
  for (int i = 0; i < 400 && high - low > 1e-13 * std::max(1.0, std::fabs(low));
       ++i) {
    const double mid = 0.5 * (low + high);
    if (StudentTCdf(mid, df) < p) {
      low = mid;
    } else {
      high = mid;
    }
  }
  return 0.5 * (low + high);
}

Interval MeanInterval(const std::vector<double>& values, double confidence) {
  Interval out;
  out.n = static_cast<int>(values.size());
  if (values.empty()) {
    out.estimate = std::numeric_limits<double>::quiet_NaN();
    out.low = -kInf;
    out.high = kInf;
    return out;
  }
  out.estimate = Mean(values);
  if (values.size() < 2) {
    out.low = -kInf;
    out.high = kInf;
    return out;
  }
  const double half =
      StudentTQuantile(0.5 * (1.0 + confidence), values.size() - 1.0) *
      std::sqrt(Variance(values, out.estimate) / values.size());
  out.low = out.estimate - half;
  out.high = out.estimate + half;
  return out;
}

Interval WelchInterval(const std::vector<double>& a,
                       const std::vector<double>& b, double confidence) {
  Interval out;
  out.n = static_cast<int>(std::min(a.size(), b.size()));
  if (a.empty() || b.empty()) {
    out.estimate = std::numeric_limits<double>::quiet_NaN();
    out.low = -kInf;
    out.high = kInf;
    return out;
  }
  const double mean_a = Mean(a), mean_b = Mean(b);
  out.estimate = mean_a - mean_b;
  if (a.size() < 2 || b.size() < 2) {
    out.low = -kInf;
    out.high = kInf;
    return out;
  }
  const double va = Variance(a, mean_a) / a.size(),
               vb = Variance(b, mean_b) / b.size();
  const double se = std::sqrt(va + vb);
  if (se == 0.0) {
    out.low = out.high = out.estimate;
    return out;
  }
  const double df = (va + vb) * (va + vb) /
                    (va * va / (a.size() - 1.0) + vb * vb / (b.size() - 1.0));
  const double half = StudentTQuantile(0.5 * (1.0 + confidence), df) * se;
  out.low = out.estimate - half;
  out.high = out.estimate + half;
  return out;
}

Interval RatioInterval(const std::vector<double>& a,
                       const std::vector<double>& b, double confidence) {
  Interval out;
  out.n = static_cast<int>(std::min(a.size(), b.size()));
  out.low = -kInf;
  out.high = kInf;
  if (a.empty() || b.empty() || Mean(b) == 0.0) {
    out.estimate = std::numeric_limits<double>::quiet_NaN();
    return out;
  }
  const double mean_a = Mean(a), mean_b = Mean(b);
  out.estimate = mean_a / mean_b - 1.0;
  if (a.size() < 2 || b.size() < 2) return out;
  // Delta method: the ratio's variance from both means' variances.
  const double ca = Variance(a, mean_a) / a.size() / (mean_b * mean_b);
  const double cb = mean_a * mean_a * Variance(b, mean_b) / b.size() /
                    (mean_b * mean_b * mean_b * mean_b);
  const double se = std::sqrt(ca + cb);
  // B's own interval reaching zero: the ratio is unbounded (Fieller).
  const double se_b = std::sqrt(Variance(b, mean_b) / b.size());
  if (std::fabs(mean_b) <=
      StudentTQuantile(0.5 * (1.0 + confidence), b.size() - 1.0) * se_b) {
    out.estimate = std::numeric_limits<double>::quiet_NaN();
    return out;
  }
  if (se == 0.0) {
    out.low = out.high = out.estimate;
    return out;
  }
  const double df = (ca + cb) * (ca + cb) /
                    (ca * ca / (a.size() - 1.0) + cb * cb / (b.size() - 1.0));
  const double half = StudentTQuantile(0.5 * (1.0 + confidence), df) * se;
  out.low = out.estimate - half;
  out.high = out.estimate + half;
  return out;
}

bool NoSpread(const std::vector<double>& values) {
  if (values.size() < 2) return false;
  for (double v : values) {
    if (!std::isfinite(v)) return false;
  }
  const auto [low, high] = std::minmax_element(values.begin(), values.end());
  const double scale = std::max(std::fabs(*low), std::fabs(*high));
  return *high - *low <= 1e-9 * std::max(scale, 1e-300);
}

int SeedsForPower(double sd, double effect, double alpha, double power,
                  bool two_sided_band, int cap) {
  if (!(effect > 0) || !std::isfinite(sd)) return cap + 1;
  if (sd == 0.0) return 2;
  for (int n = 2; n <= cap; ++n) {
    const double df = n - 1.0;
    const double critical = StudentTQuantile(1.0 - 0.5 * alpha, df);
    const double shift = effect * std::sqrt(static_cast<double>(n)) / sd;
    // P(T + shift > critical), T central t: the one-sided power.
    double achieved = 1.0 - StudentTCdf(critical - shift, df);
    // Both one-sided tests of an equivalence band must pass.
    if (two_sided_band) achieved = 1.0 - 2.0 * (1.0 - achieved);
    if (achieved >= power) return n;
  }
  return cap + 1;
}

double SdFromHalfWidth(double half, int n, double confidence) {
  if (n < 2) return std::numeric_limits<double>::quiet_NaN();
  return half * std::sqrt(static_cast<double>(n)) /
         StudentTQuantile(0.5 * (1.0 + confidence), n - 1.0);
}

Interval CorrelationInterval(const std::vector<double>& x,
                             const std::vector<double>& y, double confidence) {
  Interval out;
  out.n = static_cast<int>(x.size());
  out.low = -1.0;
  out.high = 1.0;
  if (x.size() < 2 || x.size() != y.size()) {
    out.estimate = std::numeric_limits<double>::quiet_NaN();
    return out;
  }
  const double mx = Mean(x), my = Mean(y);
  double sxy = 0.0, sxx = 0.0, syy = 0.0;
  for (size_t i = 0; i < x.size(); ++i) {
    sxy += (x[i] - mx) * (y[i] - my);
    sxx += (x[i] - mx) * (x[i] - mx);
    syy += (y[i] - my) * (y[i] - my);
  }
  if (sxx == 0.0 || syy == 0.0) {
    out.estimate = std::numeric_limits<double>::quiet_NaN();
    return out;
  }
  out.estimate = sxy / std::sqrt(sxx * syy);
  if (x.size() < 4) return out;
  const double r = std::clamp(out.estimate, -1.0 + 1e-15, 1.0 - 1e-15);
  const double half =
      NormalQuantile(0.5 * (1.0 + confidence)) / std::sqrt(x.size() - 3.0);
  out.low = std::tanh(std::atanh(r) - half);
  out.high = std::tanh(std::atanh(r) + half);
  return out;
}

double Slope(const std::vector<double>& x, const std::vector<double>& y) {
  const double mx = Mean(x), my = Mean(y);
  double sxy = 0.0, sxx = 0.0;
  for (size_t i = 0; i < x.size(); ++i) {
    sxy += (x[i] - mx) * (y[i] - my);
    sxx += (x[i] - mx) * (x[i] - mx);
  }
  return sxx == 0.0 ? 0.0 : sxy / sxx;
}

}  // namespace sparse_layers::claims
