//! Waste: idle GPUs from utilisation samples, start/stop churn, and daily spend anomalies.

use std::collections::BTreeMap;
use std::io::Write;
use std::str::FromStr;

use anyhow::{Result, anyhow, bail};
use comfy_table::Cell;
use gpubroker_core::units::parse_duration_s;
use gpubroker_core::{Currency, Decimal, Money};
use gpubroker_ledger::{Charge, GroupBy, Sample, idle_spans};
use serde::Serialize;

use super::jobs::{home, open_store};
use super::usage::parse_time;
use crate::ExitStatus;
use crate::args::{CostAnomaliesArgs, CostIdleArgs, UsageSamplesArgs};
use crate::context::Context;
use crate::output::{align_right, money, table, write_json};

/// Samples further apart than this break an idle span (no evidence in between).
const MAX_SAMPLE_GAP_MS: i64 = 5 * 60_000;
/// A charge shorter than this counts towards churn.
const CHURN_MAX_S: i64 = 600;
/// This many short charges of one resource in one day is churn.
const CHURN_PER_DAY: usize = 5;

fn parse_nvidia_smi(path: &std::path::Path) -> Result<Vec<Sample>> {
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| anyhow!("{shown}: cannot read: {e}"))?;
    let mut lines = text.lines().enumerate();
    let header = lines.next().map(|(_, h)| h).unwrap_or("");
    let cols: Vec<String> = header.split(',').map(|c| c.trim().to_ascii_lowercase()).collect();
    let find = |name: &str| cols.iter().position(|c| c.starts_with(name));
    let (Some(ti), Some(gi), Some(ui)) = (find("timestamp"), find("index"), find("utilization.gpu")) else {
        bail!(
            "{shown}:1: header: expected the columns timestamp, index, utilization.gpu (nvidia-smi --query-gpu=timestamp,index,utilization.gpu --format=csv)"
        );
    };
    let mut out = Vec::new();
    for (i, line) in lines {
        if line.trim().is_empty() {
            continue;
        }
        let cells: Vec<&str> = line.split(',').map(str::trim).collect();
        let err = |field: &str, m: String| anyhow!("{shown}:{}: {field}: {m}", i + 1);
        let get = |j: usize| cells.get(j).copied().unwrap_or("");
        // nvidia-smi writes `2026/11/29 10:00:00.123`.
        let t = get(ti).replace('/', "-");
        let at = parse_time(&t).map_err(|m| err("timestamp", m))?;
        let gpu: u32 = get(gi).parse().map_err(|_| err("index", format!("`{}` is not a GPU index", get(gi))))?;
        let util_text = get(ui).trim_end_matches('%').trim();
        let util: f64 =
            util_text.parse().map_err(|_| err("utilization.gpu", format!("`{}` is not a percentage", get(ui))))?;
        if !(0.0..=100.0).contains(&util) {
            return Err(err("utilization.gpu", format!("`{util}` is outside 0-100")));
        }
        out.push(Sample { at_ms: at.as_millisecond(), gpu, util_pct: util });
    }
    Ok(out)
}

/// `DCGM_FI_DEV_GPU_UTIL{gpu="0",...} 87 [timestamp_ms]`; a sample without a timestamp is dated now.
fn parse_dcgm(path: &std::path::Path, now_ms: i64) -> Result<Vec<Sample>> {
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| anyhow!("{shown}: cannot read: {e}"))?;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if !line.starts_with("DCGM_FI_DEV_GPU_UTIL") {
            continue;
        }
        let err = |m: String| anyhow!("{shown}:{}: DCGM_FI_DEV_GPU_UTIL: {m}", i + 1);
        let labels_end = line.find('}').ok_or_else(|| err("expected labels in braces".into()))?;
        let labels = &line[line.find('{').unwrap_or(0) + 1..labels_end];
        let gpu = labels
            .split(',')
            .find_map(|kv| kv.trim().strip_prefix("gpu=\"").and_then(|v| v.strip_suffix('"')))
            .and_then(|v| v.parse::<u32>().ok())
            .ok_or_else(|| err("no `gpu` label".into()))?;
        let mut rest = line[labels_end + 1..].split_whitespace();
        let util: f64 = rest.next().and_then(|v| v.parse().ok()).ok_or_else(|| err("no value".into()))?;
        let at_ms = rest.next().and_then(|v| v.parse::<i64>().ok()).unwrap_or(now_ms);
        out.push(Sample { at_ms, gpu, util_pct: util.clamp(0.0, 100.0) });
    }
    if out.is_empty() {
        bail!("{shown}: no DCGM_FI_DEV_GPU_UTIL samples");
    }
    Ok(out)
}

/// Samples this machine's GPUs through NVML, `count` times `interval_s` apart.
fn sample_nvml(count: u32, interval_s: u64) -> Result<Vec<Sample>> {
    let nvml = nvml_wrapper::Nvml::init().map_err(|e| {
        anyhow!("NVML is not available on this machine ({e}); use `--nvidia-smi FILE` or `--dcgm FILE`")
    })?;
    let devices = nvml.device_count().map_err(|e| anyhow!("NVML: cannot count GPUs: {e}"))?;
    let mut out = Vec::new();
    for i in 0..count.max(1) {
        if i > 0 {
            std::thread::sleep(std::time::Duration::from_secs(interval_s));
        }
        let at_ms = gpubroker_core::Clock::System.now().as_millisecond();
        for gpu in 0..devices {
            let device = nvml.device_by_index(gpu).map_err(|e| anyhow!("NVML: GPU {gpu}: {e}"))?;
            let util = device.utilization_rates().map_err(|e| anyhow!("NVML: GPU {gpu} utilisation: {e}"))?;
            out.push(Sample { at_ms, gpu, util_pct: f64::from(util.gpu) });
        }
    }
    Ok(out)
}

pub(crate) fn samples(args: &UsageSamplesArgs, out: &mut impl Write) -> Result<ExitStatus> {
    let now = gpubroker_core::Clock::System.now().as_millisecond();
    let samples = match (&args.nvidia_smi, &args.dcgm, args.nvml) {
        (Some(p), _, _) => parse_nvidia_smi(p)?,
        (None, Some(p), _) => parse_dcgm(p, now)?,
        (None, None, true) => {
            let interval = parse_duration_s(&args.interval).map_err(|e| anyhow!("`--interval`: {e}"))?;
            sample_nvml(args.count, interval)?
        }
        (None, None, false) => bail!("give `--nvidia-smi FILE`, `--dcgm FILE` or `--nvml`"),
    };
    let store = open_store(&home()?)?;
    let added = store.add_samples(&args.resource, &samples)?;
    writeln!(out, "stored {added} new samples for `{}` ({} read)", args.resource, samples.len())?;
    Ok(ExitStatus::Success)
}

#[derive(Serialize)]
struct IdleRow {
    resource: String,
    idle_spans: Vec<(String, String)>,
    idle_hours: f64,
    idle_cost: Decimal,
    currency: Currency,
    idle_now: bool,
    stopped_job: Option<i64>,
}

#[derive(Serialize)]
struct ChurnRow {
    resource: String,
    day: String,
    short_charges: usize,
}

#[derive(Serialize)]
struct IdleReport {
    threshold_pct: f64,
    window_s: u64,
    resources: Vec<IdleRow>,
    idle_cost: Decimal,
    currency: Currency,
    churn: Vec<ChurnRow>,
    forgotten: Vec<Forgotten>,
}

/// A managed job still running past its deadline, or for days without one.
#[derive(Serialize)]
struct Forgotten {
    job: i64,
    name: String,
    running_hours: f64,
    reason: String,
}

/// Running this long without a deadline looks forgotten.
const FORGOTTEN_AFTER_MS: i64 = 72 * 3_600_000;

fn iso(ms: i64) -> String {
    jiff::Timestamp::from_millisecond(ms).map(|t| t.to_string()).unwrap_or_default()
}

pub(crate) fn idle(ctx: &Context, args: &CostIdleArgs, out: &mut impl Write) -> Result<ExitStatus> {
    if !(args.threshold > 0.0 && args.threshold <= 100.0) {
        bail!("`--threshold {}` must be a percentage between 0 and 100", args.threshold);
    }
    let window_s = parse_duration_s(&args.window).map_err(|e| anyhow!("`--window`: {e}"))?;
    let report = analyse_idle(ctx, args.threshold, window_s, args.stop, &args.window)?;
    print_idle(&report, args, out)
}

/// Idle cost under the default rule (GPUs under 10% for 15 minutes), for `cost report`;
/// `None` when no utilisation samples were recorded.
pub(crate) fn default_idle_cost(ctx: &Context) -> Result<Option<Decimal>> {
    if open_store(&home()?)?.sampled_resources()?.is_empty() {
        return Ok(None);
    }
    Ok(Some(analyse_idle(ctx, 10.0, 900, false, "15m")?.idle_cost))
}

fn analyse_idle(ctx: &Context, threshold: f64, window_s: u64, stop: bool, window_text: &str) -> Result<IdleReport> {
    let store = open_store(&home()?)?;
    let now = ctx.clock.now().as_millisecond();
    let currency = ctx.currency.unwrap_or(Currency::USD);
    let fx = ctx.catalog.fx();
    let charges = super::usage::CostLedger::open()?.charges(None, None, &[])?;
    let mut by_resource: BTreeMap<&str, Vec<&Charge>> = BTreeMap::new();
    for c in &charges {
        by_resource.entry(c.resource_id.as_str()).or_default().push(c);
    }
    // Running managed attempts are resources too (key `JOB-ATTEMPT`), priced as they accrue.
    let mut running: BTreeMap<String, (i64, Money, i64)> = BTreeMap::new();
    for job in store.jobs(true)? {
        for a in store.attempts(job.id)?.into_iter().filter(|a| !a.state.is_over()) {
            let price = Money::new(
                Decimal::from_str(&a.hourly_price).unwrap_or_default(),
                a.currency.parse().unwrap_or(Currency::USD),
            );
            running.insert(a.key.clone(), (job.id, price, a.started_at_ms.unwrap_or(now)));
        }
    }
    let mut rows = Vec::new();
    let mut total = Decimal::ZERO;
    for resource in store.sampled_resources()? {
        let samples = store.samples(&resource)?;
        let spans = idle_spans(&samples, threshold, window_s as i64 * 1000, MAX_SAMPLE_GAP_MS);
        if spans.is_empty() {
            continue;
        }
        let mut cost = Decimal::ZERO;
        for span in &spans {
            for c in by_resource.get(resource.as_str()).into_iter().flatten() {
                let overlap = (span.end_ms.min(c.end_ms) - span.start_ms.max(c.start_ms)).max(0);
                let length = (c.end_ms - c.start_ms).max(1);
                if overlap > 0 {
                    cost += fx
                        .convert(
                            Money::new(c.billed_cost * Decimal::from(overlap) / Decimal::from(length), c.currency),
                            currency,
                        )?
                        .amount;
                }
            }
            if let Some((_, price, started)) = running.get(&resource) {
                let overlap = (span.end_ms - span.start_ms.max(*started)).max(0);
                cost += fx
                    .convert(
                        Money::new(price.amount * Decimal::from(overlap) / Decimal::from(3_600_000), price.currency),
                        currency,
                    )?
                    .amount;
            }
        }
        let last_sample = samples.last().map(|s| s.at_ms).unwrap_or(0);
        let idle_now = spans.last().is_some_and(|s| s.end_ms == last_sample) && now - last_sample <= MAX_SAMPLE_GAP_MS;
        let mut stopped_job = None;
        if stop
            && idle_now
            && let Some((job_id, _, _)) = running.get(&resource)
        {
            store.request_cancel(*job_id, now)?;
            store.log(*job_id, now, "idle-stop", &format!("GPUs under {threshold}% for {window_text}"))?;
            stopped_job = Some(*job_id);
        }
        total += cost;
        rows.push(IdleRow {
            resource,
            idle_hours: spans.iter().map(|s| (s.end_ms - s.start_ms) as f64 / 3_600_000.0).sum(),
            idle_spans: spans.iter().map(|s| (iso(s.start_ms), iso(s.end_ms))).collect(),
            idle_cost: cost.round_dp(6),
            currency,
            idle_now,
            stopped_job,
        });
    }
    // Churn: many short-lived charges of one resource in a day.
    let mut short: BTreeMap<(String, String), usize> = BTreeMap::new();
    for c in &charges {
        if c.end_ms - c.start_ms < CHURN_MAX_S * 1000 {
            *short.entry((c.resource_id.clone(), iso(c.start_ms).chars().take(10).collect())).or_default() += 1;
        }
    }
    let churn: Vec<ChurnRow> = short
        .into_iter()
        .filter(|(_, n)| *n >= CHURN_PER_DAY)
        .map(|((resource, day), short_charges)| ChurnRow { resource, day, short_charges })
        .collect();
    let mut forgotten = Vec::new();
    for job in store.jobs(true)? {
        let Ok(spec) = serde_json::from_str::<gpubroker_run::JobSpec>(&job.spec) else { continue };
        let running_ms = now - job.submitted_at_ms;
        let reason = match spec.deadline_at_ms {
            Some(d) if now > d => Some(format!("past its deadline by {:.1} h", (now - d) as f64 / 3_600_000.0)),
            None if running_ms > FORGOTTEN_AFTER_MS => Some("running for days without a deadline".to_string()),
            _ => None,
        };
        if let Some(reason) = reason {
            forgotten.push(Forgotten {
                job: job.id,
                name: job.name.clone(),
                running_hours: running_ms as f64 / 3_600_000.0,
                reason,
            });
        }
    }
    Ok(IdleReport {
        forgotten,
        threshold_pct: threshold,
        window_s,
        resources: rows,
        idle_cost: total.round_dp(6),
        currency,
        churn,
    })
}

fn print_idle(report: &IdleReport, args: &CostIdleArgs, out: &mut impl Write) -> Result<ExitStatus> {
    let currency = report.currency;
    if args.json {
        write_json(out, report)?;
        return Ok(ExitStatus::Success);
    }
    let mut t = table(&["resource", "idle spans", "idle hours", "idle cost", "now"]);
    for r in &report.resources {
        t.add_row(vec![
            Cell::new(&r.resource),
            Cell::new(r.idle_spans.len()),
            Cell::new(format!("{:.2}", r.idle_hours)),
            Cell::new(money(r.idle_cost, currency)),
            Cell::new(match (r.idle_now, r.stopped_job) {
                (_, Some(j)) => format!("idle: job {j} cancelled"),
                (true, None) => "idle".into(),
                _ => String::new(),
            }),
        ]);
    }
    align_right(&mut t, &[1, 2, 3]);
    writeln!(out, "{t}")?;
    writeln!(
        out,
        "idle cost (GPUs under {}% for at least {}): {}",
        args.threshold,
        args.window,
        money(report.idle_cost, currency)
    )?;
    for f in &report.forgotten {
        writeln!(out, "forgotten? job {} `{}` has run {:.1} h: {}", f.job, f.name, f.running_hours, f.reason)?;
    }
    for c in &report.churn {
        writeln!(
            out,
            "churn: `{}` started {} times for under {} min on {}",
            c.resource,
            c.short_charges,
            CHURN_MAX_S / 60,
            c.day
        )?;
    }
    Ok(ExitStatus::Success)
}

#[derive(Serialize)]
struct Anomaly {
    key: String,
    day: String,
    spend: Decimal,
    baseline: Decimal,
    currency: Currency,
    root_cause: String,
}

pub(crate) fn anomalies(ctx: &Context, args: &CostAnomaliesArgs, out: &mut impl Write) -> Result<ExitStatus> {
    if args.baseline_days == 0 || args.factor <= 1.0 {
        bail!("`--baseline-days` must be at least 1 and `--factor` above 1");
    }
    let mut ledger = super::usage::CostLedger::open()?;
    let currency = ctx.currency.unwrap_or(Currency::USD);
    let fx = ctx.catalog.fx();
    let by = GroupBy::parse(&args.by);
    let factor = Decimal::try_from(args.factor).map_err(|_| anyhow!("bad --factor"))?;
    let min = Decimal::try_from(args.min).map_err(|_| anyhow!("bad --min"))?;
    // Spend per (key, day), and per (key, day, dimension=value) for the root cause.
    let mut daily: BTreeMap<(String, String), Decimal> = BTreeMap::new();
    let mut parts: BTreeMap<(String, String, String), Decimal> = BTreeMap::new();
    let dims = ["provider", "gpu", "pricing", "service", "region"];
    for c in ledger.charges(None, None, &[])? {
        let key = by.key(&c);
        let day: String = iso(c.start_ms).chars().take(10).collect();
        let amount = fx.convert(Money::new(c.billed_cost, c.currency), currency)?.amount;
        *daily.entry((key.clone(), day.clone())).or_default() += amount;
        for d in dims {
            let value = GroupBy::parse(d).key(&c);
            *parts.entry((key.clone(), day.clone(), format!("{d}={value}"))).or_default() += amount;
        }
    }
    let days_of = |key: &str| -> Vec<(String, Decimal)> {
        daily.iter().filter(|((k, _), _)| k == key).map(|((_, d), v)| (d.clone(), *v)).collect()
    };
    let keys: std::collections::BTreeSet<String> = daily.keys().map(|(k, _)| k.clone()).collect();
    let mut found = Vec::new();
    for key in keys {
        let series = days_of(&key);
        for (i, (day, spend)) in series.iter().enumerate() {
            // Baseline: the median of the previous days that had spend (up to baseline_days).
            let start = i.saturating_sub(args.baseline_days as usize);
            let mut window: Vec<Decimal> = series[start..i].iter().map(|(_, v)| *v).collect();
            if window.len() < 3 {
                continue;
            }
            window.sort();
            let baseline = window[window.len() / 2];
            if *spend > baseline * factor && *spend - baseline >= min {
                // Root cause: the dimension value whose spend grew most against its own average.
                let prev_days: Vec<&String> = series[start..i].iter().map(|(d, _)| d).collect();
                let n = Decimal::from(prev_days.len());
                let mut best = (String::new(), Decimal::MIN);
                for ((k, d, dim), v) in &parts {
                    if k != &key || d != day {
                        continue;
                    }
                    let before: Decimal = prev_days
                        .iter()
                        .map(|pd| parts.get(&(k.clone(), (*pd).clone(), dim.clone())).copied().unwrap_or_default())
                        .sum::<Decimal>()
                        / n;
                    let growth = *v - before;
                    if growth > best.1 {
                        best = (dim.clone(), growth);
                    }
                }
                found.push(Anomaly {
                    key: key.clone(),
                    day: day.clone(),
                    spend: spend.round_dp(2),
                    baseline: baseline.round_dp(2),
                    currency,
                    root_cause: best.0,
                });
            }
        }
    }
    if args.json {
        write_json(out, &found)?;
        return Ok(ExitStatus::Success);
    }
    if found.is_empty() {
        writeln!(
            out,
            "no anomalies: no day's spend exceeded {}x its {}-day baseline by {} or more",
            args.factor,
            args.baseline_days,
            money(min, currency)
        )?;
        return Ok(ExitStatus::Success);
    }
    let mut t = table(&[args.by.as_str(), "day", "spend", "baseline", "root cause"]);
    for a in &found {
        t.add_row(vec![
            Cell::new(&a.key),
            Cell::new(&a.day),
            Cell::new(money(a.spend, currency)),
            Cell::new(money(a.baseline, currency)),
            Cell::new(&a.root_cause),
        ]);
    }
    align_right(&mut t, &[2, 3]);
    writeln!(out, "{t}")?;
    Ok(ExitStatus::Success)
}
