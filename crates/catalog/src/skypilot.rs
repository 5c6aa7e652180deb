//! Import of SkyPilot catalogs (`<cloud>/vms.csv`, schema v8) into gpubroker offers.
//!
//! SkyPilot's CSVs have quirks this importer absorbs: the GPU info column is a Python dict
//! written as text (we only need `AcceleratorName`/`AcceleratorCount`), prices may be empty
//! (capacity-block-only types; no spot market), the on-demand price repeats on every zone row of
//! a region, zones are zone IDs (`use1-az1`), and prices are per instance per hour. Rows that
//! cannot be used are reported as [`Warning`]s and skipped; nothing here is fatal except an
//! unreadable file.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};

use gpubroker_core::{Billing, Currency, Money, PricePer, PricingModel, RateCard};
use jiff::civil::Date;
use rust_decimal::Decimal;

use crate::catalog::Catalog;
use crate::error::{CatalogError, Warning};
use crate::offer::Offer;
use crate::rows::Table;

/// What an import produced.
#[derive(Debug, Default)]
pub struct Import {
    /// The offers, ready for [`crate::write_offers_csv`].
    pub offers: Vec<Offer>,
    /// Rows skipped or adjusted, with file and line.
    pub warnings: Vec<Warning>,
    /// Counts of what was read and skipped.
    pub stats: ImportStats,
}

/// Counts for the import summary.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ImportStats {
    /// `vms.csv` files read.
    pub files: usize,
    /// Data rows read.
    pub rows: usize,
    /// Rows without an accelerator (CPU instances).
    pub cpu_only: usize,
    /// Duplicate offers dropped (same instance, region, zone and pricing).
    pub duplicates: usize,
    /// Rows with an unusable value.
    pub bad_rows: usize,
    /// Offers per pricing model.
    pub per_pricing: BTreeMap<String, usize>,
}

/// Reads every `<cloud>/vms.csv` under `dir` (or `dir` itself if it is a `vms.csv`).
///
/// `known` supplies the GPU names, each provider's billing rules (taken from its built-in
/// offers) and, for AWS, the Spot Advisor interruption buckets; `as_of` dates the offers.
pub fn import(dir: &Path, known: &Catalog, as_of: Date) -> Result<Import, CatalogError> {
    let files = find_vms_files(dir)?;
    if files.is_empty() {
        return Err(CatalogError::file(
            &dir.display().to_string(),
            "no SkyPilot `vms.csv` found (expected DIR/<cloud>/vms.csv)",
        ));
    }
    let mut import = Import::default();
    let mut seen: HashMap<String, (String, u64)> = HashMap::new();
    for (cloud, path) in files {
        import.stats.files += 1;
        import_file(&cloud, &path, known, as_of, &mut import, &mut seen)?;
    }
    for o in &import.offers {
        *import.stats.per_pricing.entry(o.rate.pricing.to_string()).or_default() += 1;
    }
    Ok(import)
}

fn find_vms_files(dir: &Path) -> Result<Vec<(String, PathBuf)>, CatalogError> {
    let shown = dir.display().to_string();
    if dir.is_file() {
        let cloud =
            dir.parent().and_then(|p| p.file_name()).and_then(|n| n.to_str()).unwrap_or("unknown").to_ascii_lowercase();
        return Ok(vec![(cloud, dir.to_path_buf())]);
    }
    let entries =
        std::fs::read_dir(dir).map_err(|e| CatalogError::file(&shown, format!("cannot read directory: {e}")))?;
    let mut out = Vec::new();
    for entry in entries.flatten() {
        let p = entry.path().join("vms.csv");
        if p.is_file() {
            let cloud = entry.file_name().to_string_lossy().to_ascii_lowercase();
            out.push((cloud, p));
        }
    }
    out.sort();
    Ok(out)
}

fn import_file(
    cloud: &str,
    path: &Path,
    known: &Catalog,
    as_of: Date,
    import: &mut Import,
    seen: &mut HashMap<String, (String, u64)>,
) -> Result<(), CatalogError> {
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| CatalogError::file(&shown, format!("cannot read: {e}")))?;
    let table =
        Table::parse(&shown, &text, &["InstanceType", "AcceleratorName", "AcceleratorCount", "Price", "Region"])?;
    let billing = provider_billing(known, cloud);
    // The provider's first-hour rule for reclaimed spot, as its built-in spot offers record it.
    let first_hour_free = known
        .offers()
        .iter()
        .find(|o| o.provider == cloud && o.rate.pricing == PricingModel::Spot)
        .map(|o| o.rate.free_if_preempted_within_s)
        .unwrap_or(0);
    let spot_buckets: HashMap<(&str, &str), _> = known
        .offers()
        .iter()
        .filter(|o| o.provider == cloud && o.spot_interruption.is_some())
        .map(|o| ((o.region.as_str(), o.instance_type.as_str()), o.spot_interruption))
        .collect();
    let mut unknown_gpus: HashSet<String> = HashSet::new();
    for (line, rec) in &table.rows {
        import.stats.rows += 1;
        let row = table.row(*line, rec);
        let warn = |import: &mut Import, message: String| {
            import.warnings.push(Warning { file: shown.clone(), line: *line, message });
        };
        let Some(accel) = row.opt("AcceleratorName") else {
            import.stats.cpu_only += 1;
            continue;
        };
        let Some(gpu) = known.gpu(accel) else {
            import.stats.bad_rows += 1;
            if unknown_gpus.insert(accel.to_string()) {
                warn(import, format!("AcceleratorName: unknown accelerator `{accel}`; rows with it are skipped"));
            }
            continue;
        };
        let count = match row.opt("AcceleratorCount").and_then(|c| c.parse::<f64>().ok()) {
            Some(c) if c >= 1.0 && c.fract() == 0.0 && c <= 64.0 => c as u32,
            other => {
                import.stats.bad_rows += 1;
                warn(
                    import,
                    format!(
                        "AcceleratorCount: `{}` is not a whole number of GPUs from 1 to 64; skipped",
                        other.map(|c| c.to_string()).unwrap_or_default()
                    ),
                );
                continue;
            }
        };
        let (Some(instance_type), Some(region)) = (row.opt("InstanceType"), row.opt("Region")) else {
            import.stats.bad_rows += 1;
            warn(import, "InstanceType/Region: empty; skipped".into());
            continue;
        };
        let zone = row.opt("AvailabilityZone");
        for (column, pricing) in [("Price", PricingModel::OnDemand), ("SpotPrice", PricingModel::Spot)] {
            let Some(text) = row.opt(column) else { continue };
            let price = match Decimal::from_str_exact(text).or_else(|_| Decimal::from_scientific(text)) {
                Ok(p) if p > Decimal::ZERO => p,
                _ => {
                    import.stats.bad_rows += 1;
                    warn(import, format!("{column}: `{text}` is not a price > 0; skipped"));
                    continue;
                }
            };
            // On-demand prices are regional: one offer per region, not per zone row.
            let zone = if pricing == PricingModel::Spot { zone } else { None };
            let offer = Offer {
                provider: cloud.to_string(),
                region: region.to_string(),
                zone: zone.map(String::from),
                instance_type: instance_type.to_string(),
                gpu: gpu.name.clone(),
                gpu_count: count,
                vcpus: row.number_opt("vCPUs").ok().flatten(),
                memory_gib: row.number_opt("MemoryGiB").ok().flatten(),
                rate: RateCard {
                    pricing,
                    price: Money::new(price, Currency::USD),
                    per: PricePer::Hour,
                    billing,
                    window: None,
                    outside_window_hourly: None,
                    free_if_preempted_within_s: if pricing == PricingModel::Spot { first_hour_free } else { 0 },
                },
                spot_interruption: if pricing == PricingModel::Spot {
                    spot_buckets.get(&(region, instance_type)).copied().flatten()
                } else {
                    None
                },
                source: format!("SkyPilot catalog {cloud}/vms.csv line {line}"),
                as_of,
                notes: String::new(),
            };
            let key = offer.key();
            if let Some((first_file, first_line)) = seen.get(&key) {
                // The repeated on-demand price on every zone row of a region is expected, not a duplicate.
                let same_region_repeat = pricing == PricingModel::OnDemand && first_file == &shown;
                if !same_region_repeat {
                    import.stats.duplicates += 1;
                    warn(import, format!("duplicate of {first_file}:{first_line} ({key}); kept the first"));
                }
                continue;
            }
            seen.insert(key, (shown.clone(), *line));
            import.offers.push(offer);
        }
    }
    Ok(())
}

/// Billing rules of `provider` as its built-in offers record them; per-second otherwise.
fn provider_billing(known: &Catalog, provider: &str) -> Billing {
    known
        .offers()
        .iter()
        .find(|o| o.provider == provider && o.rate.pricing == PricingModel::OnDemand)
        .map(|o| o.rate.billing)
        .unwrap_or(Billing::PER_SECOND)
}
