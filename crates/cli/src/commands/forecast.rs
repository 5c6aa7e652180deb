//! `gpubroker cost forecast --months N`: spend per calendar month, this one and the next N, from
//! the ledger's daily spend (trend + day-of-week season, 80% interval).

use std::collections::BTreeMap;
use std::io::Write;

use anyhow::{Result, bail};
use comfy_table::Cell;
use gpubroker_core::forecast::SeasonalTrend;
use gpubroker_core::{Currency, Decimal, Money};
use gpubroker_ledger::GroupBy;
use jiff::ToSpan;
use jiff::civil::Date;
use jiff::tz::TimeZone;
use rust_decimal::prelude::ToPrimitive;
use serde::Serialize;

use super::usage::CostLedger;
use crate::ExitStatus;
use crate::args::CostForecastArgs;
use crate::context::Context;
use crate::output::{align_right, money, table, write_json};

const DAY_MS: i64 = 86_400_000;

#[derive(Serialize)]
struct MonthForecast {
    month: String,
    /// Spend recorded in the month before today.
    actual: Decimal,
    /// Actual plus the forecast of the month's remaining days.
    forecast: Decimal,
    low: Decimal,
    high: Decimal,
}

#[derive(Serialize)]
struct ScopeForecast {
    scope: String,
    history_days: usize,
    /// Trend of daily spend, per day.
    trend_per_day: Decimal,
    months: Vec<MonthForecast>,
}

#[derive(Serialize)]
struct ForecastJson {
    currency: Currency,
    interval: &'static str,
    scopes: Vec<ScopeForecast>,
}

/// Days since 1970-01-01 of a UTC calendar date.
fn day_number(date: Date) -> Result<i64> {
    Ok(date.to_zoned_datetime(TimeZone::UTC)?.timestamp().as_second().div_euclid(86_400))
}

/// A forecast is an estimate: it is shown to the cent, never summed into the ledger.
fn cents(v: f64) -> Decimal {
    Decimal::try_from(v).unwrap_or_default().round_dp(2)
}

pub(crate) fn forecast(ctx: &Context, args: &CostForecastArgs, out: &mut impl Write) -> Result<ExitStatus> {
    if args.months == 0 || args.months > 36 {
        bail!("`--months {}`: expected 1 to 36", args.months);
    }
    let currency = ctx.currency.unwrap_or(Currency::USD);
    let fx = ctx.catalog.fx();
    let today = ctx.clock.now().as_millisecond().div_euclid(DAY_MS);
    let by = args.by.as_deref().map(GroupBy::parse);
    // Effective (amortised) spend per scope and day, each charge spread over the days it covers
    // so a monthly fee is not a one-day spike. Spend from today on is not history yet.
    let mut daily: BTreeMap<String, BTreeMap<i64, Decimal>> = BTreeMap::new();
    for c in CostLedger::open()?.charges(None, Some(today * DAY_MS), &[])? {
        let scope = match &by {
            None => "all".to_string(),
            Some(g) => g.key(&c),
        };
        let amount = fx.convert(Money::new(c.effective_cost, c.currency), currency)?.amount;
        let span = Decimal::from(c.end_ms.max(c.start_ms + 1) - c.start_ms);
        for (day, ms) in c.spread(DAY_MS).take_while(|(day, _)| *day < today) {
            *daily.entry(scope.clone()).or_default().entry(day).or_default() += amount * Decimal::from(ms) / span;
        }
    }
    if daily.is_empty() {
        bail!("no spend in the ledger before today: record usage (`gpubroker usage add|import`) first");
    }
    let mut result = ForecastJson { currency, interval: "80%", scopes: Vec::new() };
    for (scope, days) in &daily {
        let first = *days.keys().next().unwrap_or(&today);
        let history: Vec<f64> = (first..today).map(|d| days.get(&d).and_then(|v| v.to_f64()).unwrap_or(0.0)).collect();
        if history.len() < 7 {
            bail!("`{scope}`: {} day(s) of spend history; a forecast needs at least 7", history.len());
        }
        // Step 0 is `first`; the day-of-week season needs two weeks of history.
        let model = SeasonalTrend::fit(&history, 7);
        let this_month = ctx.clock.now().to_zoned_datetime(TimeZone::UTC).date().first_of_month();
        let mut months = Vec::new();
        for k in 0..=i64::from(args.months) {
            let start = this_month.checked_add(k.months())?;
            let month_start = day_number(start)?;
            let next_start = day_number(start.checked_add(1.month())?)?;
            let from = month_start.max(today);
            let actual: Decimal = days.range(month_start..today.clamp(month_start, next_start)).map(|(_, v)| *v).sum();
            let (low, point, high) = model.total((from - first) as usize, (next_start - first) as usize);
            months.push(MonthForecast {
                month: format!("{:04}-{:02}", start.year(), start.month()),
                actual: actual.round_dp(2),
                forecast: (actual + cents(point)).round_dp(2),
                low: (actual + cents(low)).round_dp(2),
                high: (actual + cents(high)).round_dp(2),
            });
        }
        result.scopes.push(ScopeForecast {
            scope: scope.clone(),
            history_days: history.len(),
            trend_per_day: cents(model.slope),
            months,
        });
    }
    if args.json {
        write_json(out, &result)?;
        return Ok(ExitStatus::Success);
    }
    for s in &result.scopes {
        writeln!(
            out,
            "{}: {} days of history, trend {} per day; 80% interval",
            s.scope,
            s.history_days,
            money(s.trend_per_day, currency)
        )?;
        let mut t = table(&["month", "actual so far", "forecast", "low", "high"]);
        for m in &s.months {
            t.add_row(vec![
                Cell::new(&m.month),
                Cell::new(money(m.actual, currency)),
                Cell::new(money(m.forecast, currency)),
                Cell::new(money(m.low, currency)),
                Cell::new(money(m.high, currency)),
            ]);
        }
        align_right(&mut t, &[1, 2, 3, 4]);
        writeln!(out, "{t}")?;
    }
    Ok(ExitStatus::Success)
}
