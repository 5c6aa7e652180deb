//! Hourly GPU demand for the commitment planner, from a CSV, a FOCUS bill or the ledger.

use std::collections::{BTreeMap, HashMap};

use anyhow::{Result, anyhow, bail};
use gpubroker_ledger::Charge;

use crate::commands::usage::parse_time;

/// Demand for one GPU type at one provider (empty: any provider).
pub(super) type DemandKey = (String, String);

/// Hourly demand per GPU type, and the interruptible share.
pub(super) struct Demand {
    pub(super) hourly: Vec<f64>,
    pub(super) interruptible: f64,
}

pub(super) fn read_demand_csv(
    path: &std::path::Path,
    default_interruptible: f64,
) -> Result<BTreeMap<DemandKey, Demand>> {
    let shown = path.display().to_string();
    let mut reader =
        csv::ReaderBuilder::new().flexible(true).from_path(path).map_err(|e| anyhow!("{shown}: cannot read: {e}"))?;
    let headers = reader.headers().map_err(|e| anyhow!("{shown}:1: {e}"))?.clone();
    let col = |n: &str| headers.iter().position(|h| h.trim() == n);
    let (Some(ti), Some(gi), Some(ci)) = (col("timestamp"), col("gpu"), col("count")) else {
        bail!("{shown}:1: header: expected columns timestamp,gpu,count[,interruptible][,provider]");
    };
    let ii = col("interruptible");
    let pi = col("provider");
    // (gpu, provider, hour) -> (count, interruptible count)
    let mut cells = Cells::new();
    for rec in reader.records() {
        let rec = rec.map_err(|e| anyhow!("{shown}: malformed CSV: {e}"))?;
        let line = rec.position().map(|p| p.line()).unwrap_or(0);
        let err = |field: &str, m: String| anyhow!("{shown}:{line}: {field}: {m}");
        let get = |i: usize| rec.get(i).map(str::trim).unwrap_or("");
        let at = parse_time(get(ti)).map_err(|m| err("timestamp", m))?;
        let count: f64 = get(ci).parse().map_err(|_| err("count", format!("`{}` is not a number", get(ci))))?;
        if !(count.is_finite() && count >= 0.0) {
            return Err(err("count", format!("`{count}` must be >= 0")));
        }
        let share = match ii.map(get) {
            None | Some("") => default_interruptible,
            Some("true") => 1.0,
            Some("false") => 0.0,
            Some(t) => t
                .parse::<f64>()
                .ok()
                .filter(|v| (0.0..=1.0).contains(v))
                .ok_or_else(|| err("interruptible", format!("`{t}`: expected true, false or a share 0-1")))?,
        };
        let provider = pi.map(get).unwrap_or("").to_string();
        let cell = cells
            .entry((get(gi).to_string(), provider))
            .or_default()
            .entry(at.as_second().div_euclid(3600))
            .or_default();
        cell.0 += count;
        cell.1 += count * share;
    }
    into_series(cells)
}

/// (count, interruptible count) per hour, per demand series. Hashed, not ordered: a year of
/// 20 GPU types is 175k rows, and ordered string keys made parsing a CSV cost 0.6 s of memcmp.
type Cells = HashMap<DemandKey, HashMap<i64, (f64, f64)>>;

/// Dense hourly series from the cells; hours with no row count as zero demand.
fn into_series(cells: Cells) -> Result<BTreeMap<DemandKey, Demand>> {
    cells
        .into_iter()
        .map(|(key, hours)| {
            let first = hours.keys().copied().min().unwrap_or(0);
            let last = hours.keys().copied().max().unwrap_or(0);
            // A mistyped year would otherwise ask for gigabytes of empty hours.
            if last - first >= MAX_HISTORY_HOURS {
                let at = |h: i64| jiff::Timestamp::from_second(h * 3600).map(|t| t.to_string()).unwrap_or_default();
                bail!(
                    "`{}` demand spans {} to {}: more than 10 years of hourly history; check the timestamps",
                    key.0,
                    at(first),
                    at(last)
                );
            }
            let mut hourly = vec![0.0; (last - first + 1) as usize];
            let (mut total, mut flex) = (0.0, 0.0);
            for (h, (c, f)) in hours {
                hourly[(h - first) as usize] += c;
                total += c;
                flex += f;
            }
            Ok((key, Demand { hourly, interruptible: if total > 0.0 { flex / total } else { 0.0 } }))
        })
        .collect()
}

/// Ten years of hours.
const MAX_HISTORY_HOURS: i64 = 10 * 8766;

/// GPU-hours of metered charges (the ledger's, or a FOCUS file's), spread over the hours each
/// charge period covers.
pub(super) fn demand_from_charges(
    charges: &[Charge],
    default_interruptible: f64,
) -> Result<BTreeMap<DemandKey, Demand>> {
    let mut cells = Cells::new();
    for c in charges {
        if c.gpu.is_empty() || c.gpu_count == 0 || c.end_ms <= c.start_ms {
            continue;
        }
        if c.end_ms - c.start_ms > MAX_HISTORY_HOURS * 3_600_000 {
            bail!("charge `{}` runs more than 10 years; check its start and end", c.key);
        }
        // Work that already ran on spot tolerates interruption; the rest takes the flag.
        let spot = c.pricing.eq_ignore_ascii_case("spot") || c.pricing.eq_ignore_ascii_case("dynamic"); // FOCUS PricingCategory
        let interruptible = if spot { 1.0 } else { default_interruptible };
        let series = cells.entry((c.gpu.clone(), c.provider.clone())).or_default();
        for (hour, ms) in c.spread(3_600_000) {
            let gpus = c.gpu_count as f64 * ms as f64 / 3_600_000.0;
            let cell = series.entry(hour).or_default();
            cell.0 += gpus;
            cell.1 += gpus * interruptible;
        }
    }
    into_series(cells)
}
