//! `usage add`, `usage import --csv|--focus` and `cost report`: the ledger's charges.

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::path::Path;
use std::str::FromStr;

use anyhow::{Result, anyhow, bail};
use comfy_table::Cell;
use gpubroker_catalog::Catalog;
use gpubroker_core::{Billing, Currency, Decimal, Money, PricingModel, RateCard};
use gpubroker_ledger::{Charge, ChargeSource, GroupBy, stable_key};
use serde::Serialize;

use super::jobs::{home, open_store};
use crate::ExitStatus;
use crate::args::{CostReportArgs, UsageAddArgs, UsageImportArgs};
use crate::context::Context;
use crate::output::{align_right, money, table, write_json};

/// Where charges are kept: the local SQLite ledger, or PostgreSQL for a team server.
pub(crate) enum CostLedger {
    /// `$GPUBROKER_HOME/ledger.db`.
    Local(gpubroker_ledger::Store),
    /// `GPUBROKER_LEDGER_URL`.
    Team(Box<gpubroker_ledger::PgLedger>),
}

impl CostLedger {
    pub(crate) fn open() -> Result<CostLedger> {
        match std::env::var(crate::context::env_vars::GPUBROKER_LEDGER_URL) {
            Ok(url) if !url.is_empty() => Ok(CostLedger::Team(Box::new(
                gpubroker_ledger::PgLedger::connect(&url)
                    .map_err(|e| anyhow!("{}: {e}", crate::context::env_vars::GPUBROKER_LEDGER_URL))?,
            ))),
            _ => Ok(CostLedger::Local(open_store(&home()?)?)),
        }
    }

    pub(crate) fn add_charges(&mut self, charges: &[Charge]) -> Result<usize> {
        Ok(match self {
            CostLedger::Local(s) => s.add_charges(charges)?,
            CostLedger::Team(p) => p.add_charges(charges)?,
        })
    }

    pub(crate) fn charges(
        &mut self,
        from: Option<i64>,
        to: Option<i64>,
        sources: &[ChargeSource],
    ) -> Result<Vec<Charge>> {
        Ok(match self {
            CostLedger::Local(s) => s.charges(from, to, sources)?,
            CostLedger::Team(p) => p.charges(from, to, sources)?,
        })
    }

    fn report(
        &mut self,
        by: &GroupBy,
        from: Option<i64>,
        to: Option<i64>,
        sources: &[ChargeSource],
    ) -> Result<Vec<(gpubroker_ledger::ReportRow, Currency)>> {
        Ok(match self {
            CostLedger::Local(s) => s.report(by, from, to, sources)?,
            CostLedger::Team(p) => p.report(by, from, to, sources)?,
        })
    }
}

/// Records per transaction: each committed batch is acknowledged on stderr and survives `kill -9`.
const BATCH: usize = 1000;

/// A usage record before pricing, as written in a CSV row or on the command line.
struct UsageInput<'a> {
    resource_id: &'a str,
    provider: &'a str,
    region: &'a str,
    instance_type: &'a str,
    gpu: &'a str,
    gpu_count: u32,
    pricing: &'a str,
    start: &'a str,
    end: &'a str,
    hourly_rate: Option<Money>,
    min_billable_s: u32,
    tags: &'a str,
    /// The provider reclaimed it (spot), which may make it free.
    interrupted: bool,
}

pub(crate) fn parse_time(text: &str) -> Result<jiff::Timestamp, String> {
    let t = text.trim();
    if let Ok(ts) = jiff::Timestamp::from_str(t) {
        return Ok(ts);
    }
    // FOCUS 1.0 sample bills write `YYYY-MM-DD HH:MM:SS` without a zone; they are UTC.
    let civil = t.replace(' ', "T");
    let dt = jiff::civil::DateTime::from_str(&civil)
        .or_else(|_| jiff::civil::Date::from_str(t).map(|d| d.to_datetime(jiff::civil::Time::midnight())))
        .map_err(|_| format!("`{text}` is not a time (expected RFC 3339, such as 2026-11-01T00:00:00Z)"))?;
    dt.to_zoned_datetime(jiff::tz::TimeZone::UTC).map(|z| z.timestamp()).map_err(|e| e.to_string())
}

/// FOCUS times, leniently: the spec's own examples contain `2023-02-01T30:00:00Z` (hour 30),
/// which is read as 30 hours after midnight. The original text is kept for export.
fn parse_focus_time(text: &str) -> Result<jiff::Timestamp, String> {
    if let Ok(t) = parse_time(text) {
        return Ok(t);
    }
    let t = text.trim().trim_end_matches('Z');
    let (date, time) = t.split_once(['T', ' ']).ok_or_else(|| format!("`{text}` is not a time"))?;
    let date = jiff::civil::Date::from_str(date).map_err(|_| format!("`{text}` is not a time"))?;
    let mut parts = time.split(':').map(|p| p.parse::<i64>());
    let (h, m, sec) = match (parts.next(), parts.next(), parts.next()) {
        (Some(Ok(h)), Some(Ok(m)), Some(Ok(s)))
            if (0..48).contains(&h) && (0..60).contains(&m) && (0..60).contains(&s) =>
        {
            (h, m, s)
        }
        _ => return Err(format!("`{text}` is not a time")),
    };
    let midnight = date.to_zoned_datetime(jiff::tz::TimeZone::UTC).map_err(|e| e.to_string())?.timestamp();
    jiff::Timestamp::from_second(midnight.as_second() + h * 3600 + m * 60 + sec).map_err(|e| e.to_string())
}

pub(crate) fn parse_tags(text: &str) -> Result<BTreeMap<String, String>, String> {
    let mut tags = BTreeMap::new();
    for part in text.split([';', ',']).map(str::trim).filter(|p| !p.is_empty()) {
        let (k, v) = part.split_once('=').ok_or_else(|| format!("tag `{part}`: expected key=value"))?;
        tags.insert(k.trim().to_string(), v.trim().to_string());
    }
    Ok(tags)
}

/// Prices a usage record with its rate card (or the catalog's as of its start). Errors name the field.
fn price(catalog: &Catalog, u: &UsageInput<'_>) -> Result<Charge, (&'static str, String)> {
    let start = parse_time(u.start).map_err(|m| ("start", m))?;
    let end = parse_time(u.end).map_err(|m| ("end", m))?;
    if end <= start {
        return Err(("end", format!("`{}` is not after start `{}`", u.end, u.start)));
    }
    let pricing = PricingModel::from_str(u.pricing).map_err(|m| ("pricing", m))?;
    let seconds = ((end.as_millisecond() - start.as_millisecond() + 999) / 1000) as u64;
    let start_date = start.to_zoned_datetime(jiff::tz::TimeZone::UTC).date();
    let catalog_rate = |p: PricingModel| {
        catalog.offers().iter().find(|o| {
            o.provider.eq_ignore_ascii_case(u.provider)
                && o.instance_type == u.instance_type
                && (o.region == u.region || o.region == "*")
                && o.rate.pricing == p
        })
    };
    let rate = match u.hourly_rate {
        Some(m) => RateCard::hourly(pricing, m, Billing { increment_s: 1, minimum_s: u.min_billable_s }),
        None => {
            let offer = catalog_rate(pricing).ok_or_else(|| {
                (
                    "hourly_rate",
                    format!(
                        "is empty and the catalog has no {} price for {} {} {}",
                        pricing, u.provider, u.region, u.instance_type
                    ),
                )
            })?;
            if offer.as_of > start_date {
                return Err((
                    "hourly_rate",
                    format!(
                        "is empty and the catalog's price for {} is dated {}, after the usage started ({start_date}); give the rate",
                        u.instance_type, offer.as_of
                    ),
                ));
            }
            let mut card = offer.rate.clone();
            card.billing.minimum_s = card.billing.minimum_s.max(u.min_billable_s);
            card
        }
    };
    let mut rate = rate;
    if rate.free_if_preempted_within_s == 0 {
        // The provider's first-hour rule for reclaimed spot, from its catalog spot offers.
        rate.free_if_preempted_within_s = catalog
            .offers()
            .iter()
            .find(|o| o.provider.eq_ignore_ascii_case(u.provider) && o.rate.pricing == PricingModel::Spot)
            .map(|o| o.rate.free_if_preempted_within_s)
            .unwrap_or(0);
    }
    // Off-peak prices depend on when the hours fell; everything else on how many there were.
    let billed = if rate.pricing == PricingModel::OffPeak {
        rate.cost_of_run_from(start, seconds)
    } else {
        rate.cost_of_ended_run(seconds, u.interrupted)
    }
    .map_err(|e| ("hourly_rate", e.to_string()))?;
    // List cost: the same seconds at the on-demand price, when the catalog knows it.
    let list = match (pricing, catalog_rate(PricingModel::OnDemand)) {
        (PricingModel::OnDemand, _) | (_, None) => billed.amount,
        (_, Some(od)) => {
            let card = RateCard::hourly(PricingModel::OnDemand, od.hourly_price(), rate.billing);
            match card.cost_of_run(seconds) {
                Ok(m) if m.currency == billed.currency => m.amount,
                _ => billed.amount,
            }
        }
    };
    Ok(Charge {
        key: format!("usage:{}:{}:{}:{}", u.resource_id, start.as_millisecond(), end.as_millisecond(), pricing),
        source: ChargeSource::Usage,
        provider: u.provider.to_ascii_lowercase(),
        service: "compute".into(),
        region: u.region.to_string(),
        resource_id: u.resource_id.to_string(),
        instance_type: u.instance_type.to_string(),
        gpu: u.gpu.to_string(),
        gpu_count: u.gpu_count,
        pricing: pricing.to_string(),
        start_ms: start.as_millisecond(),
        end_ms: end.as_millisecond(),
        billed_cost: billed.amount,
        effective_cost: billed.amount,
        list_cost: list,
        currency: billed.currency,
        tags: parse_tags(u.tags).map_err(|m| ("tags", m))?,
        raw: BTreeMap::new(),
    })
}

pub(crate) fn add(ctx: &Context, args: &UsageAddArgs, out: &mut impl Write) -> Result<ExitStatus> {
    let hourly_rate = match &args.hourly_rate {
        Some(t) => Some(Money::from_str(t).map_err(|e| anyhow!("`--hourly-rate`: {e}"))?),
        None => None,
    };
    let input = UsageInput {
        resource_id: &args.resource,
        provider: &args.provider,
        region: &args.region,
        instance_type: &args.instance_type,
        gpu: &args.gpu,
        gpu_count: args.gpu_count,
        pricing: &args.pricing,
        start: &args.start,
        end: &args.end,
        hourly_rate,
        min_billable_s: args.min_billable_seconds,
        tags: &args.tags,
        interrupted: args.interrupted,
    };
    let charge = price(&ctx.catalog, &input).map_err(|(field, m)| anyhow!("`--{}`: {m}", field.replace('_', "-")))?;
    let added = CostLedger::open()?.add_charges(std::slice::from_ref(&charge))?;
    writeln!(
        out,
        "{} {} {}",
        if added == 1 { "recorded" } else { "already recorded" },
        charge.key,
        Money::new(charge.billed_cost, charge.currency)
    )?;
    Ok(ExitStatus::Success)
}

fn get<'a>(rec: &'a csv::StringRecord, cols: &HashMap<String, usize>, name: &str) -> &'a str {
    cols.get(name).and_then(|i| rec.get(*i)).map(str::trim).unwrap_or("")
}

pub(crate) fn import(ctx: &Context, args: &UsageImportArgs, out: &mut impl Write) -> Result<ExitStatus> {
    let (path, focus) = match (&args.csv, &args.focus) {
        (Some(p), _) => (p.as_path(), false),
        (None, Some(p)) => (p.as_path(), true),
        (None, None) => bail!("give `--csv FILE` or `--focus FILE`"),
    };
    // Parse and price the whole file first: bad input imports nothing.
    let charges = if focus { read_focus(&ctx.catalog, path)? } else { read_usage_csv(&ctx.catalog, path)? };
    let mut store = CostLedger::open()?;
    let mut added = 0;
    let mut stderr = std::io::stderr().lock();
    for (i, batch) in charges.chunks(BATCH).enumerate() {
        added += store.add_charges(batch)?;
        // The acknowledgement: everything up to here is committed.
        writeln!(stderr, "committed {} of {} records", (i * BATCH + batch.len()), charges.len())?;
    }
    writeln!(out, "imported {added} new records ({} already recorded) from {}", charges.len() - added, path.display())?;
    Ok(ExitStatus::Success)
}

fn open_csv(path: &Path) -> Result<(csv::Reader<std::fs::File>, HashMap<String, usize>)> {
    let shown = path.display();
    let mut reader =
        csv::ReaderBuilder::new().flexible(true).from_path(path).map_err(|e| anyhow!("{shown}: cannot read: {e}"))?;
    let cols = reader
        .headers()
        .map_err(|e| anyhow!("{shown}:1: cannot read the header: {e}"))?
        .iter()
        .enumerate()
        .map(|(i, h)| (h.trim().trim_start_matches('\u{feff}').to_string(), i))
        .collect();
    Ok((reader, cols))
}

fn read_usage_csv(catalog: &Catalog, path: &Path) -> Result<Vec<Charge>> {
    let shown = path.display().to_string();
    let (mut reader, cols) = open_csv(path)?;
    for required in ["resource_id", "provider", "pricing", "start", "end"] {
        if !cols.contains_key(required) {
            bail!(
                "{shown}:1: header: missing column `{required}`; expected resource_id,provider,region,instance_type,gpu,gpu_count,pricing,start,end,hourly_rate,currency,min_billable_seconds,tags"
            );
        }
    }
    let mut out = Vec::new();
    // Transfer tiers follow the volume already moved that month, per (provider, region, kind, month).
    let mut month_to_date: HashMap<(String, String, String, String), Decimal> = HashMap::new();
    for rec in reader.records() {
        let rec = rec.map_err(|e| anyhow!("{shown}: malformed CSV: {e}"))?;
        let line = rec.position().map(|p| p.line()).unwrap_or(0);
        let err = |field: &str, m: String| anyhow!("{shown}:{line}: {field}: {m}");
        let g = |n: &str| get(&rec, &cols, n);
        match g("kind") {
            "" | "compute" => {}
            kind @ ("storage" | "transfer") => {
                let kind = kind.to_string();
                out.push(volume_charge(catalog, &kind, &rec, &cols, &mut month_to_date).map_err(|(f, m)| err(f, m))?);
                continue;
            }
            other => return Err(err("kind", format!("`{other}`: expected compute, storage or transfer"))),
        }
        let gpu_count = match g("gpu_count") {
            "" => 0,
            t => t.parse::<u32>().map_err(|_| err("gpu_count", format!("`{t}` is not a whole number")))?,
        };
        let min_billable_s = match g("min_billable_seconds") {
            "" => 0,
            t => t
                .parse::<u32>()
                .map_err(|_| err("min_billable_seconds", format!("`{t}` is not a whole number of seconds")))?,
        };
        let hourly_rate = match g("hourly_rate") {
            "" => None,
            t => {
                let amount =
                    Decimal::from_str(t).map_err(|_| err("hourly_rate", format!("`{t}` is not a decimal number")))?;
                if amount.is_sign_negative() {
                    return Err(err("hourly_rate", format!("`{t}` must be >= 0")));
                }
                let currency = match g("currency") {
                    "" => Currency::USD,
                    c => c.parse().map_err(|_| err("currency", format!("`{c}` is not an ISO 4217 code")))?,
                };
                Some(Money::new(amount, currency))
            }
        };
        let input = UsageInput {
            resource_id: g("resource_id"),
            provider: g("provider"),
            region: g("region"),
            instance_type: g("instance_type"),
            gpu: g("gpu"),
            gpu_count,
            pricing: g("pricing"),
            start: g("start"),
            end: g("end"),
            hourly_rate,
            min_billable_s,
            tags: g("tags"),
            interrupted: match g("interrupted").to_ascii_lowercase().as_str() {
                "" | "false" | "0" | "no" => false,
                "true" | "1" | "yes" => true,
                other => return Err(err("interrupted", format!("`{other}`: expected true or false"))),
            },
        };
        if input.resource_id.is_empty() {
            return Err(err("resource_id", "is empty; a value is required".into()));
        }
        out.push(price(catalog, &input).map_err(|(f, m)| err(f, m))?);
    }
    Ok(out)
}

/// A storage (`quantity_gb` kept from start to end) or transfer (`quantity_gb` moved) record.
/// Prices: `gb_month_rate` / `gb_rate` (with `currency`), else the catalog's for the provider
/// and region. Transfer kinds: `internet_egress` (tiered), `inter_region`, `inter_zone` (charged
/// in each direction).
fn volume_charge(
    catalog: &Catalog,
    kind: &str,
    rec: &csv::StringRecord,
    cols: &HashMap<String, usize>,
    month_to_date: &mut HashMap<(String, String, String, String), Decimal>,
) -> Result<Charge, (&'static str, String)> {
    let g = |n: &str| get(rec, cols, n);
    use gpubroker_catalog::{StorageKind, TransferKind};
    use gpubroker_core::volume::{inter_zone_cost, storage_cost, tiered_transfer_cost};
    let start = parse_time(g("start")).map_err(|m| ("start", m))?;
    let end = parse_time(g("end")).map_err(|m| ("end", m))?;
    if end < start {
        return Err(("end", format!("`{}` is before start `{}`", g("end"), g("start"))));
    }
    let gb = Decimal::from_str(g("quantity_gb"))
        .map_err(|_| ("quantity_gb", format!("`{}` is not a number of GB", g("quantity_gb"))))?;
    if gb.is_sign_negative() {
        return Err(("quantity_gb", "must be >= 0".into()));
    }
    let given_currency = match g("currency") {
        "" => Currency::USD,
        c => c.parse().map_err(|_| ("currency", format!("`{c}` is not an ISO 4217 code")))?,
    };
    let rate = |col: &'static str| -> Result<Option<Money>, (&'static str, String)> {
        match g(col) {
            "" => Ok(None),
            t => Decimal::from_str(t)
                .map(|d| Some(Money::new(d, given_currency)))
                .map_err(|_| (col, format!("`{t}` is not a decimal number"))),
        }
    };
    let (provider, region) = (g("provider").to_ascii_lowercase(), g("region").to_string());
    let (service, pricing, cost) = if kind == "storage" {
        let price = match rate("gb_month_rate")? {
            Some(m) => m,
            None => catalog.storage_price(&provider, &region, StorageKind::Block).map(|p| p.price_per_gb_month).ok_or(
                ("gb_month_rate", format!("is empty and the catalog has no storage price for {provider} {region}")),
            )?,
        };
        (
            "storage".to_string(),
            "storage".to_string(),
            Money::new(storage_cost(gb, start, end, price.amount), price.currency),
        )
    } else {
        let transfer = match g("transfer") {
            "" | "internet_egress" => TransferKind::InternetEgress,
            "inter_region" => TransferKind::InterRegion,
            "inter_zone" => TransferKind::InterZone,
            other => {
                return Err(("transfer", format!("`{other}`: expected internet_egress, inter_region or inter_zone")));
            }
        };
        let tiers: Vec<(Decimal, Money)> = match rate("gb_rate")? {
            Some(m) => vec![(Decimal::ZERO, m)],
            None => catalog.transfer_tiers(&provider, &region, transfer),
        };
        let Some(currency) = tiers.first().map(|t| t.1.currency) else {
            return Err((
                "gb_rate",
                format!("is empty and the catalog has no {transfer:?} price for {provider} {region}"),
            ));
        };
        let month: String = start.to_string().chars().take(7).collect();
        let key = (provider.clone(), region.clone(), format!("{transfer:?}"), month);
        let done = month_to_date.entry(key).or_insert(Decimal::ZERO);
        let plain: Vec<(Decimal, Decimal)> = tiers.iter().map(|(f, p)| (*f, p.amount)).collect();
        let amount = match transfer {
            TransferKind::InterZone => inter_zone_cost(gb, plain[0].1),
            _ => tiered_transfer_cost(&plain, *done, gb),
        };
        *done += gb;
        ("data transfer".to_string(), format!("{transfer:?}").to_ascii_lowercase(), Money::new(amount, currency))
    };
    Ok(Charge {
        key: format!("{kind}:{}:{}:{}:{}", g("resource_id"), start.as_millisecond(), end.as_millisecond(), gb),
        source: ChargeSource::Usage,
        provider,
        service,
        region,
        resource_id: g("resource_id").to_string(),
        instance_type: String::new(),
        gpu: String::new(),
        gpu_count: 0,
        pricing,
        start_ms: start.as_millisecond(),
        end_ms: end.as_millisecond().max(start.as_millisecond()),
        billed_cost: cost.amount,
        effective_cost: cost.amount,
        list_cost: cost.amount,
        currency: cost.currency,
        tags: parse_tags(g("tags")).map_err(|m| ("tags", m))?,
        raw: BTreeMap::new(),
    })
}

/// FOCUS 1.0-1.2 rows as charges. The sample bills' quirks are handled: `NULL` for empty,
/// zone-less `YYYY-MM-DD HH:MM:SS` times, tag keys with stray spaces.
/// The GPU type and count of a FOCUS row: gpubroker's own `x_GpuType`/`x_GpuCount` (a
/// round-trip of `cost export`), else the catalog's instance type named by `x_InstanceType`,
/// `ResourceType`, `SkuId` or `SkuPriceDetails.InstanceType`.
fn focus_gpu(catalog: &Catalog, provider: &str, g: &dyn Fn(&str) -> String) -> Result<(String, u32), String> {
    let named = g("x_GpuType");
    if !named.is_empty() {
        let count = match g("x_GpuCount").as_str() {
            "" => 1,
            c => c.parse().map_err(|_| format!("x_GpuCount: `{c}` is not a whole number"))?,
        };
        return Ok((catalog.gpu(&named).map(|s| s.name.clone()).unwrap_or(named), count));
    }
    let details = g("SkuPriceDetails");
    let from_details = serde_json::from_str::<serde_json::Value>(&details).ok().and_then(|v| {
        ["InstanceType", "instanceType", "x_InstanceType"]
            .iter()
            .find_map(|k| v.get(*k).and_then(|t| t.as_str()).map(String::from))
    });
    let provider = provider_id(provider);
    for candidate in [g("x_InstanceType"), g("ResourceType"), g("SkuId"), from_details.unwrap_or_default()] {
        if candidate.is_empty() {
            continue;
        }
        let offer = catalog
            .offers()
            .iter()
            .find(|o| o.instance_type == candidate && (provider.is_empty() || o.provider == provider));
        if let Some(o) = offer {
            return Ok((o.gpu.clone(), o.gpu_count));
        }
    }
    Ok((String::new(), 0))
}

/// The catalog's provider id for a FOCUS `ProviderName` (`AWS`, `Microsoft`, `Google Cloud`).
fn provider_id(name: &str) -> String {
    let lower = name.trim().to_ascii_lowercase();
    match lower.as_str() {
        "amazon web services" | "amazon" | "aws" => "aws".into(),
        "microsoft" | "microsoft azure" | "azure" => "azure".into(),
        "google cloud" | "google cloud platform" | "google" | "gcp" => "gcp".into(),
        "oracle" | "oracle cloud infrastructure" | "oci" => "oci".into(),
        _ => lower.replace(' ', ""),
    }
}

pub(crate) fn read_focus(catalog: &Catalog, path: &Path) -> Result<Vec<Charge>> {
    let shown = path.display().to_string();
    let (mut reader, cols) = open_csv(path)?;
    for required in ["BilledCost", "ChargePeriodStart", "ChargePeriodEnd"] {
        if !cols.contains_key(required) {
            bail!("{shown}:1: header: missing FOCUS column `{required}`");
        }
    }
    if !cols.contains_key("BillingCurrency") {
        // The FOCUS 1.2 spec's own examples are column subsets without it.
        eprintln!("warning: {shown}: no BillingCurrency column; amounts are taken as USD");
    }
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut out = Vec::new();
    for rec in reader.records() {
        let rec = rec.map_err(|e| anyhow!("{shown}: malformed CSV: {e}"))?;
        let line = rec.position().map(|p| p.line()).unwrap_or(0);
        let err = |field: &str, m: String| anyhow!("{shown}:{line}: {field}: {m}");
        let g = |n: &str| {
            let v = get(&rec, &cols, n);
            if v.eq_ignore_ascii_case("null") { "" } else { v }
        };
        let dec = |n: &str, fallback: Option<Decimal>| -> Result<Decimal> {
            match (g(n), fallback) {
                ("", Some(f)) => Ok(f),
                ("", None) => Err(err(n, "is empty; a number is required".into())),
                (t, _) => Decimal::from_str(t)
                    .or_else(|_| Decimal::from_scientific(t))
                    .map_err(|_| err(n, format!("`{t}` is not a number"))),
            }
        };
        let billed = dec("BilledCost", None)?;
        let start = parse_focus_time(g("ChargePeriodStart")).map_err(|m| err("ChargePeriodStart", m))?;
        let end = parse_focus_time(g("ChargePeriodEnd")).map_err(|m| err("ChargePeriodEnd", m))?;
        let currency: Currency = match g("BillingCurrency") {
            "" => Currency::USD,
            c => c.parse().map_err(|_| err("BillingCurrency", format!("`{c}` is not an ISO 4217 code")))?,
        };
        let tags: BTreeMap<String, String> = match g("Tags") {
            "" => BTreeMap::new(),
            t => serde_json::from_str::<BTreeMap<String, serde_json::Value>>(t)
                .map_err(|e| err("Tags", format!("not a JSON object: {e}")))?
                .into_iter()
                .map(|(k, v)| (k.trim().to_string(), v.as_str().map(String::from).unwrap_or_else(|| v.to_string())))
                .collect(),
        };
        // Rows carry no id in FOCUS itself; the sample's `Id` is used when present, else the row's
        // content and its occurrence (identical rows are separate charges; re-imports are not).
        let key = match g("Id") {
            "" => {
                let content: Vec<&str> = rec.iter().collect();
                let h = stable_key(&content.join("\u{1f}"));
                let n = seen.entry(h.clone()).or_default();
                *n += 1;
                format!("focus:{h}#{n}")
            }
            id => format!("focus:{}:{id}", g("BillingAccountId")),
        };
        let (gpu, gpu_count) =
            focus_gpu(catalog, g("ProviderName"), &|n| g(n).to_string()).map_err(|m| err("x_GpuCount", m))?;
        out.push(Charge {
            key,
            source: ChargeSource::Focus,
            provider: g("ProviderName").to_string(),
            service: g("ServiceName").to_string(),
            region: g("RegionId").to_string(),
            resource_id: g("ResourceId").to_string(),
            instance_type: g("SkuId").to_string(),
            gpu,
            gpu_count,
            pricing: g("PricingCategory").to_string(),
            start_ms: start.as_millisecond(),
            end_ms: end.as_millisecond(),
            billed_cost: billed,
            effective_cost: dec("EffectiveCost", Some(billed))?,
            // Without a ListCost column no saving can be claimed: list = effective.
            list_cost: dec("ListCost", Some(dec("EffectiveCost", Some(billed))?))?,
            currency,
            tags,
            raw: cols
                .iter()
                .filter_map(|(name, i)| rec.get(*i).map(|v| (name.clone(), v.to_string())))
                .filter(|(_, v)| !v.is_empty() && !v.eq_ignore_ascii_case("null"))
                .collect(),
        });
    }
    Ok(out)
}

/// FOCUS 1.2 columns written by `cost export`, then gpubroker's `x_` columns.
const FOCUS_COLUMNS: &[&str] = &[
    "BilledCost",
    "BillingAccountId",
    "BillingAccountName",
    "BillingCurrency",
    "BillingPeriodEnd",
    "BillingPeriodStart",
    "ChargeCategory",
    "ChargeClass",
    "ChargeDescription",
    "ChargeFrequency",
    "ChargePeriodEnd",
    "ChargePeriodStart",
    "CommitmentDiscountCategory",
    "CommitmentDiscountId",
    "CommitmentDiscountName",
    "CommitmentDiscountQuantity",
    "CommitmentDiscountStatus",
    "CommitmentDiscountType",
    "CommitmentDiscountUnit",
    "ConsumedQuantity",
    "ConsumedUnit",
    "ContractedCost",
    "ContractedUnitPrice",
    "EffectiveCost",
    "InvoiceIssuerName",
    "ListCost",
    "ListUnitPrice",
    "PricingCategory",
    "PricingCurrency",
    "PricingQuantity",
    "PricingUnit",
    "ProviderName",
    "PublisherName",
    "RegionId",
    "RegionName",
    "ResourceId",
    "ResourceName",
    "ResourceType",
    "ServiceCategory",
    "ServiceName",
    "ServiceSubcategory",
    "SkuId",
    "SkuMeter",
    "SkuPriceDetails",
    "SkuPriceId",
    "SubAccountId",
    "SubAccountName",
    "Tags",
    "x_GpuCount",
    "x_GpuType",
    "x_GpuHours",
    "x_Source",
];

fn iso(ms: i64) -> String {
    jiff::Timestamp::from_millisecond(ms).map(|t| t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()).unwrap_or_default()
}

fn month_bounds(ms: i64) -> (String, String) {
    let Ok(t) = jiff::Timestamp::from_millisecond(ms) else { return (String::new(), String::new()) };
    let first = t.to_zoned_datetime(jiff::tz::TimeZone::UTC).date().first_of_month();
    let next = first.checked_add(jiff::ToSpan::month(1)).unwrap_or(first);
    let at = |d: jiff::civil::Date| {
        d.to_zoned_datetime(jiff::tz::TimeZone::UTC).map(|z| iso(z.timestamp().as_millisecond())).unwrap_or_default()
    };
    (at(first), at(next))
}

/// Splits `[start, end)` at UTC hour boundaries.
fn hour_slices(start_ms: i64, end_ms: i64) -> Vec<(i64, i64)> {
    let mut out = Vec::new();
    let mut t = start_ms;
    while t < end_ms {
        let next = ((t.div_euclid(3_600_000)) + 1) * 3_600_000;
        out.push((t, next.min(end_ms)));
        t = next;
    }
    if out.is_empty() {
        out.push((start_ms, end_ms));
    }
    out
}

/// Shares of `total` proportional to `weights`, rounded to 10 decimals, the last taking the
/// remainder so that the shares add up to `total` exactly.
fn split_exact(total: Decimal, weights: &[i64]) -> Vec<Decimal> {
    let sum: i64 = weights.iter().sum::<i64>().max(1);
    let mut shares: Vec<Decimal> =
        weights.iter().map(|w| (total * Decimal::from(*w) / Decimal::from(sum)).round_dp(10)).collect();
    let n = shares.len();
    if n > 0 {
        let before: Decimal = shares[..n - 1].iter().copied().sum();
        shares[n - 1] = total - before;
    }
    shares
}

fn pricing_category(pricing: &str) -> &'static str {
    match pricing {
        "spot" => "Dynamic",
        "reserved_1y" | "reserved_3y" | "committed" => "Committed",
        _ => "Standard",
    }
}

pub(crate) fn export(ctx: &Context, args: &crate::args::CostExportArgs, out: &mut impl Write) -> Result<ExitStatus> {
    if args.format != "focus" {
        bail!("`--format {}`: only `focus` (FOCUS 1.2) is supported", args.format);
    }
    let bound = |t: &Option<String>, name: &str| -> Result<Option<i64>> {
        match t {
            None => Ok(None),
            Some(text) => Ok(Some(parse_time(text).map_err(|m| anyhow!("`--{name}`: {m}"))?.as_millisecond())),
        }
    };
    let charges = CostLedger::open()?.charges(bound(&args.from, "from")?, bound(&args.to, "to")?, &[])?;
    let overlay = super::budget::contract_overlay(ctx, &charges)?;
    let mut buffer = Vec::new();
    {
        let mut w = csv::Writer::from_writer(&mut buffer);
        w.write_record(FOCUS_COLUMNS)?;
        for c in &charges {
            if c.source == ChargeSource::Focus {
                // Imported bills go out as they came in (with the currency FOCUS requires).
                let currency = c.currency.to_string();
                w.write_record(FOCUS_COLUMNS.iter().map(|col| match c.raw.get(*col) {
                    Some(v) => v.as_str(),
                    None if *col == "BillingCurrency" => currency.as_str(),
                    None => "",
                }))?;
                continue;
            }
            let slices = hour_slices(c.start_ms, c.end_ms);
            let weights: Vec<i64> = slices.iter().map(|(a, b)| b - a).collect();
            let billed = split_exact(c.billed_cost, &weights);
            let effective = split_exact(c.effective_cost, &weights);
            let list = split_exact(c.list_cost, &weights);
            for (i, (a, b)) in slices.iter().enumerate() {
                // Usage a contract covers goes out as its Used / overage rows instead.
                if let Some(parts) = overlay.slices.get(&(c.key.clone(), *a)) {
                    for part in parts {
                        let mut row =
                            native_row(c, *a, *b, part.billed, part.effective, part.billed.max(part.effective))?;
                        for (k, v) in &part.fields {
                            row.insert(k, v.clone());
                        }
                        w.write_record(FOCUS_COLUMNS.iter().map(|col| row.get(col).map(String::as_str).unwrap_or("")))?;
                    }
                    continue;
                }
                let row = native_row(c, *a, *b, billed[i], effective[i], list[i])?;
                w.write_record(FOCUS_COLUMNS.iter().map(|col| row.get(col).map(String::as_str).unwrap_or("")))?;
            }
        }
        for row in &overlay.commitment_rows {
            w.write_record(FOCUS_COLUMNS.iter().map(|col| row.get(col).map(String::as_str).unwrap_or("")))?;
        }
        w.flush()?;
    }
    match &args.output {
        Some(path) => std::fs::write(path, &buffer).map_err(|e| anyhow!("cannot write {}: {e}", path.display()))?,
        None => out.write_all(&buffer)?,
    }
    Ok(ExitStatus::Success)
}

/// One hourly FOCUS row of a gpubroker charge.
fn native_row(
    c: &Charge,
    a: i64,
    b: i64,
    billed: Decimal,
    effective: Decimal,
    list: Decimal,
) -> Result<BTreeMap<&'static str, String>> {
    let (a, b) = (&a, &b);
    let hours = Decimal::from(b - a) / Decimal::from(3_600_000);
    let (period_start, period_end) = month_bounds(*a);
    let details =
        serde_json::json!({"GpuCount": c.gpu_count, "GpuType": c.gpu, "InstanceType": c.instance_type}).to_string();
    let mut row: BTreeMap<&str, String> = BTreeMap::new();
    row.insert("BilledCost", billed.to_string());
    row.insert("BillingCurrency", c.currency.to_string());
    row.insert("BillingPeriodStart", period_start);
    row.insert("BillingPeriodEnd", period_end);
    row.insert("ChargeCategory", "Usage".into());
    row.insert(
        "ChargeDescription",
        format!("gpubroker {}: {} {}x{}", c.source_name(), c.instance_type, c.gpu, c.gpu_count),
    );
    row.insert("ChargeFrequency", "Usage-Based".into());
    row.insert("ChargePeriodStart", iso(*a));
    row.insert("ChargePeriodEnd", iso(*b));
    row.insert("ConsumedQuantity", hours.round_dp(10).normalize().to_string());
    row.insert("ConsumedUnit", "Hours".into());
    row.insert("EffectiveCost", effective.to_string());
    row.insert("InvoiceIssuerName", c.provider.clone());
    row.insert("ListCost", list.to_string());
    row.insert("PricingCategory", pricing_category(&c.pricing).into());
    row.insert("PricingCurrency", c.currency.to_string());
    row.insert("PricingQuantity", hours.round_dp(10).normalize().to_string());
    row.insert("PricingUnit", "Hours".into());
    row.insert("ProviderName", c.provider.clone());
    row.insert("PublisherName", c.provider.clone());
    row.insert("RegionId", c.region.clone());
    row.insert("ResourceId", c.resource_id.clone());
    row.insert("ResourceType", "GPU instance".into());
    row.insert("ServiceCategory", "Compute".into());
    row.insert("ServiceName", c.service.clone());
    row.insert("SkuId", c.instance_type.clone());
    row.insert("SkuPriceDetails", details);
    row.insert("Tags", serde_json::to_string(&c.tags)?);
    row.insert("x_GpuCount", c.gpu_count.to_string());
    row.insert("x_GpuType", c.gpu.clone());
    row.insert("x_GpuHours", (Decimal::from(c.gpu_count) * hours).round_dp(10).normalize().to_string());
    row.insert("x_Source", c.source_name().into());
    Ok(row)
}

#[derive(Serialize)]
struct RowJson {
    key: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    work_units: Option<Decimal>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cost_per_unit: Option<Decimal>,
    billed_cost: Decimal,
    effective_cost: Decimal,
    list_cost: Decimal,
    gpu_hours: Decimal,
    charges: usize,
    unused_commitment: Decimal,
    currency: Currency,
}

#[derive(Serialize)]
struct ReportJson {
    by: String,
    /// The dated rates used to convert amounts into `currency` (empty when nothing was converted).
    exchange_rates: Vec<gpubroker_core::FxRate>,
    /// Cost of GPUs under 10% utilisation for 15+ minutes (when samples were recorded).
    #[serde(skip_serializing_if = "Option::is_none")]
    idle_cost: Option<Decimal>,
    currency: Currency,
    rows: Vec<RowJson>,
    total: RowJson,
    savings_vs_list: Decimal,
}

pub(crate) fn report(ctx: &Context, args: &CostReportArgs, out: &mut impl Write) -> Result<ExitStatus> {
    let bound = |t: &Option<String>, name: &str| -> Result<Option<i64>> {
        match t {
            None => Ok(None),
            Some(text) => Ok(Some(parse_time(text).map_err(|m| anyhow!("`--{name}`: {m}"))?.as_millisecond())),
        }
    };
    let sources = args
        .source
        .iter()
        .map(|s| match s.as_str() {
            "job" => Ok(ChargeSource::Job),
            "usage" => Ok(ChargeSource::Usage),
            "focus" => Ok(ChargeSource::Focus),
            other => Err(anyhow!("`--source {other}`: expected job, usage or focus")),
        })
        .collect::<Result<Vec<_>>>()?;
    let by = GroupBy::parse(&args.by);
    // The database adds the amounts exactly; rows come per (group, currency).
    let per_currency = CostLedger::open()?.report(&by, bound(&args.from, "from")?, bound(&args.to, "to")?, &sources)?;
    // One currency: the one asked for, else the one most charges are in.
    let currency = ctx.currency.unwrap_or_else(|| {
        let mut counts: BTreeMap<Currency, usize> = BTreeMap::new();
        for (r, c) in &per_currency {
            *counts.entry(*c).or_default() += r.charges;
        }
        counts.into_iter().max_by_key(|(_, n)| *n).map(|(c, _)| c).unwrap_or(Currency::USD)
    });
    let fx = ctx.catalog.fx();
    let mut merged: BTreeMap<String, gpubroker_ledger::ReportRow> = BTreeMap::new();
    let mut converted: std::collections::BTreeSet<Currency> = Default::default();
    for (r, c) in per_currency {
        if c != currency {
            converted.insert(c);
            converted.insert(currency);
        }
        let factor = fx.factor(c, currency)?;
        let row = merged.entry(r.key.clone()).or_insert_with(|| gpubroker_ledger::ReportRow {
            key: r.key.clone(),
            billed_cost: Decimal::ZERO,
            effective_cost: Decimal::ZERO,
            list_cost: Decimal::ZERO,
            gpu_hours: Decimal::ZERO,
            charges: 0,
            unused_commitment: Decimal::ZERO,
        });
        row.billed_cost += r.billed_cost * factor;
        row.effective_cost += r.effective_cost * factor;
        row.list_cost += r.list_cost * factor;
        row.gpu_hours += r.gpu_hours;
        row.charges += r.charges;
        row.unused_commitment += r.unused_commitment * factor;
    }
    let mut rows: Vec<gpubroker_ledger::ReportRow> = merged.into_values().collect();
    rows.sort_by(|a, b| b.billed_cost.cmp(&a.billed_cost).then(a.key.cmp(&b.key)));
    let sum = |f: &dyn Fn(&gpubroker_ledger::ReportRow) -> Decimal| rows.iter().map(f).sum::<Decimal>();
    // Units of useful work per group, when asked: from the charges' `work_unit`/`work_amount` tags.
    let work: Option<BTreeMap<String, Decimal>> = match &args.per {
        None => None,
        Some(unit) => {
            let mut m = BTreeMap::new();
            for c in CostLedger::open()?.charges(bound(&args.from, "from")?, bound(&args.to, "to")?, &sources)? {
                if c.tags.get("work_unit") == Some(unit)
                    && let Some(amount) = c.tags.get("work_amount").and_then(|a| Decimal::from_str(a).ok())
                {
                    let key = by.key(&c);
                    *m.entry(key).or_insert(Decimal::ZERO) += amount;
                }
            }
            Some(m)
        }
    };
    let per_unit = |key: &str, billed: Decimal| -> (Option<Decimal>, Option<Decimal>) {
        let Some(w) = &work else { return (None, None) };
        let units = if key == "total" { w.values().copied().sum() } else { w.get(key).copied().unwrap_or_default() };
        (Some(units), (!units.is_zero()).then(|| (billed / units).round_dp(12)))
    };
    let total_billed = rows.iter().map(|r| r.billed_cost).sum::<Decimal>();
    let (work_units, cost_per_unit) = per_unit("total", total_billed);
    let total = RowJson {
        key: "total".into(),
        work_units,
        cost_per_unit,
        billed_cost: sum(&|r| r.billed_cost),
        effective_cost: sum(&|r| r.effective_cost),
        list_cost: sum(&|r| r.list_cost),
        gpu_hours: sum(&|r| r.gpu_hours),
        charges: rows.iter().map(|r| r.charges).sum(),
        unused_commitment: sum(&|r| r.unused_commitment),
        currency,
    };
    let report = ReportJson {
        exchange_rates: converted.iter().filter_map(|c| fx.rate(*c).cloned()).collect(),
        idle_cost: super::waste::default_idle_cost(ctx)?,
        by: args.by.clone(),
        currency,
        savings_vs_list: total.list_cost - total.effective_cost,
        rows: rows
            .into_iter()
            .map(|r| RowJson {
                work_units: per_unit(&r.key, r.billed_cost).0,
                cost_per_unit: per_unit(&r.key, r.billed_cost).1,
                key: r.key,
                billed_cost: r.billed_cost,
                effective_cost: r.effective_cost,
                list_cost: r.list_cost,
                gpu_hours: r.gpu_hours,
                charges: r.charges,
                unused_commitment: r.unused_commitment,
                currency,
            })
            .collect(),
        total,
    };
    if args.json {
        write_json(out, &report)?;
        return Ok(ExitStatus::Success);
    }
    let per_header = args.per.as_ref().map(|u| format!("per {u}"));
    let mut header = vec![args.by.as_str(), "billed", "effective", "list", "gpu-hours", "charges"];
    if let Some(h) = &per_header {
        header.push(h.as_str());
    }
    let mut t = table(&header);
    for r in report.rows.iter().chain(std::iter::once(&report.total)) {
        let mut cells = vec![
            Cell::new(&r.key),
            Cell::new(money(r.billed_cost, currency)),
            Cell::new(money(r.effective_cost, currency)),
            Cell::new(money(r.list_cost, currency)),
            Cell::new(format!("{:.2}", r.gpu_hours)),
            Cell::new(r.charges),
        ];
        if per_header.is_some() {
            cells.push(Cell::new(
                r.cost_per_unit
                    .map(|c| format!("{} {}", c.round_sf(4).unwrap_or(c).normalize(), currency))
                    .unwrap_or_else(|| "-".into()),
            ));
        }
        t.add_row(cells);
    }
    align_right(&mut t, &[1, 2, 3, 4, 5]);
    writeln!(out, "{t}")?;
    writeln!(out, "savings vs list (on-demand) prices: {}", money(report.savings_vs_list, currency))?;
    for r in &report.exchange_rates {
        if r.currency != Currency::USD {
            writeln!(out, "converted at 1 {} = {} USD (as of {}, {})", r.currency, r.usd_per_unit, r.as_of, r.source)?;
        }
    }
    if let Some(idle) = report.idle_cost {
        writeln!(out, "idle (GPUs under 10% for 15 min or more, `gpubroker cost idle`): {}", money(idle, currency))?;
    }
    if !report.total.unused_commitment.is_zero() {
        writeln!(out, "unused commitment (waste): {}", money(report.total.unused_commitment, currency))?;
    }
    Ok(ExitStatus::Success)
}
