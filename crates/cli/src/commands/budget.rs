//! Budgets: `budget set`, `budget status` (which fires due alerts), and enforcement at launch.

use std::collections::BTreeMap;
use std::io::Write;
use std::str::FromStr;

use anyhow::{Result, anyhow, bail};
use comfy_table::Cell;
use gpubroker_catalog::Catalog;
use gpubroker_core::{Currency, Decimal, Money};
use gpubroker_ledger::{Budget, Store};
use jiff::civil::Date;
use jiff::{Timestamp, ToSpan};
use serde::Serialize;

use super::jobs::{home, open_store};
use crate::ExitStatus;
use crate::args::{BudgetSetArgs, BudgetStatusArgs};
use crate::context::Context;
use crate::output::{align_right, money, table, write_json};

/// The calendar period (UTC) containing `now`: [start, end).
fn period_bounds(period: &str, now: Timestamp) -> Result<(Timestamp, Timestamp)> {
    let today: Date = now.to_zoned_datetime(jiff::tz::TimeZone::UTC).date();
    let (start, end) = match period {
        "daily" => (today, today.checked_add(1.day())?),
        "weekly" => {
            let back = i64::from(today.weekday().to_monday_zero_offset());
            let monday = today.checked_sub(back.days())?;
            (monday, monday.checked_add(7.days())?)
        }
        "monthly" => {
            let first = today.first_of_month();
            (first, first.checked_add(1.month())?)
        }
        other => bail!("unknown period `{other}`: expected daily, weekly or monthly"),
    };
    let at = |d: Date| -> Result<Timestamp> { Ok(d.to_zoned_datetime(jiff::tz::TimeZone::UTC)?.timestamp()) };
    Ok((at(start)?, at(end)?))
}

fn in_scope(scope: &BTreeMap<String, String>, provider: &str, tags: &BTreeMap<String, String>) -> bool {
    scope.iter().all(|(k, v)| if k == "provider" { provider.eq_ignore_ascii_case(v) } else { tags.get(k) == Some(v) })
}

#[derive(Serialize)]
struct BudgetState {
    name: String,
    scope: BTreeMap<String, String>,
    period: String,
    period_start: String,
    period_end: String,
    amount: Decimal,
    currency: Currency,
    spent: Decimal,
    running: Decimal,
    forecast: Decimal,
    spent_pct: Decimal,
    forecast_pct: Decimal,
    alerts_fired: Vec<String>,
    enforce: bool,
}

/// Spend in the budget's current period: ledger charges that started in it, plus what running
/// attempts have cost so far; the forecast extends the period-to-date trend to the period's end
/// and adds the running attempts' burn rate for the hours left.
fn evaluate(
    store: &Store,
    charges: &[gpubroker_ledger::Charge],
    catalog: &Catalog,
    b: &Budget,
    now: Timestamp,
) -> Result<BudgetState> {
    let (start, end) = period_bounds(&b.period, now)?;
    let currency: Currency = b.currency.parse().map_err(|e| anyhow!("budget `{}`: {e}", b.name))?;
    let amount = Decimal::from_str(&b.amount).map_err(|_| anyhow!("budget `{}`: bad amount", b.name))?;
    let fx = catalog.fx();
    let now_ms = now.as_millisecond();
    let mut spent = Decimal::ZERO;
    for c in charges {
        if c.start_ms >= start.as_millisecond()
            && c.start_ms < end.as_millisecond()
            && in_scope(&b.scope, &c.provider, &c.tags)
        {
            spent += fx.convert(Money::new(c.billed_cost, c.currency), currency)?.amount;
        }
    }
    let (mut running, mut burn_per_hour) = (Decimal::ZERO, Decimal::ZERO);
    for job in store.jobs(true)? {
        let mut tags = store.job_tags(job.id)?;
        tags.entry("job".into()).or_insert(job.name.clone());
        tags.entry("queue".into()).or_insert(job.queue.clone());
        for a in store.attempts(job.id)?.iter().filter(|a| !a.state.is_over() && a.started_at_ms.is_some()) {
            if !in_scope(&b.scope, &a.backend, &tags) {
                continue;
            }
            let cur: Currency = a.currency.parse().unwrap_or(Currency::USD);
            running += fx.convert(Money::new(a.cost(now_ms), cur), currency)?.amount;
            burn_per_hour +=
                fx.convert(Money::new(Decimal::from_str(&a.hourly_price).unwrap_or_default(), cur), currency)?.amount;
        }
    }
    let elapsed = Decimal::from((now_ms - start.as_millisecond()).max(1));
    let length = Decimal::from(end.as_millisecond() - start.as_millisecond());
    let hours_left = Decimal::from((end.as_millisecond() - now_ms).max(0)) / Decimal::from(3_600_000);
    let forecast = spent * length / elapsed + running + burn_per_hour * hours_left;
    let pct = |x: Decimal| if amount.is_zero() { Decimal::ZERO } else { (x * Decimal::from(100) / amount).round_dp(1) };
    let fired =
        store.alerts_fired(&b.name, start.as_millisecond())?.into_iter().map(|(t, k, _)| format!("{k} {t}%")).collect();
    Ok(BudgetState {
        name: b.name.clone(),
        scope: b.scope.clone(),
        period: b.period.clone(),
        period_start: start.to_string(),
        period_end: end.to_string(),
        amount,
        currency,
        spent: (spent + running).round_dp(6),
        running: running.round_dp(6),
        forecast: forecast.round_dp(6),
        spent_pct: pct(spent + running),
        forecast_pct: pct(forecast),
        alerts_fired: fired,
        enforce: b.enforce,
    })
}

pub(crate) fn set(ctx: &Context, args: &BudgetSetArgs, out: &mut impl Write) -> Result<ExitStatus> {
    let text = args.amount.join(" ");
    let money = match Decimal::from_str(text.trim()) {
        Ok(d) => Money::new(d, ctx.currency.unwrap_or(Currency::USD)),
        Err(_) => Money::from_str(&text).map_err(|e| anyhow!("`--amount`: {e}"))?,
    };
    if money.amount <= Decimal::ZERO {
        bail!("`--amount {text}` must be more than zero");
    }
    if ctx.catalog.fx().rate(money.currency).is_none() {
        bail!("`--amount {text}`: no exchange rate for {}", money.currency);
    }
    period_bounds(&args.period, ctx.clock.now())?;
    if args.alert.iter().any(|a| *a == 0 || *a > 1000) {
        bail!("`--alert`: thresholds are percentages between 1 and 1000");
    }
    if let Some(url) = &args.webhook
        && !url.starts_with("http://")
    {
        bail!("`--webhook {url}`: only http:// URLs are supported (put a relay in front of https endpoints)");
    }
    let scope = parse_scope(&args.scope)?;
    let mut alerts = args.alert.clone();
    alerts.sort_unstable();
    alerts.dedup();
    let budget = Budget {
        name: args.name.clone(),
        scope,
        amount: money.amount.normalize().to_string(),
        currency: money.currency.to_string(),
        period: args.period.clone(),
        alerts,
        forecast: args.forecast,
        webhook: args.webhook.clone(),
        enforce: args.enforce,
        stop_running: args.stop_running,
    };
    open_store(&home()?)?.set_budget(&budget)?;
    writeln!(
        out,
        "budget `{}`: {} per {} period",
        budget.name,
        money,
        budget.period.trim_end_matches("ly").replace("dai", "day")
    )?;
    Ok(ExitStatus::Success)
}

pub(crate) fn status(ctx: &Context, args: &BudgetStatusArgs, out: &mut impl Write) -> Result<ExitStatus> {
    let home = home()?;
    let store = open_store(&home)?;
    let now = ctx.clock.now();
    let charges = super::usage::CostLedger::open()?.charges(None, None, &[])?;
    let mut states = Vec::new();
    for b in store.budgets()? {
        let state = evaluate(&store, &charges, &ctx.catalog, &b, now)?;
        fire_alerts(&store, &home, &b, &state, now)?;
        if b.stop_running && state.spent >= state.amount {
            stop_jobs_in_scope(&store, &b, now.as_millisecond())?;
        }
        states.push(evaluate(&store, &charges, &ctx.catalog, &b, now)?);
    }
    if args.json {
        write_json(out, &states)?;
        return Ok(ExitStatus::Success);
    }
    let mut t = table(&["budget", "scope", "period", "amount", "spent", "forecast", "alerts fired"]);
    for s in &states {
        let scope: Vec<String> = s.scope.iter().map(|(k, v)| format!("{k}={v}")).collect();
        t.add_row(vec![
            Cell::new(&s.name),
            Cell::new(if scope.is_empty() { "(all)".into() } else { scope.join(",") }),
            Cell::new(&s.period),
            Cell::new(money(s.amount, s.currency)),
            Cell::new(format!("{} ({}%)", money(s.spent, s.currency), s.spent_pct)),
            Cell::new(format!("{} ({}%)", money(s.forecast, s.currency), s.forecast_pct)),
            Cell::new(s.alerts_fired.join(", ")),
        ]);
    }
    align_right(&mut t, &[3, 4, 5]);
    writeln!(out, "{t}")?;
    Ok(ExitStatus::Success)
}

/// Fires each threshold once per period, on actual spend and (if asked) on the forecast:
/// a line on stderr, a line in `$GPUBROKER_HOME/alerts.log`, and the webhook.
fn fire_alerts(store: &Store, home: &std::path::Path, b: &Budget, s: &BudgetState, now: Timestamp) -> Result<()> {
    let (start, _) = period_bounds(&b.period, now)?;
    for &t in &b.alerts {
        let threshold = Decimal::from(t);
        let mut kinds = vec![("actual", s.spent_pct, s.spent)];
        if b.forecast {
            kinds.push(("forecast", s.forecast_pct, s.forecast));
        }
        for (kind, pct, value) in kinds {
            if pct < threshold {
                continue;
            }
            if !store.record_alert(
                &b.name,
                start.as_millisecond(),
                t,
                kind,
                &value.to_string(),
                now.as_millisecond(),
            )? {
                continue;
            }
            let line = format!(
                "alert: budget `{}` {kind} spend {} is {pct}% of {} ({t}% threshold, {} period from {})",
                b.name,
                money(value, s.currency),
                money(s.amount, s.currency),
                b.period,
                s.period_start
            );
            eprintln!("{line}");
            let mut log = std::fs::File::options().create(true).append(true).open(home.join("alerts.log"))?;
            writeln!(log, "{now} {line}")?;
            if let Some(url) = &b.webhook {
                let body = serde_json::json!({
                    "budget": b.name, "kind": kind, "threshold_pct": t, "amount": value, "budget_amount": s.amount,
                    "currency": s.currency, "period_start": s.period_start, "message": line,
                });
                if let Err(e) = post(url, &body.to_string()) {
                    eprintln!("warning: webhook {url} failed: {e}");
                }
            }
        }
    }
    Ok(())
}

/// Cancels the running jobs a spent budget covers, saying why in each job's history.
fn stop_jobs_in_scope(store: &Store, b: &Budget, now_ms: i64) -> Result<()> {
    for job in store.jobs(true)? {
        let mut tags = store.job_tags(job.id)?;
        tags.entry("job".into()).or_insert(job.name.clone());
        tags.entry("queue".into()).or_insert(job.queue.clone());
        if in_scope(&b.scope, "local", &tags) && !job.cancel_requested {
            store.request_cancel(job.id, now_ms)?;
            store.log(job.id, now_ms, "budget-stop", &format!("budget `{}` is spent", b.name))?;
            eprintln!("stopped job {} `{}`: budget `{}` is spent", job.id, job.name, b.name);
        }
    }
    Ok(())
}

/// A minimal HTTP/1.1 POST of JSON to an http:// URL.
fn post(url: &str, body: &str) -> Result<()> {
    use std::io::Read;
    let rest = url.strip_prefix("http://").ok_or_else(|| anyhow!("not an http:// URL"))?;
    let (host, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let addr = if host.contains(':') { host.to_string() } else { format!("{host}:80") };
    let mut stream = std::net::TcpStream::connect(&addr)?;
    stream.set_read_timeout(Some(std::time::Duration::from_secs(5)))?;
    let request = format!(
        "POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes())?;
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    let status = response.split_whitespace().nth(1).unwrap_or("");
    if !status.starts_with('2') {
        bail!("HTTP status `{status}`");
    }
    Ok(())
}

/// Refuses a launch whose tags fall in an enforced budget that is spent.
pub(crate) fn enforce(store: &Store, catalog: &Catalog, tags: &BTreeMap<String, String>, now_ms: i64) -> Result<()> {
    let now = Timestamp::from_millisecond(now_ms)?;
    let enforced: Vec<Budget> = store.budgets()?.into_iter().filter(|b| b.enforce).collect();
    if enforced.is_empty() {
        return Ok(());
    }
    let charges = super::usage::CostLedger::open()?.charges(None, None, &[])?;
    for b in enforced.iter() {
        // Launches run on `local` here; a `provider` scope matches it by name.
        if !in_scope(&b.scope, "local", tags) {
            continue;
        }
        let s = evaluate(store, &charges, catalog, b, now)?;
        if s.spent >= s.amount {
            bail!(
                "launch refused: budget `{}` has spent {} of {} this {} period (enforced); raise it with `gpubroker budget set {} --amount ...`",
                b.name,
                money(s.spent, s.currency),
                money(s.amount, s.currency),
                b.period,
                b.name
            );
        }
    }
    Ok(())
}

fn parse_scope(scope: &[String]) -> Result<BTreeMap<String, String>> {
    let mut out = BTreeMap::new();
    for s in scope {
        let (k, v) = s.split_once('=').ok_or_else(|| anyhow!("`--scope {s}`: expected key=value"))?;
        out.insert(k.trim().to_string(), v.trim().to_string());
    }
    Ok(out)
}

pub(crate) fn set_contract(
    ctx: &Context,
    args: &crate::args::ContractSetArgs,
    out: &mut impl Write,
) -> Result<ExitStatus> {
    if args.kind != "hourly" && args.kind != "block" {
        bail!("`--kind {}`: expected hourly or block", args.kind);
    }
    let units =
        Decimal::from_str(args.units.trim()).map_err(|_| anyhow!("`--units {}`: expected a number", args.units))?;
    if units <= Decimal::ZERO {
        bail!("`--units {}` must be more than zero", args.units);
    }
    let rate = Money::from_str(&args.rate).map_err(|e| anyhow!("`--rate`: {e}"))?;
    let overage = Money::from_str(&args.overage).map_err(|e| anyhow!("`--overage`: {e}"))?;
    if rate.currency != overage.currency {
        bail!("`--rate` and `--overage` must be in one currency ({} vs {})", rate.currency, overage.currency);
    }
    if ctx.catalog.fx().rate(rate.currency).is_none() {
        bail!("no exchange rate for {}", rate.currency);
    }
    period_bounds(&args.period, ctx.clock.now())?;
    let contract = gpubroker_ledger::Contract {
        name: args.name.clone(),
        scope: parse_scope(&args.scope)?,
        kind: args.kind.clone(),
        units: units.normalize().to_string(),
        rate: rate.amount.normalize().to_string(),
        overage_rate: overage.amount.normalize().to_string(),
        currency: rate.currency.to_string(),
        period: args.period.clone(),
    };
    open_store(&home()?)?.set_contract(&contract)?;
    writeln!(
        out,
        "contract `{}`: {} {} at {} (overage {})",
        contract.name,
        contract.units,
        if contract.kind == "hourly" { "GPUs every hour" } else { "GPU-hours per period" },
        rate,
        overage
    )?;
    Ok(ExitStatus::Success)
}

#[derive(Serialize)]
struct ContractState {
    name: String,
    kind: String,
    period_start: String,
    committed_units: Decimal,
    used_gpu_hours: Decimal,
    #[serde(flatten)]
    bill: gpubroker_core::commitment::CommitmentBill,
    utilization: Decimal,
    coverage: Decimal,
    effective_per_used_gpu_hour: Option<Decimal>,
    currency: Currency,
}

pub(crate) fn contract_status(ctx: &Context, args: &BudgetStatusArgs, out: &mut impl Write) -> Result<ExitStatus> {
    use gpubroker_core::commitment::{block_commitment, hourly_commitment};
    let store = open_store(&home()?)?;
    let now = ctx.clock.now();
    let all_charges = super::usage::CostLedger::open()?.charges(None, None, &[])?;
    let mut states = Vec::new();
    for c in store.contracts()? {
        let (start, end) = period_bounds(&c.period, now)?;
        let (s, e) =
            (start.as_millisecond(), end.as_millisecond().min(now.as_millisecond().max(start.as_millisecond())));
        // GPU-hours in scope per hour of the period so far.
        let hours = ((e - s) / 3_600_000).max(0) as usize + usize::from((e - s) % 3_600_000 != 0);
        let mut per_hour = vec![Decimal::ZERO; hours];
        for ch in all_charges.iter().filter(|ch| ch.end_ms > s && ch.start_ms < e.max(s + 1)) {
            if !in_scope(&c.scope, &ch.provider, &ch.tags) || ch.gpu_count == 0 {
                continue;
            }
            let mut t = ch.start_ms.max(s);
            while t < ch.end_ms.min(e) {
                let h = ((t - s) / 3_600_000) as usize;
                let hour_end = s + (h as i64 + 1) * 3_600_000;
                let piece = hour_end.min(ch.end_ms).min(e) - t;
                if let Some(slot) = per_hour.get_mut(h) {
                    *slot += Decimal::from(ch.gpu_count) * Decimal::from(piece) / Decimal::from(3_600_000);
                }
                t += piece.max(1);
            }
        }
        let units = Decimal::from_str(&c.units).unwrap_or_default();
        let rate = Decimal::from_str(&c.rate).unwrap_or_default();
        let over = Decimal::from_str(&c.overage_rate).unwrap_or_default();
        let used: Decimal = per_hour.iter().copied().sum();
        let (bill, committed_units) = if c.kind == "hourly" {
            (hourly_commitment(&per_hour, units, rate, over), units * Decimal::from(hours))
        } else {
            (block_commitment(used, units, rate, over), units)
        };
        states.push(ContractState {
            name: c.name.clone(),
            kind: c.kind.clone(),
            period_start: start.to_string(),
            committed_units,
            used_gpu_hours: used.round_dp(6),
            utilization: bill.utilization(committed_units).round_dp(4),
            coverage: bill.coverage().round_dp(4),
            effective_per_used_gpu_hour: (!used.is_zero()).then(|| (bill.billed / used).round_dp(6)),
            currency: c.currency.parse().unwrap_or(Currency::USD),
            bill,
        });
    }
    if args.json {
        write_json(out, &states)?;
        return Ok(ExitStatus::Success);
    }
    let mut t = table(&[
        "contract",
        "kind",
        "used GPU-h",
        "utilisation",
        "coverage",
        "billed",
        "unused (waste)",
        "per used GPU-h",
    ]);
    for s in &states {
        t.add_row(vec![
            Cell::new(&s.name),
            Cell::new(&s.kind),
            Cell::new(format!("{:.1}", s.used_gpu_hours)),
            Cell::new(format!("{:.1}%", s.utilization * Decimal::from(100))),
            Cell::new(format!("{:.1}%", s.coverage * Decimal::from(100))),
            Cell::new(money(s.bill.billed, s.currency)),
            Cell::new(money(s.bill.unused, s.currency)),
            Cell::new(s.effective_per_used_gpu_hour.map(|v| money(v, s.currency)).unwrap_or_else(|| "-".into())),
        ]);
    }
    align_right(&mut t, &[2, 3, 4, 5, 6, 7]);
    writeln!(out, "{t}")?;
    Ok(ExitStatus::Success)
}

/// One part of an hourly usage row once a contract re-prices it.
pub(crate) struct OverlayPart {
    pub(crate) billed: Decimal,
    pub(crate) effective: Decimal,
    pub(crate) fields: Vec<(&'static str, String)>,
}

/// How contracts re-price the usage they cover in a FOCUS export: covered GPU-hours become
/// `Committed`/`Used` rows (billed 0, effective at the contract rate), the excess becomes
/// overage rows, and each contract adds a `Purchase` row (its fee) and an `Unused` row (waste),
/// so that the export bills exactly what `contract status` says.
pub(crate) struct Overlay {
    /// (charge key, hourly slice start) → the rows that replace that slice.
    pub(crate) slices: std::collections::HashMap<(String, i64), Vec<OverlayPart>>,
    /// Purchase and Unused rows.
    pub(crate) commitment_rows: Vec<BTreeMap<&'static str, String>>,
}

pub(crate) fn contract_overlay(ctx: &Context, charges: &[gpubroker_ledger::Charge]) -> Result<Overlay> {
    let store = open_store(&home()?)?;
    let now = ctx.clock.now();
    let mut overlay = Overlay { slices: Default::default(), commitment_rows: Vec::new() };
    let iso = |ms: i64| {
        Timestamp::from_millisecond(ms).map(|t| t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()).unwrap_or_default()
    };
    for contract in store.contracts()? {
        let (start, end) = period_bounds(&contract.period, now)?;
        let (s, e) =
            (start.as_millisecond(), end.as_millisecond().min(now.as_millisecond().max(start.as_millisecond())));
        if e <= s {
            continue;
        }
        let units = Decimal::from_str(&contract.units).unwrap_or_default();
        let rate = Decimal::from_str(&contract.rate).unwrap_or_default();
        let over_rate = Decimal::from_str(&contract.overage_rate).unwrap_or_default();
        // Hourly slices (as the export cuts them) of the usage this contract covers.
        let mut slices: Vec<(i64, String, Decimal)> = Vec::new();
        for c in charges.iter().filter(|c| {
            c.source != gpubroker_ledger::ChargeSource::Focus
                && c.gpu_count > 0
                && in_scope(&contract.scope, &c.provider, &c.tags)
        }) {
            let mut t = c.start_ms;
            while t < c.end_ms {
                let next = (t.div_euclid(3_600_000) + 1) * 3_600_000;
                let b = next.min(c.end_ms);
                if t >= s && b <= e && !overlay.slices.contains_key(&(c.key.clone(), t)) {
                    slices.push((
                        t,
                        c.key.clone(),
                        Decimal::from(c.gpu_count) * Decimal::from(b - t) / Decimal::from(3_600_000),
                    ));
                }
                t = next;
            }
        }
        slices.sort();
        let hours = Decimal::from((e - s + 3_599_999) / 3_600_000);
        let fee = if contract.kind == "hourly" { units * rate * hours } else { units * rate };
        let mut covered_total = Decimal::ZERO;
        let mut per_hour: BTreeMap<i64, Decimal> = BTreeMap::new();
        for (a, _, g) in &slices {
            *per_hour.entry(a.div_euclid(3_600_000)).or_default() += *g;
        }
        let mut remaining = units;
        for (a, key, g) in &slices {
            let covered = if contract.kind == "hourly" {
                let used = per_hour[&a.div_euclid(3_600_000)];
                if used.is_zero() { Decimal::ZERO } else { *g * units.min(used) / used }
            } else {
                let c = (*g).min(remaining);
                remaining -= c;
                c
            };
            covered_total += covered;
            let over = *g - covered;
            let commit_fields = |status: &str, quantity: Decimal| {
                vec![
                    ("PricingCategory", "Committed".to_string()),
                    ("CommitmentDiscountId", contract.name.clone()),
                    ("CommitmentDiscountName", contract.name.clone()),
                    ("CommitmentDiscountType", "Contract".to_string()),
                    ("CommitmentDiscountCategory", "Usage".to_string()),
                    ("CommitmentDiscountStatus", status.to_string()),
                    ("CommitmentDiscountQuantity", quantity.round_dp(10).normalize().to_string()),
                    ("CommitmentDiscountUnit", "GPU-Hours".to_string()),
                    ("x_GpuHours", quantity.round_dp(10).normalize().to_string()),
                    ("BillingCurrency", contract.currency.clone()),
                    ("PricingCurrency", contract.currency.clone()),
                ]
            };
            let mut parts = Vec::new();
            if covered > Decimal::ZERO {
                parts.push(OverlayPart {
                    billed: Decimal::ZERO,
                    effective: covered * rate,
                    fields: commit_fields("Used", covered),
                });
            }
            if over > Decimal::ZERO {
                parts.push(OverlayPart {
                    billed: over * over_rate,
                    effective: over * over_rate,
                    fields: vec![
                        ("PricingCategory", "Standard".to_string()),
                        ("ChargeDescription", format!("overage of contract {}", contract.name)),
                        ("x_GpuHours", over.round_dp(10).normalize().to_string()),
                        ("BillingCurrency", contract.currency.clone()),
                        ("PricingCurrency", contract.currency.clone()),
                    ],
                });
            }
            overlay.slices.insert((key.clone(), *a), parts);
        }
        let committed_units = if contract.kind == "hourly" { units * hours } else { units };
        let unused_units = (committed_units - covered_total).max(Decimal::ZERO);
        let base = |category: &str, billed: Decimal, effective: Decimal| -> BTreeMap<&'static str, String> {
            let mut row = BTreeMap::new();
            row.insert("BilledCost", billed.to_string());
            row.insert("EffectiveCost", effective.to_string());
            row.insert("ListCost", billed.max(effective).to_string());
            row.insert("BillingCurrency", contract.currency.clone());
            row.insert("BillingPeriodStart", iso(s));
            row.insert("BillingPeriodEnd", iso(end.as_millisecond()));
            row.insert("ChargePeriodStart", iso(s));
            row.insert("ChargePeriodEnd", iso(e));
            row.insert("ChargeCategory", category.to_string());
            row.insert("CommitmentDiscountId", contract.name.clone());
            row.insert("CommitmentDiscountName", contract.name.clone());
            row.insert("CommitmentDiscountType", "Contract".to_string());
            row.insert("CommitmentDiscountCategory", "Usage".to_string());
            row.insert("CommitmentDiscountUnit", "GPU-Hours".to_string());
            row.insert("ProviderName", "gpubroker".to_string());
            row.insert("x_Source", "contract".to_string());
            row
        };
        let mut purchase = base("Purchase", fee, Decimal::ZERO);
        purchase.insert("ChargeFrequency", "Recurring".into());
        purchase.insert("PricingCategory", "Standard".into());
        purchase.insert("CommitmentDiscountQuantity", committed_units.normalize().to_string());
        purchase.insert(
            "ChargeDescription",
            format!(
                "contract {}: {} {}",
                contract.name,
                contract.units,
                if contract.kind == "hourly" { "GPUs per hour" } else { "GPU-hours" }
            ),
        );
        overlay.commitment_rows.push(purchase);
        if unused_units > Decimal::ZERO {
            let mut unused = base("Usage", Decimal::ZERO, unused_units * rate);
            unused.insert("ChargeFrequency", "Usage-Based".into());
            unused.insert("PricingCategory", "Committed".into());
            unused.insert("CommitmentDiscountStatus", "Unused".into());
            unused.insert("CommitmentDiscountQuantity", unused_units.round_dp(10).normalize().to_string());
            overlay.commitment_rows.push(unused);
        }
    }
    Ok(overlay)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calendar_periods() {
        let now: Timestamp = "2026-11-29T12:00:00Z".parse().unwrap_or(Timestamp::UNIX_EPOCH);
        let (s, e) = period_bounds("monthly", now).unwrap_or((now, now));
        assert_eq!((s.to_string(), e.to_string()), ("2026-11-01T00:00:00Z".into(), "2026-12-01T00:00:00Z".into()));
        let (s, _) = period_bounds("weekly", now).unwrap_or((now, now));
        assert_eq!(s.to_string(), "2026-11-23T00:00:00Z"); // a Monday
        assert!(period_bounds("hourly", now).is_err());
    }
}
