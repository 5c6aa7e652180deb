//! Parsing of each catalog table, and writing of the offers table.

use std::io::Write;
use std::str::FromStr;

use gpubroker_core::{Billing, Currency, FxRate, Money, OffPeakWindow, PricePer, PricingModel, RateCard};

use crate::error::CatalogError;
use crate::gpu::GpuSpec;
use crate::model::ModelPreset;
use crate::offer::{Offer, StoragePrice, TransferPrice};
use crate::rows::{Row, Table};

pub(crate) const GPU_COLUMNS: &[&str] = &["name", "memory_gb", "mem_bw_tb_s"];
pub(crate) const OFFER_COLUMNS: &[&str] =
    &["provider", "region", "instance_type", "gpu", "gpu_count", "pricing", "price", "currency"];
pub(crate) const TRANSFER_COLUMNS: &[&str] = &["provider", "region", "kind", "price_per_gb", "currency"];
pub(crate) const STORAGE_COLUMNS: &[&str] = &["provider", "region", "kind", "price_per_gb_month", "currency"];
pub(crate) const FX_COLUMNS: &[&str] = &["currency", "usd_per_unit"];
pub(crate) const MODEL_COLUMNS: &[&str] = &["name", "total_params", "layers", "hidden", "heads"];

fn currency(row: &Row<'_>, field: &str) -> Result<Currency, CatalogError> {
    row.parse::<Currency>(field, "an ISO 4217 currency code")
}

fn as_of(row: &Row<'_>) -> Result<jiff::civil::Date, CatalogError> {
    if row.opt("as_of").is_some() { row.date("as_of") } else { Ok(jiff::civil::Date::constant(1970, 1, 1)) }
}

pub(crate) fn parse_gpus(table: &Table) -> Result<Vec<GpuSpec>, CatalogError> {
    let mut out = Vec::new();
    for (line, rec) in &table.rows {
        let row = table.row(*line, rec);
        let memory_gb = row.number("memory_gb")?;
        if memory_gb <= 0.0 {
            return Err(row.error("memory_gb", "must be > 0"));
        }
        out.push(GpuSpec {
            name: row.req("name")?.to_string(),
            aliases: row.list("aliases"),
            vendor: row.opt("vendor").unwrap_or("nvidia").to_ascii_lowercase(),
            architecture: row.opt("architecture").unwrap_or("unknown").to_ascii_lowercase(),
            memory_gb,
            mem_bw_tb_s: row.number("mem_bw_tb_s")?,
            bf16_tflops: row.number_opt("bf16_tflops")?,
            fp16_tflops: row.number_opt("fp16_tflops")?,
            fp8_tflops: row.number_opt("fp8_tflops")?,
            int8_tops: row.number_opt("int8_tops")?,
            fp4_tflops: row.number_opt("fp4_tflops")?,
            fp32_tflops: row.number_opt("fp32_tflops")?,
            tdp_w: row.number_opt("tdp_w")?,
            scaleup_link: row.opt("scaleup_link").unwrap_or("PCIe").to_string(),
            scaleup_bw_gb_s: row.number_opt("scaleup_bw_gb_s")?.unwrap_or(0.0),
            host_bw_gb_s: row.number_opt("host_bw_gb_s")?,
            source: row.opt("source").unwrap_or("").to_string(),
            as_of: as_of(&row)?,
        });
    }
    Ok(out)
}

/// Parses offers. `resolve_gpu` maps a GPU name or alias to its canonical name.
pub(crate) fn parse_offers(
    table: &Table,
    resolve_gpu: &dyn Fn(&str) -> Option<String>,
) -> Result<Vec<Offer>, CatalogError> {
    let mut out = Vec::new();
    for (line, rec) in &table.rows {
        let row = table.row(*line, rec);
        out.push(parse_offer(&row, resolve_gpu)?);
    }
    Ok(out)
}

pub(crate) fn parse_offer(row: &Row<'_>, resolve_gpu: &dyn Fn(&str) -> Option<String>) -> Result<Offer, CatalogError> {
    let gpu_name = row.req("gpu")?;
    let gpu = resolve_gpu(gpu_name).ok_or_else(|| {
        row.error("gpu", format!("unknown GPU `{gpu_name}`; run `gpubroker gpus` for the known names"))
    })?;
    let gpu_count: u32 = row.parse("gpu_count", "a whole number of GPUs")?;
    if gpu_count == 0 || gpu_count > 64 {
        return Err(row.error("gpu_count", format!("`{gpu_count}` must be between 1 and 64")));
    }
    let pricing = row.parse::<PricingModel>("pricing", "a pricing model")?;
    let per = match row.opt("per") {
        Some(_) => row.parse::<PricePer>("per", "a price unit")?,
        None => PricePer::Hour,
    };
    let price = Money::new(row.decimal("price", false)?, currency(row, "currency")?);
    let increment_s = row.parse_opt::<u32>("billing_increment_s", "a whole number of seconds")?.unwrap_or(1);
    let minimum_s = row.parse_opt::<u32>("min_billed_s", "a whole number of seconds")?.unwrap_or(0);
    if increment_s == 0 {
        return Err(row.error("billing_increment_s", "must be at least 1 second"));
    }
    let window = match (pricing, row.opt("window")) {
        (PricingModel::OffPeak, Some(w)) => Some(OffPeakWindow::parse(w).map_err(|e| row.error("window", e))?),
        (PricingModel::OffPeak, None) => {
            return Err(row.error("window", "an off_peak price needs its window, such as `01:00-08:00 Asia/Shanghai`"));
        }
        _ => None,
    };
    let spot_interruption = row.parse_opt("spot_interruption", "a Spot Advisor bucket")?;
    Ok(Offer {
        provider: row.req("provider")?.to_ascii_lowercase(),
        region: row.req("region")?.to_string(),
        zone: row.opt("zone").map(String::from),
        instance_type: row.req("instance_type")?.to_string(),
        gpu,
        gpu_count,
        vcpus: row.number_opt("vcpus")?,
        memory_gib: row.number_opt("memory_gib")?,
        rate: RateCard {
            pricing,
            price,
            per,
            billing: Billing { increment_s, minimum_s },
            window,
            outside_window_hourly: None,
            free_if_preempted_within_s: row
                .parse_opt::<u32>("preempt_free_s", "a whole number of seconds")?
                .unwrap_or(0),
        },
        spot_interruption,
        source: row.opt("source").unwrap_or("").to_string(),
        as_of: as_of(row)?,
        notes: row.opt("notes").unwrap_or("").to_string(),
    })
}

pub(crate) fn parse_transfer(table: &Table) -> Result<Vec<TransferPrice>, CatalogError> {
    let mut out = Vec::new();
    for (line, rec) in &table.rows {
        let row = table.row(*line, rec);
        out.push(TransferPrice {
            provider: row.req("provider")?.to_ascii_lowercase(),
            region: row.req("region")?.to_string(),
            kind: row.parse("kind", "a transfer kind")?,
            from_gb: if row.opt("from_gb").is_some() { row.decimal("from_gb", true)? } else { Default::default() },
            price_per_gb: Money::new(row.decimal("price_per_gb", true)?, currency(&row, "currency")?),
            source: row.opt("source").unwrap_or("").to_string(),
            as_of: as_of(&row)?,
        });
    }
    Ok(out)
}

pub(crate) fn parse_storage(table: &Table) -> Result<Vec<StoragePrice>, CatalogError> {
    let mut out = Vec::new();
    for (line, rec) in &table.rows {
        let row = table.row(*line, rec);
        out.push(StoragePrice {
            provider: row.req("provider")?.to_ascii_lowercase(),
            region: row.req("region")?.to_string(),
            kind: row.parse("kind", "a storage kind")?,
            price_per_gb_month: Money::new(row.decimal("price_per_gb_month", true)?, currency(&row, "currency")?),
            source: row.opt("source").unwrap_or("").to_string(),
            as_of: as_of(&row)?,
        });
    }
    Ok(out)
}

pub(crate) fn parse_fx(table: &Table) -> Result<Vec<FxRate>, CatalogError> {
    let mut out = Vec::new();
    for (line, rec) in &table.rows {
        let row = table.row(*line, rec);
        out.push(FxRate {
            currency: currency(&row, "currency")?,
            usd_per_unit: row.decimal("usd_per_unit", false)?,
            as_of: as_of(&row)?,
            source: row.opt("source").unwrap_or("").to_string(),
        });
    }
    Ok(out)
}

pub(crate) fn parse_models(table: &Table) -> Result<Vec<ModelPreset>, CatalogError> {
    let mut out = Vec::new();
    for (line, rec) in &table.rows {
        let row = table.row(*line, rec);
        let total_params = row.number("total_params")?;
        let active_params = row.number_opt("active_params")?.unwrap_or(total_params);
        if total_params <= 0.0 || active_params > total_params * 1.000001 {
            return Err(row.error("active_params", "must be > 0 and at most total_params"));
        }
        let heads: u32 = row.parse("heads", "a whole number")?;
        let hidden: u32 = row.parse("hidden", "a whole number")?;
        if heads == 0 {
            return Err(row.error("heads", "must be at least 1"));
        }
        out.push(ModelPreset {
            name: row.req("name")?.to_ascii_lowercase(),
            aliases: row.list("aliases"),
            family: row.opt("family").unwrap_or("").to_string(),
            total_params,
            active_params,
            layers: row.parse("layers", "a whole number")?,
            hidden,
            ffn: row.parse_opt("ffn", "a whole number")?,
            heads,
            kv_heads: row.parse_opt("kv_heads", "a whole number")?.unwrap_or(heads),
            head_dim: row.parse_opt("head_dim", "a whole number")?.unwrap_or(hidden / heads),
            vocab: row.parse_opt("vocab", "a whole number")?.unwrap_or(32_000),
            context: row.parse_opt("context", "a whole number")?,
            moe_experts: row.parse_opt("moe_experts", "a whole number")?,
            moe_active_experts: row.parse_opt("moe_active_experts", "a whole number")?,
            mla_kv_lora_rank: row.parse_opt("mla_kv_lora_rank", "a whole number")?,
            mla_rope_dim: row.parse_opt("mla_rope_dim", "a whole number")?,
            source: row.opt("source").unwrap_or("").to_string(),
        });
    }
    Ok(out)
}

/// The columns of `offers.csv`, in order.
pub(crate) const OFFER_HEADER: &[&str] = &[
    "provider",
    "region",
    "zone",
    "instance_type",
    "gpu",
    "gpu_count",
    "vcpus",
    "memory_gib",
    "pricing",
    "price",
    "currency",
    "per",
    "billing_increment_s",
    "min_billed_s",
    "spot_interruption",
    "window",
    "source",
    "as_of",
    "notes",
    "preempt_free_s",
];

/// Writes offers in the `offers.csv` schema that `--catalog` reads.
pub fn write_offers_csv<W: Write>(out: W, offers: &[Offer]) -> Result<(), csv::Error> {
    let mut w = csv::Writer::from_writer(out);
    w.write_record(OFFER_HEADER)?;
    let num = |v: Option<f64>| v.map(|x| format!("{x}")).unwrap_or_default();
    for o in offers {
        w.write_record([
            o.provider.as_str(),
            o.region.as_str(),
            o.zone.as_deref().unwrap_or(""),
            o.instance_type.as_str(),
            o.gpu.as_str(),
            &o.gpu_count.to_string(),
            &num(o.vcpus),
            &num(o.memory_gib),
            o.rate.pricing.as_str(),
            &o.rate.price.amount.normalize().to_string(),
            o.rate.price.currency.as_str(),
            o.rate.per.as_str(),
            &o.rate.billing.increment_s.to_string(),
            &o.rate.billing.minimum_s.to_string(),
            o.spot_interruption.map(|b| b.label()).unwrap_or(""),
            o.rate.window.as_ref().map(|w| w.text.as_str()).unwrap_or(""),
            o.source.as_str(),
            &o.as_of.to_string(),
            o.notes.as_str(),
            &o.rate.free_if_preempted_within_s.to_string(),
        ])?;
    }
    w.flush()?;
    Ok(())
}

impl FromStr for crate::catalog::CatalogSource {
    type Err = std::convert::Infallible;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(if s.eq_ignore_ascii_case("builtin") {
            crate::catalog::CatalogSource::Builtin
        } else {
            crate::catalog::CatalogSource::Path(s.into())
        })
    }
}
