//! The commitment planner: how much of a GPU demand to cover with 1- or 3-year commitments,
//! how much to run on spot, and how much to leave on on-demand, from an hourly demand history.
//!
//! * One instrument, exactly: the cost of committing `c` GPUs for `H` hours is
//!   `H·c·r + p·Σ max(0, u_h − c)`; its minimum sits at the `(1 − r/p)` quantile of the hourly
//!   demand (finops.md §5.3). [`single_instrument`] returns it; a test checks it against a brute
//!   force over every level.
//! * Several instruments (1y and 3y, different rates), with guards: a linear program over the
//!   commitment of each instrument and the demand's distinct levels ([`plan_gpu`]), solved with
//!   good_lp's pure-Rust simplex. Guards: the total is capped by what a short recent window
//!   would commit (so a drop in usage is not locked in for years), a 3-year commitment is capped
//!   by the long-run base load (the demand's 10th percentile), and an optional risk limit
//!   bounds the expected unused commitment.
//! * Interruptible work (the share the task marks so) runs on spot when spot is cheaper than
//!   committing to it.

use good_lp::{Expression, ProblemVariables, Solution, SolverModel, constraint, default_solver, variable};
use gpubroker_core::forecast::SeasonalTrend;
use serde::Serialize;

/// A commitment instrument.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Instrument {
    /// `reserved_1y`, `reserved_3y`, ...
    pub name: String,
    /// Price per committed GPU-hour.
    pub rate: f64,
    /// Cap the commitment at the long-run base load (3-year terms).
    pub long_term: bool,
}

/// Prices for one GPU type.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GpuPrices {
    /// On-demand price per GPU-hour.
    pub on_demand: f64,
    /// Spot price per GPU-hour (with its expected interruption overhead), if any.
    pub spot: Option<f64>,
    /// Commitment instruments.
    pub instruments: Vec<Instrument>,
}

/// Planner settings.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CommitSettings {
    /// Hours of the recent window used to cap commitments (guard against a usage drop).
    pub short_lookback_hours: usize,
    /// Largest expected unused commitment, GPU-hours over the history (None = no limit).
    pub max_unused_gpu_hours: Option<f64>,
    /// Apply the recent-window and long-term caps. Off only for the hindsight optimum, which
    /// knows the demand it is planned for and needs no guard against it changing.
    pub guards: bool,
}

impl Default for CommitSettings {
    fn default() -> Self {
        CommitSettings { short_lookback_hours: 24 * 14, max_unused_gpu_hours: None, guards: true }
    }
}

/// One line of a plan.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Recommendation {
    /// GPU type.
    pub gpu: String,
    /// Instrument (`reserved_1y`, `spot`, `on_demand`).
    pub instrument: String,
    /// GPUs committed every hour (0 for spot and on-demand).
    pub commit_gpus: f64,
    /// GPU-hours this instrument carries over the history.
    pub gpu_hours: f64,
    /// What it costs over the history.
    pub cost: f64,
    /// For a commitment, the utilisation below which it costs more than on-demand
    /// (`rate / on-demand price`); a GPU busy fewer hours than this share is not worth committing.
    pub break_even_utilization: Option<f64>,
}

/// The plan of one GPU type over its history.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GpuPlan {
    /// GPU type.
    pub gpu: String,
    /// Hours of history.
    pub hours: usize,
    /// Lines per instrument.
    pub lines: Vec<Recommendation>,
    /// Cost of the plan over the history.
    pub expected_cost: f64,
    /// Cost of running everything on on-demand.
    pub on_demand_cost: f64,
    /// `1 − expected/on-demand`, percent.
    pub savings_pct: f64,
    /// Share of committed GPU-hours used.
    pub utilization: f64,
    /// Share of (non-interruptible) demand the commitments covered.
    pub coverage: f64,
    /// Share of demand run on spot.
    pub spot_share: f64,
}

/// Cost over `hourly` of committing `c` GPUs at `rate` with the rest on-demand at `od`.
pub fn cost_with_commitment(hourly: &[f64], c: f64, rate: f64, od: f64) -> f64 {
    hourly.iter().map(|u| c * rate + od * (u - c).max(0.0)).sum()
}

/// The optimal commitment for one instrument: the `(1 − rate/od)` quantile of hourly demand
/// (0 when committing never pays).
pub fn single_instrument(hourly: &[f64], rate: f64, od: f64) -> f64 {
    if hourly.is_empty() || rate >= od || rate <= 0.0 {
        return 0.0;
    }
    let mut sorted = hourly.to_vec();
    sorted.sort_by(f64::total_cmp);
    // Committing one more GPU above level c costs rate every hour and saves od in the hours
    // above c: worth it while the share of hours above c exceeds rate/od.
    let n = sorted.len();
    let hours_above_allowed = (n as f64 * rate / od).floor() as usize;
    let index = n.saturating_sub(hours_above_allowed + 1);
    sorted[index].max(0.0)
}

fn quantile(hourly: &[f64], q: f64) -> f64 {
    if hourly.is_empty() {
        return 0.0;
    }
    let mut sorted = hourly.to_vec();
    sorted.sort_by(f64::total_cmp);
    let i = ((sorted.len() - 1) as f64 * q).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

/// Plans one GPU type. `hourly` is GPUs in use per hour; `interruptible` the share that may
/// run on spot.
pub fn plan_gpu(
    gpu: &str,
    hourly: &[f64],
    interruptible: f64,
    prices: &GpuPrices,
    settings: &CommitSettings,
) -> GpuPlan {
    plan_gpu_with_contract(gpu, hourly, interruptible, prices, settings, None)
}

/// [`plan_gpu`] where a commitment + overage contract is on offer too: the plan with the
/// contract (block size chosen jointly with the hourly commitments) or without it, whichever
/// costs less. Signing is a yes/no decision, so the two are solved apart rather than in one LP.
pub fn plan_gpu_with_contract(
    gpu: &str,
    hourly: &[f64],
    interruptible: f64,
    prices: &GpuPrices,
    settings: &CommitSettings,
    contract: Option<&BlockContract>,
) -> GpuPlan {
    let without = plan_gpu_given(gpu, hourly, interruptible, prices, settings, None);
    match contract {
        None => without,
        Some(b) => {
            let with = plan_gpu_given(gpu, hourly, interruptible, prices, settings, Some(b));
            if with.expected_cost < without.expected_cost { with } else { without }
        }
    }
}

fn plan_gpu_given(
    gpu: &str,
    hourly: &[f64],
    interruptible: f64,
    prices: &GpuPrices,
    settings: &CommitSettings,
    block: Option<&BlockContract>,
) -> GpuPlan {
    let hours = hourly.len();
    let od = prices.on_demand;
    let total_demand: f64 = hourly.iter().sum();
    let on_demand_cost = od * total_demand;
    // Interruptible work goes to spot when spot beats the cheapest commitment.
    let cheapest_commit = prices.instruments.iter().map(|i| i.rate).fold(f64::INFINITY, f64::min);
    let spot_share = match prices.spot {
        Some(s) if s < cheapest_commit.min(od) => interruptible.clamp(0.0, 1.0),
        _ => 0.0,
    };
    let base: Vec<f64> = hourly.iter().map(|u| u * (1.0 - spot_share)).collect();
    let spot_hours = total_demand * spot_share;
    let spot_cost = spot_hours * prices.spot.unwrap_or(od);
    let (commits, block_size) = solve(&base, prices, settings, block);
    let committed: f64 = commits.iter().sum();
    let covered: f64 = base.iter().map(|u| u.min(committed)).sum();
    let over: f64 = base.iter().map(|u| (u - committed).max(0.0)).sum();
    let mut lines = Vec::new();
    let mut expected = spot_cost;
    // What the hourly commitments leave: on-demand, or the contract's block and overage.
    let (on_demand_hours, block_line, overage_line) = match block {
        None => (over, None, None),
        Some(b) => {
            let mut block_cost = 0.0;
            let mut beyond = 0.0;
            let mut in_block = 0.0;
            for month in base.chunks(HOURS_PER_MONTH as usize) {
                let weight = month.len() as f64 / HOURS_PER_MONTH;
                let residual: f64 = month.iter().map(|u| (u - committed).max(0.0)).sum();
                block_cost += b.rate * weight * block_size;
                beyond += (residual - weight * block_size).max(0.0);
                in_block += residual.min(weight * block_size);
            }
            expected += block_cost + beyond * b.overage;
            let block_line = Recommendation {
                gpu: gpu.into(),
                instrument: b.name.clone(),
                commit_gpus: block_size / HOURS_PER_MONTH,
                gpu_hours: in_block,
                cost: block_cost,
                break_even_utilization: Some(b.rate / b.overage.min(od)),
            };
            let overage_line = (beyond > 0.0).then(|| Recommendation {
                gpu: gpu.into(),
                instrument: format!("{}_overage", b.name),
                commit_gpus: 0.0,
                gpu_hours: beyond,
                cost: beyond * b.overage,
                break_even_utilization: None,
            });
            (0.0, Some(block_line), overage_line)
        }
    };
    expected += on_demand_hours * od;
    for (inst, c) in prices.instruments.iter().zip(&commits) {
        if *c > 1e-9 {
            let cost = c * inst.rate * hours as f64;
            expected += cost;
            lines.push(Recommendation {
                gpu: gpu.into(),
                instrument: inst.name.clone(),
                commit_gpus: *c,
                gpu_hours: c * hours as f64,
                cost,
                break_even_utilization: Some(inst.rate / od),
            });
        }
    }
    if spot_hours > 0.0 {
        lines.push(Recommendation {
            gpu: gpu.into(),
            instrument: "spot".into(),
            commit_gpus: 0.0,
            gpu_hours: spot_hours,
            cost: spot_cost,
            break_even_utilization: None,
        });
    }
    lines.extend(block_line);
    lines.extend(overage_line);
    if on_demand_hours > 0.0 {
        lines.push(Recommendation {
            gpu: gpu.into(),
            instrument: "on_demand".into(),
            commit_gpus: 0.0,
            gpu_hours: on_demand_hours,
            cost: on_demand_hours * od,
            break_even_utilization: None,
        });
    }
    let committed_hours = committed * hours as f64;
    let base_total: f64 = base.iter().sum();
    GpuPlan {
        gpu: gpu.into(),
        hours,
        lines,
        expected_cost: expected,
        on_demand_cost,
        savings_pct: if on_demand_cost > 0.0 { (1.0 - expected / on_demand_cost) * 100.0 } else { 0.0 },
        utilization: if committed_hours > 0.0 { covered / committed_hours } else { 1.0 },
        coverage: if base_total > 0.0 { covered / base_total } else { 1.0 },
        spot_share,
    }
}

/// Hours in a billing month of a block contract (365 × 24 / 12).
pub const HOURS_PER_MONTH: f64 = 730.0;

/// A commitment + overage contract: at least `min_gpu_hours` GPU-hours a month paid at `rate`
/// whether used or not, every GPU-hour beyond the block at `overage` (the provider's negotiated
/// rate, instead of on-demand). Unlike an hourly reservation the block is pooled over the month.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BlockContract {
    /// Name shown on the plan line.
    pub name: String,
    /// Price per GPU-hour of the block.
    pub rate: f64,
    /// Price per GPU-hour beyond the block.
    pub overage: f64,
    /// Smallest block the provider sells, GPU-hours per month.
    pub min_gpu_hours: f64,
}

/// Distinct demand levels with their hour counts (the cost ignores the order of hours).
fn levels_of(hours: &[f64]) -> Vec<(f64, f64)> {
    let mut levels: Vec<(f64, f64)> = Vec::new();
    let mut sorted = hours.to_vec();
    sorted.sort_by(f64::total_cmp);
    for u in sorted {
        match levels.last_mut() {
            Some((v, count)) if (*v - u).abs() < 1e-9 => *count += 1.0,
            _ => levels.push((u, 1.0)),
        }
    }
    levels
}

/// The commitment per instrument (and the monthly block, with a contract): a linear program
/// over the demand's distinct levels. Without a contract the levels of the whole history
/// suffice; a block is pooled per month, so with one the levels are taken month by month.
fn solve(
    base: &[f64],
    prices: &GpuPrices,
    settings: &CommitSettings,
    block: Option<&BlockContract>,
) -> (Vec<f64>, f64) {
    let n = prices.instruments.len();
    if base.is_empty() || (n == 0 && block.is_none()) {
        return (vec![0.0; n], 0.0);
    }
    // (weight in months, levels) per group.
    let groups: Vec<(f64, Vec<(f64, f64)>)> = match block {
        None => vec![(base.len() as f64 / HOURS_PER_MONTH, levels_of(base))],
        Some(_) => {
            base.chunks(HOURS_PER_MONTH as usize).map(|m| (m.len() as f64 / HOURS_PER_MONTH, levels_of(m))).collect()
        }
    };
    let hours = base.len() as f64;
    let recent = &base[base.len().saturating_sub(settings.short_lookback_hours.max(1))..];
    let cheapest = prices.instruments.iter().map(|i| i.rate).fold(f64::INFINITY, f64::min);
    // Guard: never commit more in total than the recent window alone would justify.
    let peak = base.iter().copied().fold(0.0, f64::max);
    let (recent_cap, long_base) = if settings.guards && n > 0 {
        (single_instrument(recent, cheapest, prices.on_demand), quantile(base, 0.10))
    } else {
        (peak, peak)
    };
    let mut vars = ProblemVariables::new();
    let c: Vec<_> = prices
        .instruments
        .iter()
        .map(|i| vars.add(variable().min(0.0).max(if i.long_term { long_base.min(recent_cap) } else { recent_cap })))
        .collect();
    let over: Vec<Vec<_>> =
        groups.iter().map(|(_, l)| l.iter().map(|_| vars.add(variable().min(0.0))).collect()).collect();
    let unused: Vec<Vec<_>> =
        groups.iter().map(|(_, l)| l.iter().map(|_| vars.add(variable().min(0.0))).collect()).collect();
    let total: Expression = c.iter().copied().sum();
    let mut objective = Expression::from(0.0);
    for (i, inst) in prices.instruments.iter().enumerate() {
        objective += inst.rate * hours * c[i];
    }
    // With a contract, the block (GPU-hours a month) and each month's GPU-hours beyond it.
    let block_vars = block.map(|b| {
        let size = vars.add(variable().min(b.min_gpu_hours));
        let beyond: Vec<_> = groups.iter().map(|_| vars.add(variable().min(0.0))).collect();
        (b, size, beyond)
    });
    for (g, (weight, levels)) in groups.iter().enumerate() {
        let residual: Expression = levels.iter().enumerate().map(|(k, (_, count))| *count * over[g][k]).sum();
        match &block_vars {
            None => objective += prices.on_demand * residual,
            Some((b, size, beyond)) => {
                objective += b.rate * *weight * *size + b.overage * beyond[g];
            }
        }
    }
    let mut model = vars.minimise(objective).using(default_solver);
    for (g, (weight, levels)) in groups.iter().enumerate() {
        for (k, (u, _)) in levels.iter().enumerate() {
            model = model.with(constraint!(over[g][k] >= *u - total.clone()));
            model = model.with(constraint!(unused[g][k] >= total.clone() - *u));
        }
        if let Some((_, size, beyond)) = &block_vars {
            let residual: Expression = levels.iter().enumerate().map(|(k, (_, count))| *count * over[g][k]).sum();
            model = model.with(constraint!(beyond[g] >= residual - *weight * *size));
        }
    }
    if n > 0 {
        model = model.with(constraint!(total.clone() <= recent_cap));
    }
    if let Some(limit) = settings.max_unused_gpu_hours {
        let expected_unused: Expression = groups
            .iter()
            .enumerate()
            .flat_map(|(g, (_, levels))| levels.iter().enumerate().map(move |(k, (_, count))| (g, k, *count)))
            .map(|(g, k, count)| count * unused[g][k])
            .sum();
        model = model.with(constraint!(expected_unused <= limit));
    }
    match model.solve() {
        Ok(solution) => (
            c.iter().map(|v| solution.value(*v).max(0.0)).collect(),
            block_vars.map(|(_, size, _)| solution.value(size).max(0.0)).unwrap_or(0.0),
        ),
        Err(_) => (vec![0.0; n], block.map(|b| b.min_gpu_hours).unwrap_or(0.0)),
    }
}

/// What a plan's commitments (its hourly levels and contract block, fixed when it was made)
/// cost on other demand `hourly`: the backtest's held-out evaluation.
pub fn cost_of_plan_on(plan: &GpuPlan, hourly: &[f64], prices: &GpuPrices, contract: Option<&BlockContract>) -> f64 {
    let od = prices.on_demand;
    let total: f64 = hourly.iter().sum();
    let spot = total * plan.spot_share * prices.spot.unwrap_or(od);
    let base: Vec<f64> = hourly.iter().map(|u| u * (1.0 - plan.spot_share)).collect();
    let mut cost = spot;
    let mut committed = 0.0;
    for line in &plan.lines {
        if let Some(inst) = prices.instruments.iter().find(|i| i.name == line.instrument) {
            committed += line.commit_gpus;
            cost += line.commit_gpus * inst.rate * hourly.len() as f64;
        }
    }
    let block = contract
        .and_then(|b| plan.lines.iter().find(|l| l.instrument == b.name).map(|l| (b, l.commit_gpus * HOURS_PER_MONTH)));
    for month in base.chunks(HOURS_PER_MONTH as usize) {
        let residual: f64 = month.iter().map(|u| (u - committed).max(0.0)).sum();
        match block {
            None => cost += residual * od,
            Some((b, size)) => {
                let weight = month.len() as f64 / HOURS_PER_MONTH;
                cost += b.rate * weight * size + b.overage * (residual - weight * size).max(0.0);
            }
        }
    }
    cost
}

/// Demand expected over the next weeks: the mean GPUs in use with its 80% interval, and the
/// trend. Fitted on daily means (hourly residuals are strongly autocorrelated, daily ones much
/// less, so the interval of a daily model is honest).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DemandForecast {
    /// Weeks ahead the figures cover.
    pub weeks: usize,
    /// Mean GPUs in use over them.
    pub mean_gpus: f64,
    /// 80% interval of that mean.
    pub low_gpus: f64,
    /// 80% interval of that mean.
    pub high_gpus: f64,
    /// Trend, GPUs per week.
    pub trend_gpus_per_week: f64,
}

/// Forecast of the mean demand over the `weeks` after `hourly`.
pub fn forecast_demand(hourly: &[f64], weeks: usize) -> DemandForecast {
    let daily: Vec<f64> = hourly.chunks(24).filter(|d| d.len() == 24).map(|d| d.iter().sum::<f64>() / 24.0).collect();
    let model = SeasonalTrend::fit(&daily, 7);
    let days = weeks * 7;
    let (low, point, high) = model.total(daily.len(), daily.len() + days);
    let per_day = |v: f64| if days == 0 { 0.0 } else { v / days as f64 };
    DemandForecast {
        weeks,
        mean_gpus: per_day(point),
        low_gpus: per_day(low),
        high_gpus: per_day(high),
        trend_gpus_per_week: model.slope * 7.0,
    }
}

/// An hourly demand path for the `weeks` after `hourly`, to plan a commitment on: the trend and
/// hour-of-week season carried forward, with the last weeks' residuals replayed on top so the
/// path keeps the history's spread (a commitment is a quantile, and a smooth mean path would
/// understate the hours of low demand).
pub fn forecast_path(hourly: &[f64], weeks: usize) -> Vec<f64> {
    let model = SeasonalTrend::fit(hourly, 168);
    let residuals: Vec<f64> = hourly.iter().enumerate().map(|(t, y)| y - model.point(t)).collect();
    let replay = residuals.len().min(168 * weeks.max(1));
    let tail = &residuals[residuals.len() - replay..];
    (0..weeks * 168)
        .map(|i| {
            let noise = if tail.is_empty() { 0.0 } else { tail[i % tail.len()] };
            (model.point(hourly.len() + i) + noise).max(0.0)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// On-demand at 3.0 per GPU-hour, a 1-year reservation at `rate`, spot at `spot`.
    fn one_year(rate: f64, spot: Option<f64>) -> GpuPrices {
        GpuPrices {
            on_demand: 3.0,
            spot,
            instruments: vec![Instrument { name: "reserved_1y".into(), rate, long_term: false }],
        }
    }

    /// On-demand at 3.0, 1 year at 1.9, 3 years at 1.3 (capped at the base load).
    fn one_and_three_years() -> GpuPrices {
        let mut prices = one_year(1.9, None);
        prices.instruments.push(Instrument { name: "reserved_3y".into(), rate: 1.3, long_term: true });
        prices
    }

    /// Guarded settings with a lookback of `hours` and an optional risk limit.
    fn lookback_settings(hours: usize, max_unused_gpu_hours: Option<f64>) -> CommitSettings {
        CommitSettings { short_lookback_hours: hours, max_unused_gpu_hours, guards: true }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

        /// The quantile rule equals a brute force over every commitment level.
        #[test]
        fn single_instrument_matches_brute_force(demand in proptest::collection::vec(0u32..40, 1..300), rate_pct in 5u32..100) {
            let hourly: Vec<f64> = demand.iter().map(|d| *d as f64).collect();
            let od = 3.0;
            let rate = od * rate_pct as f64 / 100.0;
            let best = single_instrument(&hourly, rate, od);
            let best_cost = cost_with_commitment(&hourly, best, rate, od);
            let brute = (0..=40).map(|c| cost_with_commitment(&hourly, c as f64, rate, od)).fold(f64::INFINITY, f64::min);
            prop_assert!((best_cost - brute).abs() <= 1e-6 * brute.max(1.0), "quantile {} costs {} vs brute {}", best, best_cost, brute);
        }

        /// The LP (without guards) is never worse than the best single-instrument plan.
        #[test]
        fn lp_is_never_worse_than_one_instrument(demand in proptest::collection::vec(0u32..30, 24..200), r1 in 30u32..90, r3 in 20u32..80) {
            let hourly: Vec<f64> = demand.iter().map(|d| *d as f64).collect();
            let od = 2.0;
            let instruments = vec![
                Instrument { name: "reserved_1y".into(), rate: od * r1 as f64 / 100.0, long_term: false },
                Instrument { name: "reserved_3y".into(), rate: od * r3 as f64 / 100.0, long_term: false },
            ];
            let prices = GpuPrices { on_demand: od, spot: None, instruments: instruments.clone() };
            let settings = lookback_settings(usize::MAX, None);
            let plan = plan_gpu("X", &hourly, 0.0, &prices, &settings);
            for inst in &instruments {
                let c = single_instrument(&hourly, inst.rate, od);
                let single = cost_with_commitment(&hourly, c, inst.rate, od);
                prop_assert!(plan.expected_cost <= single + 1e-6 * single.max(1.0), "LP {} > {} single {}", plan.expected_cost, inst.name, single);
            }
            prop_assert!(plan.expected_cost <= plan.on_demand_cost + 1e-6);
        }

        /// A commitment + overage contract alone: the block the LP picks costs what the best
        /// block found by brute force over every size costs (the optimum sits at a month's
        /// residual, so whole GPU-hours cover it), and signing never costs more than not.
        #[test]
        fn block_contract_matches_brute_force(months in proptest::collection::vec(proptest::collection::vec(0u32..12, 1..4), 1..5), rate in 50u32..95, overage in 80u32..100, min in 0u32..2000) {
            let od = 2.0;
            // Each month: 730 hours cycling through its demand levels.
            let hourly: Vec<f64> = months.iter().flat_map(|levels| (0..730).map(move |h| levels[h % levels.len()] as f64)).collect();
            let b = BlockContract { name: "contract".into(), rate: od * rate as f64 / 100.0, overage: od * overage as f64 / 100.0, min_gpu_hours: min as f64 };
            let prices = GpuPrices { on_demand: od, spot: None, instruments: Vec::new() };
            let plan = plan_gpu_with_contract("X", &hourly, 0.0, &prices, &CommitSettings::default(), Some(&b));
            let residuals: Vec<f64> = hourly.chunks(730).map(|m| m.iter().sum()).collect();
            let cost = |size: f64| residuals.iter().map(|r| b.rate * size + b.overage * (r - size).max(0.0)).sum::<f64>();
            let top = residuals.iter().copied().fold(0.0, f64::max) as u32;
            let brute = (min..=top.max(min)).map(|size| cost(size as f64)).fold(f64::INFINITY, f64::min);
            let best = brute.min(od * hourly.iter().sum::<f64>());
            prop_assert!((plan.expected_cost - best).abs() <= 1e-6 * best.max(1.0), "LP {} vs brute {}", plan.expected_cost, best);
        }

        /// Without guards the planner is the hindsight optimum: no guarded plan (any lookback,
        /// a 3-year cap, a risk limit) costs less on the same demand.
        #[test]
        fn unguarded_plan_is_a_lower_bound(demand in proptest::collection::vec(0u32..30, 48..200), lookback in 1usize..100, limit in proptest::option::of(0.0f64..500.0)) {
            let hourly: Vec<f64> = demand.iter().map(|d| *d as f64).collect();
            let prices = one_and_three_years();
            let guarded = plan_gpu("X", &hourly, 0.0, &prices, &lookback_settings(lookback, limit));
            let hindsight = plan_gpu("X", &hourly, 0.0, &prices, &CommitSettings { short_lookback_hours: lookback, max_unused_gpu_hours: None, guards: false });
            prop_assert!(hindsight.expected_cost <= guarded.expected_cost + 1e-6 * guarded.expected_cost.max(1.0), "hindsight {} > guarded {}", hindsight.expected_cost, guarded.expected_cost);
        }
    }

    #[test]
    fn growing_demand_is_forecast_higher_and_its_path_keeps_the_spread() {
        // 8 weeks: 10 GPUs growing by 1 per week, 6 more on weekday office hours.
        let hourly: Vec<f64> = (0..8 * 168)
            .map(|h| 10.0 + h as f64 / 168.0 + if (h / 24) % 7 < 5 && (9..17).contains(&(h % 24)) { 6.0 } else { 0.0 })
            .collect();
        let f = forecast_demand(&hourly, 4);
        assert!((f.trend_gpus_per_week - 1.0).abs() < 0.05, "{f:?}");
        let last_week_mean = hourly[7 * 168..].iter().sum::<f64>() / 168.0;
        assert!(f.mean_gpus > last_week_mean + 1.5 && f.low_gpus <= f.mean_gpus && f.mean_gpus <= f.high_gpus, "{f:?}");
        let path = forecast_path(&hourly, 4);
        assert_eq!(path.len(), 4 * 168);
        // The same weekly shape, shifted up by the trend.
        let min = path.iter().copied().fold(f64::INFINITY, f64::min);
        let max = path.iter().copied().fold(0.0, f64::max);
        assert!(min > 17.5 && (max - min) > 6.0 && (max - min) < 10.0, "{min} {max}");
    }

    #[test]
    fn a_contract_takes_the_residual_above_hourly_commitments() {
        // 8 GPUs always, 20 for 8 hours a day: reservations cover the 8; a contract with a
        // 70%-of-on-demand block and 85% overage takes the peaks' 2,920 GPU-hours a month.
        let hourly: Vec<f64> = (0..730 * 2).map(|h| if h % 24 < 8 { 20.0 } else { 8.0 }).collect();
        let prices = GpuPrices {
            on_demand: 2.0,
            spot: None,
            instruments: vec![Instrument { name: "reserved_1y".into(), rate: 1.2, long_term: false }],
        };
        let b = BlockContract { name: "contract".into(), rate: 1.4, overage: 1.7, min_gpu_hours: 1000.0 };
        let plan = plan_gpu_with_contract("X", &hourly, 0.0, &prices, &CommitSettings::default(), Some(&b));
        let line = |name: &str| plan.lines.iter().find(|l| l.instrument == name);
        assert!((line("reserved_1y").expect("reserved").commit_gpus - 8.0).abs() < 1e-6, "{plan:?}");
        let block = line("contract").expect("contract");
        // The two 730-hour months hold 31 and 29 peak windows' worth of residual: the block
        // (break-even 1.4/1.7 = 82% > half the months) is the smaller, the rest is overage.
        let residuals: Vec<f64> = hourly.chunks(730).map(|m| m.iter().map(|u| u - 8.0).sum()).collect();
        let smaller = residuals.iter().copied().fold(f64::INFINITY, f64::min);
        assert!((block.commit_gpus * HOURS_PER_MONTH - smaller).abs() < 1e-6, "{residuals:?} {plan:?}");
        let overage = line("contract_overage").expect("overage");
        let larger = residuals.iter().copied().fold(0.0, f64::max);
        assert!((overage.gpu_hours - (larger - smaller)).abs() < 1e-6, "{plan:?}");
        assert!(line("on_demand").is_none(), "{plan:?}");
        let without = plan_gpu("X", &hourly, 0.0, &prices, &CommitSettings::default());
        assert!(plan.expected_cost < without.expected_cost);
        // Re-costing a plan on its own demand gives its expected cost, with or without a contract.
        assert!((cost_of_plan_on(&plan, &hourly, &prices, Some(&b)) - plan.expected_cost).abs() < 1e-6);
        assert!((cost_of_plan_on(&without, &hourly, &prices, None) - without.expected_cost).abs() < 1e-6);
    }

    #[test]
    fn steady_load_is_committed_and_peaks_stay_on_demand() {
        // 8 GPUs always, 16 for 2 hours a day.
        let hourly: Vec<f64> = (0..24 * 28).map(|h| if h % 24 < 2 { 16.0 } else { 8.0 }).collect();
        let prices = one_and_three_years();
        let plan = plan_gpu("H100", &hourly, 0.0, &prices, &CommitSettings::default());
        let committed: f64 = plan.lines.iter().map(|l| l.commit_gpus).sum();
        assert!((committed - 8.0).abs() < 1e-6, "{plan:?}");
        assert!(
            plan.lines.iter().any(|l| l.instrument == "reserved_3y" && (l.commit_gpus - 8.0).abs() < 1e-6),
            "{plan:?}"
        );
        assert!(plan.savings_pct > 40.0, "{}", plan.savings_pct);
        assert!((plan.utilization - 1.0).abs() < 1e-9);
    }

    #[test]
    fn a_recent_drop_caps_the_commitment() {
        // 20 GPUs for three weeks, then 4 for the last week.
        let hourly: Vec<f64> = (0..24 * 28).map(|h| if h < 24 * 21 { 20.0 } else { 4.0 }).collect();
        let prices = one_year(1.9, None);
        let guarded = plan_gpu("A100", &hourly, 0.0, &prices, &lookback_settings(24 * 7, None));
        let unguarded = plan_gpu("A100", &hourly, 0.0, &prices, &lookback_settings(usize::MAX, None));
        let c = |p: &GpuPlan| p.lines.iter().map(|l| l.commit_gpus).sum::<f64>();
        assert!((c(&guarded) - 4.0).abs() < 1e-6, "{guarded:?}");
        assert!(c(&unguarded) > 4.0);
    }

    #[test]
    fn interruptible_work_goes_to_spot_when_cheaper() {
        let hourly = vec![10.0; 100];
        let prices = one_year(1.9, Some(0.9));
        let plan = plan_gpu("L4", &hourly, 0.5, &prices, &CommitSettings::default());
        assert!((plan.spot_share - 0.5).abs() < 1e-9);
        assert!(plan.lines.iter().any(|l| l.instrument == "spot" && (l.gpu_hours - 500.0).abs() < 1e-6));
    }

    #[test]
    fn a_risk_limit_bounds_unused_commitment() {
        let hourly: Vec<f64> = (0..200).map(|h| if h % 2 == 0 { 10.0 } else { 2.0 }).collect();
        let prices = one_year(1.0, None);
        let free = plan_gpu("T4", &hourly, 0.0, &prices, &lookback_settings(usize::MAX, None));
        let limited = plan_gpu("T4", &hourly, 0.0, &prices, &lookback_settings(usize::MAX, Some(100.0)));
        let c = |p: &GpuPlan| p.lines.iter().map(|l| l.commit_gpus).sum::<f64>();
        assert!(c(&limited) < c(&free));
        let unused: f64 = hourly.iter().map(|u| (c(&limited) - u).max(0.0)).sum();
        assert!(unused <= 100.0 + 1e-6, "{unused}");
    }
}
