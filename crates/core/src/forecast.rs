//! Demand and spend forecasts: a linear trend plus a repeating seasonal profile, with an
//! interval.
//!
//! The model is the classical additive decomposition `y_t = a + b·t + s_(t mod period) + e_t`:
//! the trend is ordinary least squares over the whole history, the season is the mean detrended
//! value of each phase (hour of week, day of week), and the residuals `e_t` are what is left.
//! It is deliberately simple: GPU demand and spend histories are short (weeks to months) and a
//! model with more parameters overfits them. What it must get right is the *interval*, because a
//! commitment or a budget is sized on it:
//!
//! * per step, the interval is the empirical 10th-90th percentile of the residuals around the
//!   point forecast (no normality assumed: GPU demand residuals are lumpy);
//! * for a total over many steps it is the point total ± z·σ·√(h + h²/n + (Σ(t−t̄))²/Sxx), the
//!   exact prediction variance of a sum under the linear model with independent errors (the
//!   `h²/n` and `Sxx` terms carry the uncertainty of the fitted level and trend, which dominates
//!   far ahead). Daily spend residuals are close to independent; hourly demand residuals are not,
//!   so totals are formed from daily sums by the caller.
//!
//! Nothing here performs I/O; everything is `f64` because a forecast is an estimate, never an
//! amount that is billed or summed into the ledger.

use serde::Serialize;

/// z for a two-sided 80% normal interval.
const Z80: f64 = 1.281_551_565_545;

/// A fitted trend + seasonal model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SeasonalTrend {
    /// Level at step 0.
    pub intercept: f64,
    /// Change per step.
    pub slope: f64,
    /// Seasonal offset per phase (`len` = the period; empty when the history is too short).
    pub season: Vec<f64>,
    /// Standard deviation of the residuals (degrees of freedom corrected).
    pub sigma: f64,
    /// 10th and 90th percentile of the residuals.
    pub residual_p10: f64,
    /// 90th percentile of the residuals.
    pub residual_p90: f64,
    /// Steps of history fitted.
    pub n: usize,
    mean_t: f64,
    sxx: f64,
}

/// A forecast of `horizon` steps after the history.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Forecast {
    /// Point forecast per step.
    pub mean: Vec<f64>,
    /// Lower end of the 80% interval per step.
    pub low: Vec<f64>,
    /// Upper end of the 80% interval per step.
    pub high: Vec<f64>,
}

impl SeasonalTrend {
    /// Fits the model. The season is used only when the history covers at least two periods
    /// (one period cannot tell a season from noise); `period` 0 or 1 means none.
    pub fn fit(history: &[f64], period: usize) -> SeasonalTrend {
        let n = history.len();
        let nf = n as f64;
        let mean_t = if n == 0 { 0.0 } else { (nf - 1.0) / 2.0 };
        let sxx: f64 = (0..n).map(|t| (t as f64 - mean_t).powi(2)).sum();
        let use_season = period > 1 && n >= 2 * period;
        // Joint least squares of trend and season by backfitting: a phase pattern that is not
        // balanced in time (weekends at the end of each week) would otherwise bias the slope.
        let (mut intercept, mut slope) = (0.0, 0.0);
        let mut season: Vec<f64> = if use_season { vec![0.0; period] } else { Vec::new() };
        let seasonal = |season: &[f64], t: usize| if season.is_empty() { 0.0 } else { season[t % season.len()] };
        for _ in 0..if use_season { 100 } else { 1 } {
            let adjusted: Vec<f64> = history.iter().enumerate().map(|(t, y)| y - seasonal(&season, t)).collect();
            let mean_y = if n == 0 { 0.0 } else { adjusted.iter().sum::<f64>() / nf };
            let sxy: f64 = adjusted.iter().enumerate().map(|(t, y)| (t as f64 - mean_t) * (y - mean_y)).sum();
            let next_slope = if sxx > 0.0 { sxy / sxx } else { 0.0 };
            intercept = mean_y - next_slope * mean_t;
            let moved = (next_slope - slope).abs();
            slope = next_slope;
            if use_season {
                let mut sums = vec![0.0; period];
                let mut counts = vec![0.0; period];
                for (t, y) in history.iter().enumerate() {
                    sums[t % period] += y - (intercept + slope * t as f64);
                    counts[t % period] += 1.0;
                }
                season = sums.iter().zip(&counts).map(|(s, c)| s / c).collect();
                // Centre it so the trend keeps the level.
                let centre = season.iter().sum::<f64>() / period as f64;
                season.iter_mut().for_each(|s| *s -= centre);
            }
            if moved < 1e-12 * (1.0 + slope.abs()) {
                break;
            }
        }
        let mut model = SeasonalTrend {
            intercept,
            slope,
            season,
            sigma: 0.0,
            residual_p10: 0.0,
            residual_p90: 0.0,
            n,
            mean_t,
            sxx,
        };
        let mut residuals: Vec<f64> = history.iter().enumerate().map(|(t, y)| y - model.point(t)).collect();
        let dof = n.saturating_sub(2 + model.season.len().saturating_sub(1)).max(1) as f64;
        model.sigma = (residuals.iter().map(|e| e * e).sum::<f64>() / dof).sqrt();
        residuals.sort_by(f64::total_cmp);
        model.residual_p10 = percentile(&residuals, 0.10);
        model.residual_p90 = percentile(&residuals, 0.90);
        model
    }

    /// The point forecast at step `t` (0 = the first step of the history).
    pub fn point(&self, t: usize) -> f64 {
        let seasonal = if self.season.is_empty() { 0.0 } else { self.season[t % self.season.len()] };
        self.intercept + self.slope * t as f64 + seasonal
    }

    /// The next `horizon` steps, each with its 80% interval, floored at `floor` (demand and
    /// spend are never negative).
    pub fn forecast(&self, horizon: usize, floor: f64) -> Forecast {
        let steps = self.n..self.n + horizon;
        let mean: Vec<f64> = steps.clone().map(|t| self.point(t).max(floor)).collect();
        let low = steps.clone().map(|t| (self.point(t) + self.residual_p10).max(floor)).collect();
        let high = steps.map(|t| (self.point(t) + self.residual_p90).max(floor)).collect();
        Forecast { mean, low, high }
    }

    /// The total of steps `from..to` (absolute step indices, after the history) with its 80%
    /// interval: `(low, point, high)`, floored at 0.
    pub fn total(&self, from: usize, to: usize) -> (f64, f64, f64) {
        if to <= from {
            return (0.0, 0.0, 0.0);
        }
        let h = (to - from) as f64;
        let point: f64 = (from..to).map(|t| self.point(t)).sum();
        let spread: f64 = (from..to).map(|t| t as f64 - self.mean_t).sum();
        let n = self.n.max(1) as f64;
        let trend_var = if self.sxx > 0.0 { spread * spread / self.sxx } else { 0.0 };
        let sd = self.sigma * (h + h * h / n + trend_var).sqrt();
        ((point - Z80 * sd).max(0.0), point.max(0.0), (point + Z80 * sd).max(0.0))
    }
}

/// The `q` quantile of sorted values (linear interpolation).
fn percentile(sorted: &[f64], q: f64) -> f64 {
    match sorted.len() {
        0 => 0.0,
        1 => sorted[0],
        len => {
            let pos = q * (len - 1) as f64;
            let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
            sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn recovers_trend_and_weekly_season() {
        // 10 weeks of daily values: 100 + 2/day, weekends 30 lower, no noise.
        let history: Vec<f64> = (0..70).map(|d| 100.0 + 2.0 * d as f64 - if d % 7 >= 5 { 30.0 } else { 0.0 }).collect();
        let m = SeasonalTrend::fit(&history, 7);
        for (t, y) in history.iter().enumerate() {
            assert!((m.point(t) - y).abs() < 1e-6, "step {t}: {} vs {y}", m.point(t));
        }
        let f = m.forecast(14, 0.0);
        for (i, v) in f.mean.iter().enumerate() {
            let d = 70 + i;
            let truth = 100.0 + 2.0 * d as f64 - if d % 7 >= 5 { 30.0 } else { 0.0 };
            assert!((v - truth).abs() < 1e-6);
        }
        let (low, point, high) = m.total(70, 100);
        assert!((low - point).abs() < 1e-6 && (high - point).abs() < 1e-6, "no noise, no interval");
    }

    #[test]
    fn short_history_has_no_season() {
        let m = SeasonalTrend::fit(&[5.0, 6.0, 7.0], 7);
        assert!(m.season.is_empty());
        assert!((m.point(3) - 8.0).abs() < 1e-9);
        let empty = SeasonalTrend::fit(&[], 7);
        assert_eq!(empty.forecast(3, 0.0).mean, vec![0.0; 3]);
    }

    proptest! {
        /// The 80% interval of a total covers the truth about 80% of the time on a noisy trend
        /// (checked over many seeded series: between 70% and 90%), and widens with the horizon.
        #[test]
        fn interval_of_a_total_is_calibrated(seed in 0u64..20) {
            let mut rng = fastrand::Rng::with_seed(seed);
            let mut covered = 0;
            let trials = 200;
            for _ in 0..trials {
                let noise = |r: &mut fastrand::Rng| (0..12).map(|_| r.f64()).sum::<f64>() - 6.0; // ~N(0,1)
                let series: Vec<f64> = (0..150).map(|t| 50.0 + 0.5 * t as f64 + 8.0 * noise(&mut rng)).collect();
                let (history, future) = series.split_at(120);
                let m = SeasonalTrend::fit(history, 0);
                let (low, _, high) = m.total(120, 150);
                let truth: f64 = future.iter().sum();
                if low <= truth && truth <= high {
                    covered += 1;
                }
                let (l2, _, h2) = m.total(120, 180);
                prop_assert!(h2 - l2 > high - low);
            }
            let rate = covered as f64 / trials as f64;
            prop_assert!((0.70..=0.90).contains(&rate), "coverage {rate}");
        }
    }
}
