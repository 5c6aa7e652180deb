//! Deadline-aware spot policies: pure functions of (job state, market view).
//!
//! Time is in seconds. `slack` = time left before the deadline minus work left: running at full
//! speed keeps it constant; idling, waiting for capacity and changeovers spend it. Every policy
//! here keeps the *safety net* of Can't Be Late (§3.4): once slack falls below two changeovers
//! plus one decision interval, run on on-demand (always available) until the end, so no policy
//! misses a deadline it could have met at the start.

use serde::Serialize;

/// What the job is running on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Mode {
    /// Nothing (waiting).
    Idle,
    /// Spot capacity in zone `usize`.
    Spot(usize),
    /// On-demand capacity.
    OnDemand,
}

/// What to run on next.
pub type Decision = Mode;

/// The job as a policy sees it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct JobState {
    /// Total work, seconds of compute.
    pub work_s: f64,
    /// Work done.
    pub done_s: f64,
    /// Time since the job was submitted.
    pub elapsed_s: f64,
    /// Deadline, seconds after submission.
    pub deadline_s: f64,
    /// Time lost when starting a new instance (launch, setup, checkpoint restore).
    pub changeover_s: f64,
    /// What it runs on now.
    pub mode: Mode,
}

impl JobState {
    /// Work left.
    pub fn remaining_s(&self) -> f64 {
        (self.work_s - self.done_s).max(0.0)
    }

    /// Time left before the deadline minus work left.
    pub fn slack_s(&self) -> f64 {
        self.deadline_s - self.elapsed_s - self.remaining_s()
    }
}

/// Observed availability of one zone, updated tick by tick (what a controller learns by polling).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct ZoneStats {
    /// Ticks observed.
    pub ticks: u64,
    /// Ticks with spot available.
    pub available_ticks: u64,
    /// Completed runs of availability and their total length in ticks.
    pub up_runs: u64,
    /// Sum of completed availability run lengths, ticks.
    pub up_ticks: u64,
    /// Completed outages.
    pub down_runs: u64,
    /// Sum of completed outage lengths, ticks.
    pub down_ticks: u64,
    /// Length of the current run, ticks.
    pub current_run: u64,
    /// Whether the current run is an availability run.
    pub current_up: bool,
}

impl ZoneStats {
    /// Records one tick.
    pub fn observe(&mut self, available: bool) {
        if self.ticks > 0 && available != self.current_up {
            if self.current_up {
                self.up_runs += 1;
                self.up_ticks += self.current_run;
            } else {
                self.down_runs += 1;
                self.down_ticks += self.current_run;
            }
            self.current_run = 0;
        }
        self.ticks += 1;
        self.available_ticks += u64::from(available);
        self.current_up = available;
        self.current_run += 1;
    }

    /// Mean length of an availability run in ticks, with a prior of `prior` ticks weighted as one run.
    pub fn mean_up(&self, prior: f64) -> f64 {
        (self.up_ticks as f64 + prior) / (self.up_runs as f64 + 1.0)
    }

    /// Share of ticks available so far (0.5 before any observation).
    pub fn availability(&self) -> f64 {
        if self.ticks == 0 { 0.5 } else { self.available_ticks as f64 / self.ticks as f64 }
    }
}

/// What the market looks like now.
#[derive(Debug, Clone, Copy)]
pub struct MarketView<'a> {
    /// Spot availability per zone at this tick.
    pub available: &'a [bool],
    /// What the policy has learned about each zone so far.
    pub stats: &'a [ZoneStats],
    /// On-demand price ÷ spot price.
    pub price_ratio: f64,
    /// Seconds between decisions.
    pub tick_s: f64,
}

/// A deadline-aware spot policy.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "name")]
pub enum Policy {
    /// On-demand all the time.
    OnDemand,
    /// Spot whenever available, idle otherwise; on-demand only when the deadline forces it.
    Greedy,
    /// Can't Be Late's Uniform Progress: keep progress at or above C·t/R, with hysteresis.
    UniformProgress,
    /// gpubroker's policy: spend the slack evenly over the outages still expected (work left ÷
    /// the mean spot run observed so far); wait out an outage while it is younger than its share,
    /// bridge it with on-demand once it is older (long outages tend to stay long), and return to
    /// spot when it is back and the slack allows; pick the zone with the best observed record.
    Gpubroker {
        /// Multiplier of each outage's share of the slack (1 = spend it all evenly).
        reserve: f64,
    },
}

/// The reserve found best on the Can't Be Late traces (docs/backtest.md shows the sweep).
pub const DEFAULT_RESERVE: f64 = 1.0;

impl Policy {
    /// The default gpubroker policy.
    pub const GPUBROKER: Policy = Policy::Gpubroker { reserve: DEFAULT_RESERVE };

    /// The name used on the command line and in reports.
    pub fn name(&self) -> &'static str {
        match self {
            Policy::OnDemand => "on-demand",
            Policy::Greedy => "greedy",
            Policy::UniformProgress => "uniform-progress",
            Policy::Gpubroker { .. } => "gpubroker",
        }
    }

    /// Parses a policy name.
    pub fn parse(name: &str) -> Option<Policy> {
        match name.trim() {
            "on-demand" | "on_demand" | "ondemand" => Some(Policy::OnDemand),
            "greedy" => Some(Policy::Greedy),
            "uniform-progress" | "uniform_progress" | "up" => Some(Policy::UniformProgress),
            "gpubroker" => Some(Policy::GPUBROKER),
            _ => None,
        }
    }

    /// What to run on at this decision point.
    pub fn decide(&self, job: &JobState, market: &MarketView<'_>) -> Decision {
        let d = job.changeover_s;
        let slack = job.slack_s();
        let safety = 2.0 * d + market.tick_s;
        if *self == Policy::OnDemand || slack < safety {
            return Mode::OnDemand;
        }
        let spot_here = match job.mode {
            Mode::Spot(z) if market.available.get(z).copied().unwrap_or(false) => Some(z),
            _ => None,
        };
        match self {
            Policy::OnDemand => Mode::OnDemand,
            Policy::Greedy => {
                if job.mode == Mode::OnDemand {
                    return Mode::OnDemand;
                }
                match spot_here.or_else(|| first_available(market)) {
                    Some(z) => Mode::Spot(z),
                    None => Mode::Idle,
                }
            }
            Policy::UniformProgress => {
                let expected = |t: f64| t * job.work_s / job.deadline_s;
                if let Some(z) = spot_here {
                    return Mode::Spot(z);
                }
                let available = first_available(market);
                if job.mode == Mode::OnDemand {
                    // Hysteresis: leave on-demand only when ahead of the pace 2 changeovers from now.
                    return match available {
                        Some(z) if job.done_s >= expected(job.elapsed_s + 2.0 * d) => Mode::Spot(z),
                        _ => Mode::OnDemand,
                    };
                }
                match available {
                    Some(z) => Mode::Spot(z),
                    None if job.done_s < expected(job.elapsed_s) => Mode::OnDemand,
                    None => Mode::Idle,
                }
            }
            Policy::Gpubroker { reserve } => {
                if let Some(z) = spot_here {
                    return Mode::Spot(z);
                }
                let g = market.tick_s;
                // Expected number of outages still ahead: work left divided by the mean spot run
                // observed so far (prior: 6 h runs), at least one.
                let mean_up_s = market.stats.iter().map(|s| s.mean_up(6.0 * 3600.0 / g)).fold(0.0, f64::max) * g;
                let outages_ahead = (job.remaining_s() / mean_up_s.max(g)).max(1.0);
                // When the slack cannot pay two changeovers per outage ahead, bridging outages
                // with on-demand is unaffordable and pacing wins: act as Uniform Progress.
                if (slack - safety).max(0.0) / outages_ahead < d {
                    return Policy::UniformProgress.decide(job, market);
                }
                // Slack we may spend waiting out each of them. With slack to spare (relative to the
                // work left) waiting is cheap, so outages get more than an even share; with little,
                // less (tuned on the 2-week Can't Be Late traces, checked on the 2-month ones).
                let spare = (slack / job.remaining_s().max(1.0)).min(1.0);
                let budget = (slack - safety).max(0.0) / outages_ahead * reserve * (0.5 + 1.5 * spare);
                let best = best_available(market);
                match job.mode {
                    Mode::OnDemand => {
                        // Back to spot when a preemption right after would still leave the
                        // per-outage budget intact, and spot runs repay the changeover.
                        let break_even = market.price_ratio * d / (market.price_ratio - 1.0).max(1e-9);
                        match best {
                            Some(z) if mean_up_s > break_even && slack - 2.0 * d >= safety => Mode::Spot(z),
                            _ => Mode::OnDemand,
                        }
                    }
                    _ => match best {
                        Some(z) => Mode::Spot(z),
                        None => {
                            // How long spot has been gone (in every zone).
                            let outage_s = market
                                .stats
                                .iter()
                                .map(|s| if s.current_up { 0 } else { s.current_run })
                                .min()
                                .unwrap_or(0) as f64
                                * g;
                            if outage_s >= budget { Mode::OnDemand } else { Mode::Idle }
                        }
                    },
                }
            }
        }
    }
}

fn first_available(market: &MarketView<'_>) -> Option<usize> {
    market.available.iter().position(|a| *a)
}

/// The available zone whose spot has been up the largest share of the time so far.
fn best_available(market: &MarketView<'_>) -> Option<usize> {
    market
        .available
        .iter()
        .enumerate()
        .filter(|(_, a)| **a)
        .max_by(|(i, _), (j, _)| {
            let a = market.stats.get(*i).map(ZoneStats::availability).unwrap_or(0.5);
            let b = market.stats.get(*j).map(ZoneStats::availability).unwrap_or(0.5);
            a.total_cmp(&b).then(j.cmp(i))
        })
        .map(|(i, _)| i)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(done_h: f64, elapsed_h: f64, mode: Mode) -> JobState {
        JobState {
            work_s: 48.0 * 3600.0,
            done_s: done_h * 3600.0,
            elapsed_s: elapsed_h * 3600.0,
            deadline_s: 60.0 * 3600.0,
            changeover_s: 720.0,
            mode,
        }
    }

    fn market<'a>(available: &'a [bool], stats: &'a [ZoneStats]) -> MarketView<'a> {
        MarketView { available, stats, price_ratio: 3.06 / 0.9731, tick_s: 600.0 }
    }

    #[test]
    fn safety_net_forces_on_demand_for_every_policy() {
        // 48 h of work, 12 h slack, all spent: only on-demand can still finish.
        let j = job(10.0, 21.9, Mode::Idle);
        let stats = [ZoneStats::default()];
        for p in [Policy::Greedy, Policy::UniformProgress, Policy::GPUBROKER] {
            assert_eq!(p.decide(&j, &market(&[true], &stats)), Mode::OnDemand, "{}", p.name());
        }
    }

    #[test]
    fn greedy_waits_and_uniform_progress_catches_up() {
        let stats = [ZoneStats::default()];
        // Behind the uniform pace (10 h done at 20 h: the pace is 16 h), 2 h of slack left.
        let j = job(10.0, 20.0, Mode::Idle);
        assert_eq!(Policy::Greedy.decide(&j, &market(&[false], &stats)), Mode::Idle);
        assert_eq!(Policy::UniformProgress.decide(&j, &market(&[false], &stats)), Mode::OnDemand);
        assert_eq!(Policy::UniformProgress.decide(&j, &market(&[true], &stats)), Mode::Spot(0));
    }

    #[test]
    fn zone_stats_track_runs() {
        let mut s = ZoneStats::default();
        for a in [true, true, false, false, false, true] {
            s.observe(a);
        }
        assert_eq!((s.up_runs, s.up_ticks, s.down_runs, s.down_ticks), (1, 2, 1, 3));
        assert!((s.availability() - 0.5).abs() < 1e-9);
    }
}
