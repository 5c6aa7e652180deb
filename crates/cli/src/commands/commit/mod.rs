//! `gpubroker commit plan`: commitments, spot and on-demand per GPU type from a demand history.

mod chart;
mod demand;

use std::collections::BTreeMap;
use std::io::Write;

use anyhow::{Result, anyhow, bail};
use comfy_table::Cell;
use gpubroker_core::units::parse_duration_s;
use gpubroker_core::{Currency, PricingModel};
use gpubroker_plan::commit::{
    BlockContract, CommitSettings, DemandForecast, GpuPlan, GpuPrices, Instrument, cost_of_plan_on, forecast_demand,
    forecast_path, plan_gpu_with_contract,
};
use rust_decimal::prelude::ToPrimitive;
use serde::Serialize;

use self::chart::{Panel, chart, svg_chart};
use self::demand::{DemandKey, demand_from_charges, read_demand_csv};
use super::usage::{CostLedger, read_focus};
use crate::ExitStatus;
use crate::args::CommitPlanArgs;
use crate::context::Context;
use crate::output::{align_right, table, write_json};

/// Where a commitment is bought: a provider's region (`*` when its prices are region-less).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Market {
    provider: String,
    region: String,
}

/// Catalog prices per GPU-hour in `currency` for each market that sells `gpu` on demand:
/// the cheapest on-demand, spot and 1y/3y reservation there. Reservations are bought from
/// one provider, so on-demand, spot and commitments are compared within a market, never
/// across providers (a neocloud's on-demand price is not what an AWS reservation displaces).
fn market_prices(
    ctx: &Context,
    gpu: &str,
    providers: &[String],
    terms: &[String],
    currency: Currency,
) -> Vec<(Market, GpuPrices)> {
    let Some(spec) = ctx.catalog.gpu(gpu) else { return Vec::new() };
    let fx = ctx.catalog.fx();
    let offers: Vec<_> = ctx
        .catalog
        .offers()
        .iter()
        .filter(|o| o.gpu == spec.name && (providers.is_empty() || providers.contains(&o.provider)))
        .collect();
    // Every region a provider prices anything in is a market (a region-less on-demand price
    // applies there too, so a region's subscription meets the provider-wide on-demand rate).
    let mut markets: Vec<Market> =
        offers.iter().map(|o| Market { provider: o.provider.clone(), region: o.region.clone() }).collect();
    markets.sort();
    markets.dedup();
    let per_gpu_hour = |m: &Market, p: PricingModel| -> Option<f64> {
        offers
            .iter()
            .filter(|o| o.provider == m.provider && (o.region == m.region || o.region == "*") && o.rate.pricing == p)
            .filter_map(|o| {
                fx.convert(o.hourly_price(), currency)
                    .ok()
                    .map(|price| price.amount / gpubroker_core::Decimal::from(o.gpu_count.max(1)))
            })
            .min()
            .and_then(|d| d.to_f64())
    };
    markets
        .into_iter()
        .filter_map(|m| {
            let on_demand = per_gpu_hour(&m, PricingModel::OnDemand)?;
            let mut instruments = Vec::new();
            // Monthly subscriptions and provider contracts (capacity blocks, reserved clusters) are
            // commitments too: a fixed price per GPU-hour, paid whether used or not.
            for (term, model, long) in [
                ("1y", PricingModel::Reserved1y, false),
                ("3y", PricingModel::Reserved3y, true),
                ("committed", PricingModel::Committed, false),
                ("month", PricingModel::SubscriptionMonth, false),
            ] {
                if terms.iter().any(|t| t == term)
                    && let Some(rate) = per_gpu_hour(&m, model)
                {
                    instruments.push(Instrument { name: model.to_string(), rate, long_term: long });
                }
            }
            // Spot's expected restarts cost about 10% more time.
            let spot = per_gpu_hour(&m, PricingModel::Spot).map(|s| s * 1.1);
            Some((m, GpuPrices { on_demand, spot, instruments }))
        })
        .collect()
}

#[derive(Serialize)]
struct RecommendationJson {
    gpu: String,
    provider: String,
    region: String,
    instrument: String,
    term: Option<String>,
    commit_gpus: f64,
    gpu_hours: f64,
    cost: f64,
    expected_cost: f64,
    on_demand_cost: f64,
    savings_pct: f64,
    utilization: f64,
    coverage: f64,
    break_even_utilization: Option<f64>,
    spot_share: f64,
}

#[derive(Serialize)]
struct BacktestJson {
    gpu: String,
    provider: String,
    train_hours: usize,
    test_hours: usize,
    plan_cost: f64,
    on_demand_cost: f64,
    hindsight_cost: f64,
    savings_pct: f64,
    gap_to_hindsight_pct: f64,
}

#[derive(Serialize)]
struct MarketPlan {
    /// The demand series it was planned for.
    #[serde(skip)]
    demand: DemandKey,
    provider: String,
    region: String,
    /// Mean demand expected over the next 4 weeks.
    forecast: DemandForecast,
    #[serde(flatten)]
    plan: GpuPlan,
}

#[derive(Serialize)]
struct PlanJson {
    currency: Currency,
    recommendations: Vec<RecommendationJson>,
    total_expected_cost: f64,
    total_on_demand_cost: f64,
    plans: Vec<MarketPlan>,
    backtest: Vec<BacktestJson>,
    /// GPU types left out for want of a price.
    left_out: Vec<String>,
}

pub(crate) fn plan(ctx: &Context, args: &CommitPlanArgs, out: &mut impl Write) -> Result<ExitStatus> {
    if args.max_unused.is_some_and(|m| m.is_nan() || m < 0.0) {
        bail!("`--max-unused` must be a number of GPU-hours >= 0");
    }
    if !(0.0..=1.0).contains(&args.interruptible) {
        bail!("`--interruptible {}` must be a share between 0 and 1", args.interruptible);
    }
    let currency = ctx.currency.unwrap_or(Currency::USD);
    let demand = match (&args.usage, &args.focus) {
        (Some(p), _) => read_demand_csv(p, args.interruptible)?,
        (None, Some(p)) => demand_from_charges(&read_focus(&ctx.catalog, p)?, args.interruptible)?,
        (None, None) => demand_from_charges(&CostLedger::open()?.charges(None, None, &[])?, args.interruptible)?,
    };
    if demand.is_empty() {
        bail!(
            "no GPU demand: give `--usage FILE` (timestamp,gpu,count), `--focus FILE` with GPU instance rows, or record usage in the ledger"
        );
    }
    let lookback_h =
        (parse_duration_s(&args.lookback).map_err(|e| anyhow!("`--lookback`: {e}"))? / 3600).max(1) as usize;
    let settings =
        CommitSettings { short_lookback_hours: lookback_h, max_unused_gpu_hours: args.max_unused, guards: true };
    let overrides: BTreeMap<String, f64> = match &args.commit_price {
        None => BTreeMap::new(),
        Some(text) => text
            .split(',')
            .map(|p| {
                let (k, v) =
                    p.split_once('=').ok_or_else(|| anyhow!("`--commit-price {text}`: expected 1y=P1,3y=P3"))?;
                let v: f64 = v.trim().parse().map_err(|_| anyhow!("`--commit-price`: `{v}` is not a price"))?;
                Ok((k.trim().to_string(), v))
            })
            .collect::<Result<_>>()?,
    };
    let mut result = PlanJson {
        currency,
        recommendations: Vec::new(),
        total_expected_cost: 0.0,
        total_on_demand_cost: 0.0,
        plans: Vec::new(),
        backtest: Vec::new(),
        left_out: Vec::new(),
    };
    let contract = args.contract.as_deref().map(parse_contract).transpose()?;
    // The contract is offered for the `--gpu` type only.
    let contract_for = |gpu: &str| -> Option<&BlockContract> {
        let named = args.gpu.as_deref()?;
        let same = named == gpu || ctx.catalog.gpu(named).map(|s| &s.name) == ctx.catalog.gpu(gpu).map(|s| &s.name);
        if same { contract.as_ref() } else { None }
    };
    let mut unpriced = Vec::new();
    for ((gpu, provider), d) in &demand {
        // Planned on: the history, then (if asked) the forecast path of the next weeks.
        let planned: Vec<f64> = match args.forecast_weeks {
            Some(w) if w > 0 => d.hourly.iter().copied().chain(forecast_path(&d.hourly, w as usize)).collect(),
            _ => d.hourly.clone(),
        };
        let providers = if provider.is_empty() { args.provider.clone() } else { vec![provider.clone()] };
        let mut markets = market_prices(ctx, gpu, &providers, &args.term, currency);
        if args
            .gpu
            .as_deref()
            .is_some_and(|g| ctx.catalog.gpu(g).map(|s| &s.name) == ctx.catalog.gpu(gpu).map(|s| &s.name) || g == gpu)
        {
            // What-if prices replace the catalog's: one market, priced as the user says.
            let base = markets.iter().map(|(_, p)| p.clone()).min_by(|a, b| a.on_demand.total_cmp(&b.on_demand));
            let on_demand = args.on_demand_price.or(base.as_ref().map(|b| b.on_demand)).unwrap_or(0.0);
            let instruments = if overrides.is_empty() {
                base.as_ref().map(|b| b.instruments.clone()).unwrap_or_default()
            } else {
                overrides
                    .iter()
                    .map(|(t, r)| Instrument { name: format!("reserved_{t}"), rate: *r, long_term: t == "3y" })
                    .collect()
            };
            let spot = base.and_then(|b| b.spot);
            markets = vec![(
                Market { provider: "what-if".into(), region: "*".into() },
                GpuPrices { on_demand, spot, instruments },
            )];
        }
        let best = markets
            .into_iter()
            .filter(|(_, p)| p.on_demand > 0.0)
            .map(|(m, prices)| {
                let plan =
                    plan_gpu_with_contract(gpu, &planned, d.interruptible, &prices, &settings, contract_for(gpu));
                (m, prices, plan)
            })
            .min_by(|a, b| a.2.expected_cost.total_cmp(&b.2.expected_cost));
        let Some((market, prices, plan)) = best else {
            let at = if providers.is_empty() { String::new() } else { format!(" at {}", providers.join(", ")) };
            // One unpriced GPU type does not sink the plan of the others; it is named, and the
            // run fails only when nothing could be planned.
            unpriced.push(format!(
                "no on-demand price for `{gpu}`{at} in the catalog: use --gpu {gpu} --on-demand-price P --commit-price 1y=P1,3y=P3"
            ));
            result.left_out.push(gpu.clone());
            continue;
        };
        for l in &plan.lines {
            result.recommendations.push(RecommendationJson {
                gpu: gpu.clone(),
                provider: market.provider.clone(),
                region: market.region.clone(),
                instrument: l.instrument.clone(),
                term: match l.instrument.as_str() {
                    "committed" => Some("contract".into()),
                    "contract" => Some("1 month, pooled".into()),
                    "subscription_month" => Some("1 month".into()),
                    other => other.strip_prefix("reserved_").map(String::from),
                },
                commit_gpus: l.commit_gpus,
                gpu_hours: l.gpu_hours,
                cost: l.cost,
                expected_cost: plan.expected_cost,
                on_demand_cost: plan.on_demand_cost,
                savings_pct: plan.savings_pct,
                utilization: plan.utilization,
                coverage: plan.coverage,
                break_even_utilization: l.break_even_utilization,
                spot_share: plan.spot_share,
            });
        }
        result.total_expected_cost += plan.expected_cost;
        result.total_on_demand_cost += plan.on_demand_cost;
        if let Some(weeks) = args.train_weeks {
            let split = (weeks as usize * 168).min(d.hourly.len());
            let (train, test) = d.hourly.split_at(split);
            if !train.is_empty() && !test.is_empty() {
                let trained =
                    plan_gpu_with_contract(gpu, train, d.interruptible, &prices, &settings, contract_for(gpu));
                let hindsight = plan_gpu_with_contract(
                    gpu,
                    test,
                    d.interruptible,
                    &prices,
                    &CommitSettings { guards: false, max_unused_gpu_hours: None, ..settings.clone() },
                    contract_for(gpu),
                );
                // Cost of the trained commitments on the held-out demand.
                let plan_cost = cost_of_plan_on(&trained, test, &prices, contract_for(gpu));
                let od = test.iter().sum::<f64>() * prices.on_demand;
                result.backtest.push(BacktestJson {
                    gpu: gpu.clone(),
                    provider: market.provider.clone(),
                    train_hours: train.len(),
                    test_hours: test.len(),
                    plan_cost,
                    on_demand_cost: od,
                    hindsight_cost: hindsight.expected_cost,
                    savings_pct: if od > 0.0 { (1.0 - plan_cost / od) * 100.0 } else { 0.0 },
                    gap_to_hindsight_pct: if hindsight.expected_cost > 0.0 {
                        (plan_cost / hindsight.expected_cost - 1.0) * 100.0
                    } else {
                        0.0
                    },
                });
            }
        }
        result.plans.push(MarketPlan {
            demand: (gpu.clone(), provider.clone()),
            provider: market.provider,
            region: market.region,
            forecast: forecast_demand(&d.hourly, 4),
            plan,
        });
    }
    if result.plans.is_empty()
        && let Some(first) = unpriced.first()
    {
        bail!("{first}");
    }
    for message in &unpriced {
        eprintln!("warning: {message}; left out of the plan");
    }
    if let Some(path) = &args.plot {
        let charts: Vec<Panel> = result
            .plans
            .iter()
            .filter_map(|mp| {
                let d = demand.get(&mp.demand)?;
                let levels = mp
                    .plan
                    .lines
                    .iter()
                    .filter(|l| l.commit_gpus > 0.0)
                    .map(|l| (l.instrument.clone(), l.commit_gpus))
                    .collect();
                Some((format!("{} at {} {}", mp.plan.gpu, mp.provider, mp.region), d.hourly.as_slice(), levels))
            })
            .collect();
        if path.extension().is_some_and(|e| !e.eq_ignore_ascii_case("svg")) {
            bail!("`--plot {}`: only SVG charts are written; name the file *.svg", path.display());
        }
        std::fs::write(path, svg_chart(&charts)).map_err(|e| anyhow!("{}: cannot write: {e}", path.display()))?;
    }
    if args.json {
        write_json(out, &result)?;
        return Ok(ExitStatus::Success);
    }
    for MarketPlan { demand: key, provider, region, forecast, plan } in &result.plans {
        writeln!(
            out,
            "{} at {provider} {region}: {} h planned; plan {:.2} vs {:.2} {currency} all on-demand ({:.1}% saved); commitment utilisation {:.1}%, coverage {:.1}%, spot share {:.1}%",
            plan.gpu,
            plan.hours,
            plan.expected_cost,
            plan.on_demand_cost,
            shown(plan.savings_pct, 1),
            shown(plan.utilization * 100.0, 1),
            shown(plan.coverage * 100.0, 1),
            shown(plan.spot_share * 100.0, 1)
        )?;
        let mut t = table(&["instrument", "GPUs committed", "GPU-hours", "cost", "break-even use"]);
        for l in &plan.lines {
            t.add_row(vec![
                Cell::new(&l.instrument),
                Cell::new(format!("{:.2}", l.commit_gpus)),
                Cell::new(format!("{:.1}", l.gpu_hours)),
                Cell::new(format!("{:.2}", l.cost)),
                Cell::new(l.break_even_utilization.map(|b| format!("{:.1}%", b * 100.0)).unwrap_or_default()),
            ]);
        }
        align_right(&mut t, &[1, 2, 3, 4]);
        writeln!(out, "{t}")?;
        writeln!(
            out,
            "forecast, next {} weeks: {:.1} GPUs on average (80%: {:.1}-{:.1}), trend {:+.2} GPUs/week",
            forecast.weeks,
            forecast.mean_gpus,
            forecast.low_gpus,
            forecast.high_gpus,
            shown(forecast.trend_gpus_per_week, 2)
        )?;
        if let Some(d) = demand.get(key) {
            writeln!(out, "{}", chart(&d.hourly, plan.lines.iter().map(|l| l.commit_gpus).sum()))?;
        }
    }
    for b in &result.backtest {
        writeln!(
            out,
            "backtest {} at {}: trained on {} h, tested on {} h: plan {:.2}, all on-demand {:.2} ({:.1}% saved), hindsight {:.2} ({:+.1}% gap)",
            b.gpu,
            b.provider,
            b.train_hours,
            b.test_hours,
            b.plan_cost,
            b.on_demand_cost,
            shown(b.savings_pct, 1),
            b.hindsight_cost,
            shown(b.gap_to_hindsight_pct, 1)
        )?;
    }
    writeln!(
        out,
        "total: {:.2} {currency} vs {:.2} all on-demand",
        result.total_expected_cost, result.total_on_demand_cost
    )?;
    Ok(ExitStatus::Success)
}

/// `min=GPU-HOURS,rate=P,overage=P`.
fn parse_contract(text: &str) -> Result<BlockContract> {
    let mut fields: BTreeMap<&str, f64> = BTreeMap::new();
    for part in text.split(',') {
        let (k, v) = part
            .split_once('=')
            .ok_or_else(|| anyhow!("`--contract {text}`: expected min=GPU-HOURS,rate=P,overage=P"))?;
        let v: f64 = v
            .trim()
            .parse()
            .ok()
            .filter(|v: &f64| v.is_finite() && *v >= 0.0)
            .ok_or_else(|| anyhow!("`--contract`: {k}=`{v}` is not a non-negative number"))?;
        fields.insert(k.trim(), v);
    }
    let get = |k: &str| fields.get(k).copied().ok_or_else(|| anyhow!("`--contract {text}`: missing `{k}=`"));
    Ok(BlockContract {
        name: "contract".into(),
        rate: get("rate")?,
        overage: get("overage")?,
        min_gpu_hours: get("min")?,
    })
}

/// `value` rounded to the `decimals` it is printed with, without a sign on zero: float noise
/// (`-1e-15`) would otherwise print as `-0.0`.
fn shown(value: f64, decimals: i32) -> f64 {
    let scale = 10f64.powi(decimals);
    let rounded = (value * scale).round() / scale;
    if rounded == 0.0 { 0.0 } else { rounded }
}
