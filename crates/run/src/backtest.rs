//! Trace-driven backtests of spot policies (the Can't Be Late setup, §6.1).
//!
//! A job needs `job_hours` of compute by `deadline_hours`. Spot costs `spot_price`/h and is
//! available when the trace says so; on-demand costs `on_demand_price`/h and is always there.
//! Starting an instance (or moving zones) costs `changeover_hours` of paid time without progress.
//! Progress survives preemption (checkpoints). Decisions are taken once per trace tick, from what
//! the trace shows at that tick; billing is per second.
//!
//! The omniscient lower bound is a dynamic program over (tick, progress, mode) with the whole
//! trace known. Progress is counted in quarter ticks and the changeover is rounded *down* to
//! them, so the bound is never above the true optimum.

use serde::Serialize;

use crate::policy::{JobState, MarketView, Mode, Policy, ZoneStats};
use crate::trace::SpotTrace;

/// One backtest setup.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BacktestConfig {
    /// Compute the job needs, hours.
    pub job_hours: f64,
    /// Deadline after submission, hours.
    pub deadline_hours: f64,
    /// Paid time without progress when an instance starts, hours.
    pub changeover_hours: f64,
    /// On-demand price per hour.
    pub on_demand_price: f64,
    /// Spot price per hour.
    pub spot_price: f64,
    /// Random start offsets per scenario.
    pub starts: usize,
    /// Seed of the start offsets.
    pub seed: u64,
    /// Nodes of a gang job (a tick is available only if this many instances are).
    pub nodes: u32,
}

/// The outcome of one run.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct RunOutcome {
    /// Money spent.
    pub cost: f64,
    /// Hours billed on spot.
    pub spot_hours: f64,
    /// Hours billed on on-demand.
    pub on_demand_hours: f64,
    /// Hours from submission to completion.
    pub finished_hours: f64,
    /// Whether it finished after the deadline.
    pub missed: bool,
}

/// Errors in a backtest setup.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct BacktestError(pub String);

impl BacktestConfig {
    /// Checks ranges.
    pub fn validate(&self) -> Result<(), BacktestError> {
        let e = |m: String| Err(BacktestError(m));
        if !(self.job_hours > 0.0 && self.job_hours <= 24.0 * 365.0) {
            return e(format!("--job-hours {} must be between 0 and 8760", self.job_hours));
        }
        if !(self.deadline_hours >= self.job_hours && self.deadline_hours <= 24.0 * 365.0 * 2.0) {
            return e(format!(
                "--deadline-hours {} must be at least --job-hours {}",
                self.deadline_hours, self.job_hours
            ));
        }
        if !(self.changeover_hours >= 0.0 && self.changeover_hours * 2.0 < self.deadline_hours - self.job_hours + 1e-9
            || self.changeover_hours == 0.0)
        {
            return e(format!(
                "--changeover-hours {} leaves no room: the deadline must allow at least two changeovers of slack",
                self.changeover_hours
            ));
        }
        if !(self.on_demand_price > 0.0 && self.spot_price > 0.0 && self.spot_price < self.on_demand_price) {
            return e("prices must be > 0 and spot cheaper than on-demand".into());
        }
        if self.starts == 0 || self.starts > 1_000_000 {
            return e(format!("--starts {} must be between 1 and 1000000", self.starts));
        }
        if self.nodes == 0 {
            return e("--nodes must be at least 1".into());
        }
        Ok(())
    }

    /// What running the whole job on on-demand costs (one changeover, then the work).
    pub fn on_demand_cost(&self) -> f64 {
        (self.job_hours + self.changeover_hours) * self.on_demand_price
    }
}

/// Zones of one scenario: availability per tick, all on the same tick length.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// Name (trace names joined).
    pub name: String,
    /// Seconds per tick.
    pub tick_s: f64,
    /// Availability per zone per tick.
    pub zones: Vec<Vec<bool>>,
}

impl Scenario {
    /// One scenario per trace (`--zones-mode each`) or one with every trace as a zone (`any`).
    /// In `any` mode the traces must share a tick length; they are cut to the shortest.
    pub fn build(traces: &[SpotTrace], nodes: u32, any: bool) -> Result<Vec<Scenario>, BacktestError> {
        if traces.is_empty() {
            return Err(BacktestError("no traces".into()));
        }
        if !any {
            return Ok(traces
                .iter()
                .map(|t| Scenario { name: t.name.clone(), tick_s: t.gap_s as f64, zones: vec![t.available(nodes)] })
                .collect());
        }
        let gap = traces[0].gap_s;
        if let Some(t) = traces.iter().find(|t| t.gap_s != gap) {
            return Err(BacktestError(format!(
                "--zones-mode any needs traces with one tick length: {} has {} s, {} has {} s",
                traces[0].name, gap, t.name, t.gap_s
            )));
        }
        let len = traces.iter().map(|t| t.counts.len()).min().unwrap_or(0);
        Ok(vec![Scenario {
            name: traces.iter().map(|t| t.name.as_str()).collect::<Vec<_>>().join("+"),
            tick_s: gap as f64,
            zones: traces.iter().map(|t| t.available(nodes)[..len].to_vec()).collect(),
        }])
    }

    fn len(&self) -> usize {
        self.zones.first().map(Vec::len).unwrap_or(0)
    }

    fn available_at(&self, tick: usize, out: &mut Vec<bool>) {
        out.clear();
        let n = self.len().max(1);
        out.extend(self.zones.iter().map(|z| z[tick % n]));
    }
}

/// Runs `policy` from tick `start` (the trace wraps around at its end).
pub fn simulate(policy: &Policy, scenario: &Scenario, start: usize, cfg: &BacktestConfig) -> RunOutcome {
    let g = scenario.tick_s;
    let d = cfg.changeover_hours * 3600.0;
    let mut job = JobState {
        work_s: cfg.job_hours * 3600.0,
        done_s: 0.0,
        elapsed_s: 0.0,
        deadline_s: cfg.deadline_hours * 3600.0,
        changeover_s: d,
        mode: Mode::Idle,
    };
    let mut stats = vec![ZoneStats::default(); scenario.zones.len()];
    let mut available = Vec::with_capacity(scenario.zones.len());
    let (mut changeover_left, mut cost, mut spot_s, mut od_s) = (0.0f64, 0.0f64, 0.0f64, 0.0f64);
    let ratio = cfg.on_demand_price / cfg.spot_price;
    let mut tick = start;
    // A policy that never finishes would loop forever; on-demand always finishes within
    // deadline + work, so stop well after that.
    let give_up = job.deadline_s + 2.0 * job.work_s + 10.0 * g;
    while job.done_s < job.work_s - 1e-9 && job.elapsed_s < give_up {
        scenario.available_at(tick, &mut available);
        for (s, a) in stats.iter_mut().zip(&available) {
            s.observe(*a);
        }
        if let Mode::Spot(z) = job.mode
            && !available[z]
        {
            job.mode = Mode::Idle; // preempted
        }
        let market = MarketView { available: &available, stats: &stats, price_ratio: ratio, tick_s: g };
        let mut decision = policy.decide(&job, &market);
        if let Mode::Spot(z) = decision
            && !available.get(z).copied().unwrap_or(false)
        {
            decision = Mode::Idle;
        }
        if decision != job.mode {
            changeover_left = if decision == Mode::Idle { 0.0 } else { d };
            job.mode = decision;
        }
        let advanced = match job.mode {
            Mode::Idle => g,
            active => {
                let cover = changeover_left.min(g);
                changeover_left -= cover;
                let work = (g - cover).min(job.work_s - job.done_s);
                job.done_s += work;
                let used = cover + work;
                let price = if active == Mode::OnDemand { cfg.on_demand_price } else { cfg.spot_price };
                cost += price * used / 3600.0;
                if active == Mode::OnDemand {
                    od_s += used;
                } else {
                    spot_s += used;
                }
                if job.done_s >= job.work_s - 1e-9 { used } else { g }
            }
        };
        job.elapsed_s += advanced;
        tick += 1;
    }
    RunOutcome {
        cost,
        spot_hours: spot_s / 3600.0,
        on_demand_hours: od_s / 3600.0,
        finished_hours: job.elapsed_s / 3600.0,
        missed: job.elapsed_s > job.deadline_s + 1e-6 || job.done_s < job.work_s - 1e-9,
    }
}

/// Progress resolution of the omniscient DP: units per tick.
const UNITS_PER_TICK: usize = 4;

/// The cheapest cost of finishing by the deadline with the whole trace known (a lower bound:
/// see the module docs). `None` if even on-demand cannot make it.
pub fn omniscient(scenario: &Scenario, start: usize, cfg: &BacktestConfig) -> Option<f64> {
    let g = scenario.tick_s;
    let q = UNITS_PER_TICK as f64;
    let unit_s = g / q;
    // Work rounds down too: both roundings keep the bound below the true optimum.
    let work = (cfg.job_hours * 3600.0 / unit_s).floor().max(1.0) as usize;
    let changeover = (cfg.changeover_hours * 3600.0 / unit_s).floor() as usize;
    let deadline_s = cfg.deadline_hours * 3600.0;
    let ticks = (deadline_s / g).ceil() as usize;
    let zones = scenario.zones.len();
    // Modes: 0 = idle, 1 = on-demand, 2.. = spot in zone (mode - 2).
    let modes = 2 + zones;
    let price = |m: usize| if m == 1 { cfg.on_demand_price } else { cfg.spot_price };
    let tick_cost = |m: usize| price(m) * g / 3600.0;
    const INF: f64 = f64::INFINITY;
    let mut cur = vec![INF; modes * (work + 1)];
    let mut next = vec![INF; modes * (work + 1)];
    cur[0] = 0.0; // idle, no progress
    let mut best = INF;
    let n = scenario.len().max(1);
    let per_tick = UNITS_PER_TICK;
    for t in 0..ticks {
        next.fill(INF);
        let tick_start_s = t as f64 * g;
        // Reachable progress band: at most t ticks of work done; enough left to finish.
        let hi = (t * per_tick).min(work);
        let lo = work.saturating_sub((ticks - t) * per_tick);
        for p in lo..=hi {
            // Best previous state in any mode, and best excluding each mode (for switching in).
            let mut first = (INF, usize::MAX);
            let mut second = INF;
            for m in 0..modes {
                let c = cur[m * (work + 1) + p];
                if c < first.0 {
                    second = first.0;
                    first = (c, m);
                } else if c < second {
                    second = c;
                }
            }
            if first.0 == INF {
                continue;
            }
            // Idle: free.
            let idx = p;
            if first.0 < next[idx] {
                next[idx] = first.0;
            }
            for m in 1..modes {
                if m >= 2 && !scenario.zones[m - 2][(start + t) % n] {
                    continue;
                }
                let stay = cur[m * (work + 1) + p];
                let switch = if first.1 == m { second } else { first.0 };
                for (prev_cost, is_switch) in [(stay, false), (switch, true)] {
                    if prev_cost == INF {
                        continue;
                    }
                    let lost = if is_switch { changeover } else { 0 };
                    let gain = per_tick as isize - lost as isize;
                    let target = p as isize + gain;
                    if target >= work as isize {
                        // Finishes inside this tick: pay only for the units used.
                        let used_units = (work - p) + lost;
                        let end_s = tick_start_s + used_units as f64 * unit_s;
                        if end_s <= deadline_s + 1e-6 {
                            let c = prev_cost + price(m) * used_units as f64 * unit_s / 3600.0;
                            best = best.min(c);
                        }
                        continue;
                    }
                    let np = target.max(0) as usize;
                    let c = prev_cost + tick_cost(m);
                    let slot = &mut next[m * (work + 1) + np];
                    if c < *slot {
                        *slot = c;
                    }
                }
            }
        }
        std::mem::swap(&mut cur, &mut next);
    }
    best.is_finite().then_some(best)
}

/// Aggregates of one policy over every scenario and start.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PolicySummary {
    /// Policy name.
    pub name: String,
    /// Runs.
    pub runs: usize,
    /// Mean cost per run.
    pub mean_cost: f64,
    /// Mean of cost ÷ all-on-demand cost.
    pub mean_cost_vs_on_demand: f64,
    /// Mean of (cost − omniscient) ÷ omniscient, when the omniscient bound was computed.
    pub mean_gap_vs_omniscient: Option<f64>,
    /// 75th percentile of cost.
    pub p75_cost: f64,
    /// Mean hours on spot.
    pub mean_spot_hours: f64,
    /// Mean hours on on-demand.
    pub mean_on_demand_hours: f64,
    /// Runs that finished after the deadline.
    pub deadline_misses: usize,
}

/// The report of a backtest.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BacktestReport {
    /// The setup.
    pub config: BacktestConfig,
    /// Scenarios replayed.
    pub scenarios: Vec<String>,
    /// All-on-demand cost of the job.
    pub on_demand_cost: f64,
    /// One summary per policy, in the order asked (`omniscient` included when asked).
    pub policies: Vec<PolicySummary>,
}

/// A policy to backtest, or the omniscient bound.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Contender {
    /// An online policy.
    Online(Policy),
    /// The omniscient lower bound.
    Omniscient,
}

impl Contender {
    /// Parses a name.
    pub fn parse(name: &str) -> Option<Contender> {
        if name.trim() == "omniscient" {
            Some(Contender::Omniscient)
        } else {
            Policy::parse(name).map(Contender::Online)
        }
    }

    /// The name.
    pub fn name(&self) -> &'static str {
        match self {
            Contender::Online(p) => p.name(),
            Contender::Omniscient => "omniscient",
        }
    }
}

/// Replays every contender from `cfg.starts` random offsets of each scenario. The omniscient
/// bound is computed whenever gaps are wanted (`with_gap`) or asked for.
pub fn run(scenarios: &[Scenario], contenders: &[Contender], cfg: &BacktestConfig, with_gap: bool) -> BacktestReport {
    let mut rng = fastrand::Rng::with_seed(cfg.seed);
    let od_cost = cfg.on_demand_cost();
    let need_opt = with_gap || contenders.contains(&Contender::Omniscient);
    // Draw every start first so the result does not depend on how the work is split.
    let jobs: Vec<(usize, usize)> = scenarios
        .iter()
        .enumerate()
        .flat_map(|(i, s)| {
            let len = s.len().max(1);
            (0..cfg.starts).map(|_| (i, rng.usize(0..len))).collect::<Vec<_>>()
        })
        .collect();
    // Each run is independent: spread them over the cores (the omniscient DP dominates).
    let threads = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1).clamp(1, 8);
    let chunk = jobs.len().div_ceil(threads).max(1);
    let per_run: Vec<(Vec<RunOutcome>, Option<f64>)> = std::thread::scope(|scope| {
        let handles: Vec<_> = jobs
            .chunks(chunk)
            .map(|part| {
                scope.spawn(move || {
                    part.iter()
                        .map(|&(si, start)| {
                            let scenario = &scenarios[si];
                            let opt = if need_opt { omniscient(scenario, start, cfg) } else { None };
                            let outcomes = contenders
                                .iter()
                                .map(|c| match c {
                                    Contender::Online(p) => simulate(p, scenario, start, cfg),
                                    Contender::Omniscient => match opt {
                                        Some(cost) => RunOutcome {
                                            cost,
                                            spot_hours: f64::NAN,
                                            on_demand_hours: f64::NAN,
                                            finished_hours: cfg.deadline_hours,
                                            missed: false,
                                        },
                                        None => RunOutcome {
                                            cost: od_cost,
                                            spot_hours: 0.0,
                                            on_demand_hours: cfg.job_hours,
                                            finished_hours: cfg.deadline_hours,
                                            missed: true,
                                        },
                                    },
                                })
                                .collect();
                            (outcomes, opt)
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles.into_iter().flat_map(|h| h.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))).collect()
    });
    let mut results: Vec<Vec<RunOutcome>> = vec![Vec::with_capacity(jobs.len()); contenders.len()];
    let mut gaps: Vec<Vec<f64>> = vec![Vec::new(); contenders.len()];
    for (outcomes, opt) in per_run {
        for (i, outcome) in outcomes.into_iter().enumerate() {
            if let Some(o) = opt
                && o > 0.0
            {
                gaps[i].push((outcome.cost - o) / o);
            }
            results[i].push(outcome);
        }
    }
    let policies = contenders
        .iter()
        .zip(results.iter().zip(&gaps))
        .map(|(c, (runs, gap))| summarize(c.name(), runs, gap, od_cost, need_opt))
        .collect();
    BacktestReport {
        config: cfg.clone(),
        scenarios: scenarios.iter().map(|s| s.name.clone()).collect(),
        on_demand_cost: od_cost,
        policies,
    }
}

fn summarize(name: &str, runs: &[RunOutcome], gaps: &[f64], od_cost: f64, with_gap: bool) -> PolicySummary {
    let n = runs.len().max(1) as f64;
    let mut costs: Vec<f64> = runs.iter().map(|r| r.cost).collect();
    costs.sort_by(f64::total_cmp);
    let p75 = costs.get(((costs.len() as f64 * 0.75).ceil() as usize).saturating_sub(1)).copied().unwrap_or(0.0);
    let mean = |f: &dyn Fn(&RunOutcome) -> f64| {
        let v: Vec<f64> = runs.iter().map(f).filter(|x| x.is_finite()).collect();
        if v.is_empty() { f64::NAN } else { v.iter().sum::<f64>() / n }
    };
    PolicySummary {
        name: name.to_string(),
        runs: runs.len(),
        mean_cost: mean(&|r| r.cost),
        mean_cost_vs_on_demand: mean(&|r| r.cost / od_cost),
        mean_gap_vs_omniscient: (with_gap && !gaps.is_empty()).then(|| gaps.iter().sum::<f64>() / gaps.len() as f64),
        p75_cost: p75,
        mean_spot_hours: mean(&|r| r.spot_hours),
        mean_on_demand_hours: mean(&|r| r.on_demand_hours),
        deadline_misses: runs.iter().filter(|r| r.missed).count(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn cfg(job: f64, deadline: f64, d: f64) -> BacktestConfig {
        BacktestConfig {
            job_hours: job,
            deadline_hours: deadline,
            changeover_hours: d,
            on_demand_price: 3.06,
            spot_price: 0.9731,
            starts: 1,
            seed: 1,
            nodes: 1,
        }
    }

    fn scenario(avail: Vec<bool>) -> Scenario {
        Scenario { name: "t".into(), tick_s: 600.0, zones: vec![avail] }
    }

    #[test]
    fn always_available_spot_costs_spot_price() {
        let s = scenario(vec![true; 1000]);
        let c = cfg(10.0, 20.0, 0.2);
        let r = simulate(&Policy::Greedy, &s, 0, &c);
        assert!(!r.missed);
        assert!((r.cost - 10.2 * 0.9731).abs() < 1e-6, "{r:?}");
        let opt = omniscient(&s, 0, &c).unwrap();
        assert!(opt <= r.cost + 1e-9 && opt > 10.0 * 0.9731 - 1e-9, "{opt}");
    }

    #[test]
    fn never_available_spot_falls_back_to_on_demand_in_time() {
        let s = scenario(vec![false; 1000]);
        let c = cfg(10.0, 20.0, 0.2);
        for p in [Policy::Greedy, Policy::UniformProgress, Policy::GPUBROKER, Policy::OnDemand] {
            let r = simulate(&p, &s, 0, &c);
            assert!(!r.missed, "{}: {r:?}", p.name());
            assert!((r.on_demand_hours - 10.2).abs() < 1e-6, "{}: {r:?}", p.name());
        }
        let opt = omniscient(&s, 0, &c).unwrap();
        assert!((opt - 10.0 * 3.06).abs() < 3.06 * 0.21, "{opt}");
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

        /// On any availability pattern: no policy misses the deadline, and none beats the
        /// omniscient bound.
        #[test]
        fn no_misses_and_omniscient_is_a_lower_bound(bits in proptest::collection::vec(any::<bool>(), 50..400), job in 2.0f64..10.0, frac in 0.5f64..0.95, d in 0.0f64..0.3) {
            let s = scenario(bits);
            let c = cfg(job, job / frac, d);
            prop_assume!(c.validate().is_ok());
            let opt = omniscient(&s, 0, &c).unwrap();
            for p in [Policy::OnDemand, Policy::Greedy, Policy::UniformProgress, Policy::GPUBROKER] {
                let r = simulate(&p, &s, 0, &c);
                prop_assert!(!r.missed, "{} missed: {:?}", p.name(), r);
                prop_assert!(opt <= r.cost + 1e-6, "{}: omniscient {} > {}", p.name(), opt, r.cost);
                prop_assert!((r.spot_hours * c.spot_price + r.on_demand_hours * c.on_demand_price - r.cost).abs() < 1e-6);
            }
        }
    }
}
