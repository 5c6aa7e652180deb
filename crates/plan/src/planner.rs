use std::collections::{BTreeMap, HashMap};

use gpubroker_catalog::{Catalog, InterruptionBucket, Offer, StorageKind, TransferKind};
use gpubroker_core::units::format_hours;
use gpubroker_core::{Currency, Decimal, Money, PricingModel, SECONDS_PER_HOUR};
use gpubroker_estimate::{EfficiencyTable, Estimate, Hardware, WorkloadKind, estimate, smallest_fit};
use jiff::Timestamp;
use serde::Serialize;

use crate::task::{ResourceChoice, Task};

/// Spot interruption frequency assumed when the catalog has none for an offer: the worst
/// Spot Advisor bucket. GPU spot capacity is scarcer than the all-types average (the Can't Be
/// Late traces show multi-hour unavailability), so an unknown offer is assumed risky.
const UNKNOWN_SPOT_BUCKET: InterruptionBucket = InterruptionBucket::Over20;
/// Disk per node when the task sets none (SkyPilot's default `disk_size`).
const DEFAULT_DISK_GB: i64 = 256;
/// Money in plan output is rounded to micro-units; the total is the sum of the rounded parts.
const MONEY_DP: u32 = 6;

/// What to minimise.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Objective {
    /// Total cost.
    Cost,
    /// Wall-clock time.
    Time,
}

/// Planner settings (from the command line).
#[derive(Debug, Clone)]
pub struct PlanSettings {
    /// What to minimise.
    pub objective: Objective,
    /// Currency of all amounts in the plan.
    pub currency: Currency,
    /// Start time of the run (prices off-peak windows).
    pub now: Timestamp,
    /// Safety margin on memory and on time against the deadline (0.15 = 15%).
    pub headroom: f64,
    /// Largest number of nodes to consider.
    pub max_nodes: u32,
    /// Pricing models to consider; empty = all but long-term commitments.
    pub pricing: Vec<PricingModel>,
    /// Hours to assume when the task has no workload block.
    pub fixed_hours: Option<f64>,
}

impl Default for PlanSettings {
    fn default() -> Self {
        PlanSettings {
            objective: Objective::Cost,
            currency: Currency::USD,
            now: Timestamp::UNIX_EPOCH,
            headroom: 0.15,
            max_nodes: 16,
            pricing: Vec::new(),
            fixed_hours: None,
        }
    }
}

/// The parts of an option's total cost, in the plan's currency.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct CostBreakdown {
    /// Compute for the estimated run time, under the offer's billing rules.
    pub compute: Decimal,
    /// Disks for the run.
    pub storage: Decimal,
    /// Dataset in, outputs out.
    pub data_transfer: Decimal,
    /// Expected extra compute from spot interruptions.
    pub preemption: Decimal,
    /// The sum of the four.
    pub total: Decimal,
}

/// One priced placement.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PlanOption {
    /// Provider id.
    pub provider: String,
    /// Region.
    pub region: String,
    /// Zone, when the price is zone-specific.
    pub zone: Option<String>,
    /// Instance type.
    pub instance_type: String,
    /// GPU type.
    pub gpu: String,
    /// GPUs per node.
    pub gpus_per_node: u32,
    /// Nodes.
    pub nodes: u32,
    /// Pricing model.
    pub pricing: PricingModel,
    /// Price per hour of all nodes together, in `currency`.
    pub hourly_price: Decimal,
    /// The plan's currency.
    pub currency: Currency,
    /// The offer's own price and currency, as listed.
    pub list_price: Money,
    /// The unit the list price is per.
    pub list_price_per: &'static str,
    /// Expected wall-clock hours, including expected spot restarts.
    pub hours: f64,
    /// Estimated hours without interruptions.
    pub compute_hours: f64,
    /// Memory per GPU, GiB.
    pub memory_per_gpu_gib: f64,
    /// Device memory per GPU, GiB.
    pub gpu_memory_gib: f64,
    /// Cost parts.
    pub cost: CostBreakdown,
    /// Whether the workload fits in memory with the headroom.
    pub fits: bool,
    /// Whether the expected time plus headroom is within the deadline (true without a deadline).
    pub meets_deadline: bool,
    /// Whether the total is within the budget (true without a budget).
    pub within_budget: bool,
    /// fits && meets_deadline && within_budget (&& serving throughput).
    pub feasible: bool,
    /// Why it is not feasible.
    pub reasons: Vec<String>,
    /// What the price leaves out (no storage or egress price known for the provider).
    pub caveats: Vec<String>,
    /// Expected spot interruptions during the run.
    pub expected_interruptions: f64,
    /// Spot interruption bucket used.
    pub spot_interruption: Option<String>,
    /// Throughput, tokens/s over all GPUs.
    pub tokens_per_second: Option<f64>,
    /// Where the price comes from, and when.
    pub source: String,
    /// Date of the price.
    pub as_of: String,
}

/// A group of options left out for one reason.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Exclusion {
    /// The reason (`does not fit`, `too slow`, `over budget`).
    pub reason: String,
    /// How many options.
    pub count: usize,
    /// The one a user would most likely have picked (the cheapest), described.
    pub example: String,
}

/// The planner's answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Plan {
    /// Task name.
    pub task: String,
    /// What was minimised.
    pub objective: Objective,
    /// Currency of all amounts.
    pub currency: Currency,
    /// Deadline, hours, if any.
    pub deadline_hours: Option<f64>,
    /// Budget in `currency`, if any.
    pub budget: Option<Decimal>,
    /// Options, feasible ones first, each group sorted by the objective.
    pub options: Vec<PlanOption>,
    /// Index of the recommendation in `options`.
    pub best: Option<usize>,
    /// Why the best option wins.
    pub why: Vec<String>,
    /// Why notable options were excluded.
    pub excluded: Vec<Exclusion>,
    /// Caveats that apply to the whole plan.
    pub notes: Vec<String>,
    /// Offers considered.
    pub offers_considered: usize,
}

/// Plans `task` over `catalog`.
pub fn plan(task: &Task, catalog: &Catalog, table: &EfficiencyTable, settings: &PlanSettings) -> Plan {
    let mut notes = Vec::new();
    let fx = catalog.fx();
    let to_plan = |m: Money| fx.convert(m, settings.currency).map(|m| m.amount).ok();
    let budget = task.budget.and_then(to_plan);
    if let (Some(b), Some(converted)) = (task.budget, budget)
        && b.currency != settings.currency
    {
        notes.push(format!("budget {b} = {} {} at the catalog's exchange rate", two(converted), settings.currency));
    }
    let pricing_allowed = |p: PricingModel| {
        let list = if settings.pricing.is_empty() { &task.pricing } else { &settings.pricing };
        if list.is_empty() { !p.is_commitment() } else { list.contains(&p) }
    };
    let mut options = Vec::new();
    let mut considered = 0usize;
    // Sizing depends only on the GPU and how many an instance has, not on price or place: many
    // offers (every zone of an instance type) share one.
    let mut sizings: HashMap<(String, u32), Sizing> = HashMap::new();
    for offer in catalog.offers() {
        let Some(choice) = task.choices.iter().find(|c| choice_matches(c, offer)) else { continue };
        if !pricing_allowed(offer.rate.pricing) {
            continue;
        }
        let Some(gpu) = catalog.gpu(&offer.gpu) else { continue };
        considered += 1;
        let _ = choice;
        let sizing = sizings
            .entry((offer.gpu.clone(), offer.gpu_count))
            .or_insert_with(|| size_offer(task, table, settings, offer, gpu));
        if let Some(option) = price_offer(task, catalog, settings, offer, gpu, sizing, budget) {
            options.push(option);
        }
    }
    if task.workload.is_none() {
        notes.push(match settings.fixed_hours {
            Some(h) => format!("no `workload:` block: every option is priced for {h} hours"),
            None => "no `workload:` block: every option is priced for 1 hour (add a workload, or pass --hours)".into(),
        });
    }
    if task.data.dataset_provider.is_none() && task.data.dataset_gb > Decimal::ZERO {
        notes.push("dataset location not given (`data.dataset.provider`/`region`): moving it in is not priced".into());
    }
    sort_options(&mut options, settings.objective);
    let best = options.iter().position(|o| o.feasible);
    let why = explain_best(&options, best, settings);
    let excluded = summarize_exclusions(&options);
    Plan {
        task: task.name.clone(),
        objective: settings.objective,
        currency: settings.currency,
        deadline_hours: task.deadline_s.map(|s| s as f64 / 3600.0),
        budget,
        options,
        best,
        why,
        excluded,
        notes,
        offers_considered: considered,
    }
}

fn choice_matches(c: &ResourceChoice, o: &Offer) -> bool {
    let eq = |want: &Option<String>, have: &str| want.as_ref().is_none_or(|w| w.eq_ignore_ascii_case(have));
    if !c.gpus.is_empty() && !c.gpus.iter().any(|(g, n)| g == &o.gpu && n.is_none_or(|n| n == o.gpu_count)) {
        return false;
    }
    if !eq(&c.provider, &o.provider) || !eq(&c.instance_type, &o.instance_type) {
        return false;
    }
    if c.region.is_some() && o.region != "*" && !eq(&c.region, &o.region) {
        return false;
    }
    if c.zone.is_some() && o.zone.as_ref().is_some_and(|z| !eq(&c.zone, z)) {
        return false;
    }
    match c.use_spot {
        Some(true) => o.rate.pricing == PricingModel::Spot,
        Some(false) => o.rate.pricing != PricingModel::Spot,
        None => true,
    }
}

/// Large multi-GPU instances of data-centre GPUs come with an RDMA fabric (EFA, InfiniBand);
/// smaller ones and consumer cards talk over Ethernet.
fn has_rdma(offer: &Offer, gpu: &gpubroker_catalog::GpuSpec) -> bool {
    offer.gpu_count >= 8 && gpu.has_fast_scaleup()
}

struct Sizing {
    nodes: u32,
    estimate: Option<Estimate>,
    hours: f64,
}

fn size_offer(
    task: &Task,
    table: &EfficiencyTable,
    settings: &PlanSettings,
    offer: &Offer,
    gpu: &gpubroker_catalog::GpuSpec,
) -> Sizing {
    let per_node = offer.gpu_count;
    let rdma = has_rdma(offer, gpu);
    let Some(w) = &task.workload else {
        return Sizing {
            nodes: task.num_nodes.unwrap_or(1),
            estimate: None,
            hours: settings.fixed_hours.unwrap_or(1.0),
        };
    };
    let at = |nodes: u32| {
        estimate(w, &Hardware { gpu, gpus: nodes * per_node, gpus_per_node: per_node, rdma }, table, settings.headroom)
    };
    let hours_of = |e: &Estimate| e.hours.unwrap_or(f64::INFINITY);
    if let Some(n) = task.num_nodes {
        let e = at(n);
        let h = hours_of(&e);
        return Sizing { nodes: n, estimate: Some(e), hours: h };
    }
    // The smallest whole number of nodes that fits (we rent whole instances and use all their GPUs).
    let max_gpus = per_node * settings.max_nodes.max(1);
    let first = smallest_fit(w, gpu, per_node, rdma, table, settings.headroom, max_gpus)
        .map(|(gpus, _)| gpus.div_ceil(per_node))
        .unwrap_or(1);
    let mut nodes = first;
    let mut e = at(nodes);
    // More nodes only to meet the deadline (training and batch jobs scale out; serving is sized
    // by its request rate already).
    if let Some(deadline_s) = task.deadline_s
        && (w.kind.is_training() || w.kind == WorkloadKind::BatchInference || w.kind == WorkloadKind::Custom)
    {
        let limit_h = deadline_s as f64 / 3600.0 / (1.0 + settings.headroom);
        while hours_of(&e) > limit_h && nodes < settings.max_nodes {
            let next = at(nodes + 1);
            if hours_of(&next) >= hours_of(&e) {
                break;
            }
            nodes += 1;
            e = next;
        }
    }
    let h = hours_of(&e);
    Sizing { nodes, estimate: Some(e), hours: h }
}

fn price_offer(
    task: &Task,
    catalog: &Catalog,
    settings: &PlanSettings,
    offer: &Offer,
    gpu: &gpubroker_catalog::GpuSpec,
    sizing: &Sizing,
    budget: Option<Decimal>,
) -> Option<PlanOption> {
    let fx = catalog.fx();
    let convert = |m: Money| fx.convert(m, settings.currency).ok().map(|m| m.amount);
    let nodes = Decimal::from(sizing.nodes);
    let compute_hours = sizing.hours;
    let mut reasons = Vec::new();
    let mut caveats = Vec::new();
    let fits = sizing.estimate.as_ref().is_none_or(|e| e.fits);
    // Keep absurdly slow options (they explain why a small GPU will not do) but not infinite ones.
    if !compute_hours.is_finite() || compute_hours > 1e9 {
        return None;
    }
    // Spot: expected interruptions over the run on any of the nodes, each costing the restart overhead.
    let (expected_interruptions, bucket) = if offer.rate.pricing.is_interruptible() {
        let bucket = offer.spot_interruption.unwrap_or(UNKNOWN_SPOT_BUCKET);
        (bucket.hourly_rate() * sizing.nodes as f64 * compute_hours, Some(bucket))
    } else {
        (0.0, None)
    };
    let extra_hours = expected_interruptions * task.restart_overhead_h;
    let hours = compute_hours + extra_hours;
    let run_s = (compute_hours * SECONDS_PER_HOUR as f64).ceil() as u64;
    let total_s = (hours * SECONDS_PER_HOUR as f64).ceil() as u64;
    let cost_for = |seconds: u64| -> Option<Money> {
        if offer.rate.pricing.is_commitment() {
            // Someone who holds the commitment pays its effective hourly rate for the hours used.
            offer
                .hourly_price()
                .checked_mul(Decimal::from(seconds))
                .ok()?
                .checked_div(Decimal::from(SECONDS_PER_HOUR))
                .ok()
        } else {
            offer.rate.cost_of_run_from(settings.now, seconds).ok()
        }
    };
    let base = cost_for(run_s)?;
    let with_restarts = cost_for(total_s)?;
    let compute = convert(base.checked_mul(nodes).ok()?)?.round_dp(MONEY_DP);
    let preemption = convert(with_restarts.checked_sub(base).ok()?.checked_mul(nodes).ok()?)?.round_dp(MONEY_DP);
    // Storage: a disk per node for the whole run.
    let disk_gb = task.disk_size_gb.unwrap_or_else(|| {
        let need = task.data.dataset_gb + task.data.checkpoint_gb * Decimal::TWO + Decimal::from(50);
        need.max(Decimal::from(DEFAULT_DISK_GB))
    });
    let storage = match catalog.storage_price(&offer.provider, &offer.region, StorageKind::Block) {
        Some(p) => {
            let months = Decimal::from(total_s) / Decimal::from(730 * SECONDS_PER_HOUR);
            convert(p.price_per_gb_month.checked_mul(disk_gb * nodes * months).ok()?)?.round_dp(MONEY_DP)
        }
        None => {
            caveats.push(format!("no block-storage price for {}: disks not priced (often included)", offer.provider));
            Decimal::ZERO
        }
    };
    let data_transfer = transfer_cost(task, catalog, offer, &mut caveats, &convert)?.round_dp(MONEY_DP);
    let total = compute + storage + data_transfer + preemption;
    let meets_deadline = task.deadline_s.is_none_or(|d| hours * (1.0 + settings.headroom) <= d as f64 / 3600.0);
    let within_budget = budget.is_none_or(|b| total <= b);
    let est = sizing.estimate.as_ref();
    let meets_throughput = est.and_then(|e| e.meets_throughput).unwrap_or(true);
    if !fits {
        let e = est?;
        reasons.push(format!(
            "does not fit: needs {:.1} GiB per GPU (+{:.0}% headroom), {} has {:.1} GiB",
            e.memory_per_gpu_gib,
            settings.headroom * 100.0,
            gpu.name,
            e.gpu_memory_gib
        ));
    }
    if !meets_throughput {
        reasons.push(format!("cannot sustain the request rate within {} nodes", sizing.nodes));
    }
    if !meets_deadline && fits {
        reasons.push(format!(
            "too slow: {} (+{:.0}% headroom) exceeds the {} deadline",
            format_hours(hours),
            settings.headroom * 100.0,
            format_hours(task.deadline_s.unwrap_or(0) as f64 / 3600.0)
        ));
    }
    if !within_budget && fits {
        reasons.push(format!("over budget: {} > {}", two(total), two(budget.unwrap_or_default())));
    }
    let hourly = convert(offer.hourly_price().checked_mul(nodes).ok()?)?.round_dp(MONEY_DP);
    Some(PlanOption {
        provider: offer.provider.clone(),
        region: offer.region.clone(),
        zone: offer.zone.clone(),
        instance_type: offer.instance_type.clone(),
        gpu: offer.gpu.clone(),
        gpus_per_node: offer.gpu_count,
        nodes: sizing.nodes,
        pricing: offer.rate.pricing,
        hourly_price: hourly,
        currency: settings.currency,
        list_price: offer.rate.price,
        list_price_per: offer.rate.per.as_str(),
        hours,
        compute_hours,
        memory_per_gpu_gib: est.map(|e| e.memory_per_gpu_gib).unwrap_or(0.0),
        gpu_memory_gib: gpu.memory_gib(),
        cost: CostBreakdown { compute, storage, data_transfer, preemption, total },
        fits,
        meets_deadline,
        within_budget,
        feasible: fits && meets_deadline && within_budget && meets_throughput,
        reasons,
        caveats,
        expected_interruptions,
        spot_interruption: bucket.map(|b| {
            if offer.spot_interruption.is_some() { b.label().to_string() } else { format!("{} (assumed)", b.label()) }
        }),
        tokens_per_second: est.and_then(|e| e.tokens_per_second),
        source: offer.source.clone(),
        as_of: offer.as_of.to_string(),
    })
}

/// Dataset into the compute region (once, into shared storage) and outputs out to the internet.
fn transfer_cost(
    task: &Task,
    catalog: &Catalog,
    offer: &Offer,
    caveats: &mut Vec<String>,
    convert: &dyn Fn(Money) -> Option<Decimal>,
) -> Option<Decimal> {
    let mut total = Decimal::ZERO;
    let data = &task.data;
    if data.dataset_gb > Decimal::ZERO
        && let Some(src) = &data.dataset_provider
    {
        let src_region = data.dataset_region.as_deref().unwrap_or("*");
        let same_provider = src.eq_ignore_ascii_case(&offer.provider);
        let same_region =
            same_provider && (offer.region == "*" || data.dataset_region.as_deref().is_none_or(|r| r == offer.region));
        if !same_region {
            let kind = if same_provider { TransferKind::InterRegion } else { TransferKind::InternetEgress };
            match catalog.transfer_cost(src, src_region, kind, data.dataset_gb) {
                Some(m) => total += convert(m)?,
                None => caveats.push(format!("no {kind:?} price for {src} {src_region}: dataset transfer not priced")),
            }
            if !same_provider
                && let Some(m) =
                    catalog.transfer_cost(&offer.provider, &offer.region, TransferKind::Ingress, data.dataset_gb)
            {
                total += convert(m)?;
            }
        }
    }
    if data.output_egress_gb > Decimal::ZERO {
        match catalog.transfer_cost(&offer.provider, &offer.region, TransferKind::InternetEgress, data.output_egress_gb)
        {
            Some(m) => total += convert(m)?,
            None => caveats.push(format!("no egress price for {}: output transfer not priced", offer.provider)),
        }
    }
    Some(total)
}

fn sort_options(options: &mut [PlanOption], objective: Objective) {
    options.sort_by(|a, b| {
        let primary = b.feasible.cmp(&a.feasible);
        let by_cost = a.cost.total.cmp(&b.cost.total);
        let by_time = a.hours.total_cmp(&b.hours);
        let key =
            |o: &PlanOption| (o.provider.clone(), o.region.clone(), o.zone.clone(), o.instance_type.clone(), o.pricing);
        primary
            .then(b.fits.cmp(&a.fits))
            .then(match objective {
                Objective::Cost => by_cost.then(by_time),
                Objective::Time => by_time.then(by_cost),
            })
            .then_with(|| key(a).cmp(&key(b)))
    });
}

fn describe(o: &PlanOption) -> String {
    let place = match &o.zone {
        Some(z) => format!("{}/{}", o.region, z),
        None => o.region.clone(),
    };
    format!(
        "{} {} {} {}x{}{} {}",
        o.provider,
        place,
        o.instance_type,
        o.gpu,
        o.gpus_per_node,
        if o.nodes > 1 { format!(" x {} nodes", o.nodes) } else { String::new() },
        o.pricing
    )
}

fn pct_below(a: Decimal, b: Decimal) -> String {
    if b.is_zero() {
        return "0%".into();
    }
    let pct = (Decimal::ONE - a / b) * Decimal::from(100);
    format!("{}%", pct.round_dp(0))
}

fn explain_best(options: &[PlanOption], best: Option<usize>, settings: &PlanSettings) -> Vec<String> {
    let Some(bi) = best else { return Vec::new() };
    let b = &options[bi];
    let cur = settings.currency;
    let feasible: Vec<&PlanOption> = options.iter().filter(|o| o.feasible).collect();
    let mut why = Vec::new();
    let total = two(b.cost.total);
    why.push(match settings.objective {
        Objective::Cost => {
            format!("cheapest of {} feasible options: {} {} in {}", feasible.len(), total, cur, format_hours(b.hours))
        }
        Objective::Time => {
            format!("fastest of {} feasible options: {} for {total:.2} {cur}", feasible.len(), format_hours(b.hours))
        }
    });
    // The runner-up that differs in provider or GPU (not just another zone of the same thing).
    if let Some(r) =
        feasible.iter().skip(1).find(|o| o.provider != b.provider || o.gpu != b.gpu || o.pricing != b.pricing)
    {
        why.push(format!(
            "runner-up: {} at {} {} ({} more)",
            describe(r),
            two(r.cost.total),
            cur,
            pct_of(r.cost.total, b.cost.total)
        ));
    }
    if b.pricing != PricingModel::OnDemand
        && let Some(od) = feasible.iter().find(|o| o.pricing == PricingModel::OnDemand)
    {
        why.push(format!(
            "{} below the best on-demand option ({} at {} {})",
            pct_below(b.cost.total, od.cost.total),
            describe(od),
            two(od.cost.total),
            cur
        ));
    }
    if b.pricing == PricingModel::Spot {
        why.push(format!(
            "spot: {:.3} expected interruptions ({} per month) add {} {} of restarts; the deadline still holds with headroom",
            b.expected_interruptions,
            b.spot_interruption.as_deref().unwrap_or("?"),
            two(b.cost.preemption),
            cur
        ));
    }
    // The famous flagship: what the usual pick would cost.
    for flagship in ["H100", "H200", "B200", "A100-80GB"] {
        if b.gpu != flagship
            && let Some(f) = feasible.iter().find(|o| o.gpu == flagship)
        {
            why.push(format!(
                "the cheapest {} option costs {} {} ({} more)",
                flagship,
                two(f.cost.total),
                cur,
                pct_of(f.cost.total, b.cost.total)
            ));
            break;
        }
    }
    let non_compute = b.cost.storage + b.cost.data_transfer;
    if non_compute > Decimal::ZERO {
        why.push(format!(
            "includes {} {} of storage and data transfer ({} of the total)",
            two(non_compute),
            cur,
            pct_share(non_compute, b.cost.total)
        ));
    }
    why
}

/// Two decimals, half away from zero (as invoices round and as the CLI's tables show money).
fn two(d: Decimal) -> String {
    format!("{:.2}", d.round_dp_with_strategy(2, rust_decimal::RoundingStrategy::MidpointAwayFromZero))
}

fn pct_of(a: Decimal, b: Decimal) -> String {
    if b.is_zero() {
        return "n/a".into();
    }
    format!("+{}%", ((a / b - Decimal::ONE) * Decimal::from(100)).round_dp(0))
}

fn pct_share(part: Decimal, whole: Decimal) -> String {
    if whole.is_zero() {
        return "0%".into();
    }
    format!("{}%", (part / whole * Decimal::from(100)).round_dp(1))
}

fn summarize_exclusions(options: &[PlanOption]) -> Vec<Exclusion> {
    let mut groups: BTreeMap<&'static str, Vec<&PlanOption>> = BTreeMap::new();
    for o in options.iter().filter(|o| !o.feasible) {
        let reason = if !o.fits {
            "does not fit in memory"
        } else if o.reasons.iter().any(|r| r.starts_with("cannot sustain")) {
            "cannot sustain the request rate"
        } else if !o.meets_deadline {
            "too slow for the deadline"
        } else {
            "over budget"
        };
        groups.entry(reason).or_default().push(o);
    }
    groups
        .into_iter()
        .map(|(reason, list)| {
            let cheapest = list.iter().min_by(|a, b| a.hourly_price.cmp(&b.hourly_price)).copied();
            Exclusion {
                reason: reason.to_string(),
                count: list.len(),
                example: cheapest
                    .map(|o| {
                        format!("{} ({} {}/h): {}", describe(o), two(o.hourly_price), o.currency, o.reasons.join("; "))
                    })
                    .unwrap_or_default(),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::task::TaskFile;
    use proptest::prelude::*;

    fn now() -> Timestamp {
        "2026-11-29T12:00:00Z".parse().expect("time")
    }

    fn task(catalog: &Catalog, yaml: &str) -> Task {
        TaskFile::parse("t.yaml", yaml).expect("parse").validate("t.yaml", yaml, catalog, now()).expect("valid")
    }

    fn run(catalog: &Catalog, yaml: &str, settings: &PlanSettings) -> Plan {
        plan(&task(catalog, yaml), catalog, &EfficiencyTable::builtin(), settings)
    }

    #[test]
    fn plain_skypilot_task_is_priced_per_hour_of_list_price() {
        let catalog = Catalog::builtin().expect("catalog");
        let settings = PlanSettings {
            now: now(),
            fixed_hours: Some(2.0),
            pricing: vec![PricingModel::OnDemand],
            ..Default::default()
        };
        let p = run(&catalog, "resources:\n  accelerators: H100:8\n  cloud: aws\n  region: us-east-1\n", &settings);
        let best = &p.options[p.best.expect("best")];
        assert_eq!(best.gpu, "H100");
        assert_eq!(best.gpus_per_node, 8);
        // Two hours of compute at the list price, exactly.
        assert_eq!(best.cost.compute, best.hourly_price * Decimal::TWO);
    }

    #[test]
    fn commitments_only_when_asked() {
        let catalog = Catalog::builtin().expect("catalog");
        let yaml = "resources:\n  accelerators: A100-80GB:8\n  cloud: aws\n";
        let default = run(&catalog, yaml, &PlanSettings { now: now(), ..Default::default() });
        assert!(default.options.iter().all(|o| !o.pricing.is_commitment()));
        let reserved = run(
            &catalog,
            yaml,
            &PlanSettings { now: now(), pricing: vec![PricingModel::Reserved1y], ..Default::default() },
        );
        assert!(!reserved.options.is_empty());
        assert!(reserved.options.iter().all(|o| o.pricing == PricingModel::Reserved1y));
    }

    #[test]
    fn data_transfer_is_priced_by_where_the_data_is() {
        let catalog = Catalog::builtin().expect("catalog");
        let yaml = "resources:\n  accelerators: H100:8\n  cloud: aws\nworkload:\n  kind: custom\n  gpu_hours: 8\n  reference_gpu: H100\ndata:\n  dataset: {size: 1000GB, provider: aws, region: us-east-1}\n";
        let p = run(
            &catalog,
            yaml,
            &PlanSettings { now: now(), pricing: vec![PricingModel::OnDemand], ..Default::default() },
        );
        let same = p.options.iter().find(|o| o.region == "us-east-1").expect("us-east-1 option");
        let other = p
            .options
            .iter()
            .find(|o| o.region != "us-east-1" && o.region.starts_with("us-"))
            .expect("another US region");
        assert_eq!(same.cost.data_transfer, Decimal::ZERO, "same region: free");
        assert!(other.cost.data_transfer > Decimal::ZERO, "inter-region transfer is charged");
    }

    fn yaml_for(tokens: f64, deadline_h: u32, budget: u32) -> String {
        format!(
            "workload:\n  kind: lora\n  model: llama-3-8b\n  tokens: {tokens:e}\n  deadline: {deadline_h}h\n  budget: {budget} USD\ndata:\n  dataset: {{size: 50GB, provider: aws, region: us-east-1}}\n  output_egress: 10GB\n"
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

        #[test]
        fn plans_are_consistent(tokens in 1e7f64..5e9, deadline_h in 2u32..200, budget in 5u32..2000) {
            let catalog = Catalog::builtin().expect("catalog");
            let settings = PlanSettings { now: now(), ..Default::default() };
            let p = run(&catalog, &yaml_for(tokens, deadline_h, budget), &settings);
            let b = Decimal::from(budget);
            for o in &p.options {
                // The parts add up to the total exactly.
                prop_assert_eq!(o.cost.compute + o.cost.storage + o.cost.data_transfer + o.cost.preemption, o.cost.total);
                if o.feasible {
                    prop_assert!(o.cost.total <= b, "a feasible option exceeds the budget");
                    prop_assert!(o.hours * 1.15 <= deadline_h as f64 + 1e-9);
                }
            }
            // Feasible first, by cost; the best is the first feasible.
            let n = p.options.iter().take_while(|o| o.feasible).count();
            prop_assert!(p.options[n..].iter().all(|o| !o.feasible));
            prop_assert!(p.options[..n].windows(2).all(|w| w[0].cost.total <= w[1].cost.total));
            prop_assert_eq!(p.best, if n > 0 { Some(0) } else { None });
            // Deterministic.
            let again = run(&catalog, &yaml_for(tokens, deadline_h, budget), &settings);
            prop_assert_eq!(&p, &again);
        }

        #[test]
        fn longer_runs_never_cost_less(hours in 0.1f64..500.0, extra in 0.0f64..500.0) {
            let catalog = Catalog::builtin().expect("catalog");
            let yaml = "resources:\n  accelerators: [A100-80GB:8, H100:8, RTX4090:1]\n";
            let at = |h: f64| run(&catalog, yaml, &PlanSettings { now: now(), fixed_hours: Some(h), ..Default::default() });
            let short = at(hours);
            let long = at(hours + extra);
            for o in &short.options {
                let same = long.options.iter().find(|l| l.provider == o.provider && l.region == o.region && l.zone == o.zone && l.instance_type == o.instance_type && l.pricing == o.pricing && l.nodes == o.nodes);
                if let Some(l) = same {
                    prop_assert!(l.cost.compute >= o.cost.compute, "{} {}: {} < {}", o.provider, o.instance_type, l.cost.compute, o.cost.compute);
                }
            }
        }
    }
}
