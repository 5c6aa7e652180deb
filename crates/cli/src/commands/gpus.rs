use std::collections::BTreeMap;
use std::io::Write;

use anyhow::{Result, anyhow};
use comfy_table::Cell;
use gpubroker_catalog::Offer;
use gpubroker_core::{Currency, Decimal, PricingModel};
use serde::Serialize;

use crate::ExitStatus;
use crate::args::GpusArgs;
use crate::context::Context;
use crate::output::{align_right, money, table, write_json};

#[derive(Serialize)]
struct GpuRow<'a> {
    name: &'a str,
    memory_gb: f64,
    mem_bw_tb_s: f64,
    bf16_tflops: Option<f64>,
    fp8_tflops: Option<f64>,
    cheapest_on_demand_per_gpu_hour: Option<Decimal>,
    cheapest_spot_per_gpu_hour: Option<Decimal>,
    providers: usize,
    currency: Currency,
}

#[derive(Serialize)]
struct OfferRow<'a> {
    provider: &'a str,
    pricing: PricingModel,
    instance_type: &'a str,
    region: &'a str,
    gpu_count: u32,
    hourly_price: Decimal,
    per_gpu_hour: Decimal,
    currency: Currency,
    list_price: String,
    as_of: String,
}

pub(crate) fn gpus(ctx: &Context, args: &GpusArgs, out: &mut impl Write) -> Result<ExitStatus> {
    let cur = ctx.currency.unwrap_or(Currency::USD);
    let fx = ctx.catalog.fx();
    let per_hour = |o: &Offer| fx.convert(o.hourly_price(), cur).ok().map(|m| m.amount);
    match &args.gpu {
        None => {
            let mut rows = Vec::new();
            for g in ctx.catalog.gpus() {
                let offers: Vec<&Offer> = ctx.catalog.offers().iter().filter(|o| o.gpu == g.name).collect();
                let cheapest = |p: PricingModel| {
                    offers
                        .iter()
                        .filter(|o| o.rate.pricing == p)
                        .filter_map(|o| per_hour(o).map(|h| h / Decimal::from(o.gpu_count)))
                        .min()
                };
                let providers: std::collections::BTreeSet<&str> = offers.iter().map(|o| o.provider.as_str()).collect();
                rows.push(GpuRow {
                    name: &g.name,
                    memory_gb: g.memory_gb,
                    mem_bw_tb_s: g.mem_bw_tb_s,
                    bf16_tflops: g.bf16_tflops.or(g.fp16_tflops),
                    fp8_tflops: g.fp8_tflops,
                    cheapest_on_demand_per_gpu_hour: cheapest(PricingModel::OnDemand),
                    cheapest_spot_per_gpu_hour: cheapest(PricingModel::Spot),
                    providers: providers.len(),
                    currency: cur,
                });
            }
            if args.json {
                write_json(out, &rows)?;
                return Ok(ExitStatus::Success);
            }
            let mut t = table(&[
                "gpu",
                "memory",
                "bandwidth",
                "bf16 TFLOP/s",
                "fp8 TFLOP/s",
                "on-demand /gpu-h",
                "spot /gpu-h",
                "providers",
            ]);
            for r in &rows {
                let opt = |v: Option<f64>| v.map(|x| format!("{x:.0}")).unwrap_or_else(|| "-".into());
                let price = |v: Option<Decimal>| v.map(|x| money(x, cur)).unwrap_or_else(|| "-".into());
                t.add_row(vec![
                    Cell::new(r.name),
                    Cell::new(format!("{:.0} GB", r.memory_gb)),
                    Cell::new(format!("{:.2} TB/s", r.mem_bw_tb_s)),
                    Cell::new(opt(r.bf16_tflops)),
                    Cell::new(opt(r.fp8_tflops)),
                    Cell::new(price(r.cheapest_on_demand_per_gpu_hour)),
                    Cell::new(price(r.cheapest_spot_per_gpu_hour)),
                    Cell::new(r.providers),
                ]);
            }
            align_right(&mut t, &[1, 2, 3, 4, 5, 6, 7]);
            writeln!(out, "{t}")?;
            Ok(ExitStatus::Success)
        }
        Some(spec) => {
            let (name, count) = match spec.rsplit_once(':') {
                Some((n, c)) => (
                    n,
                    Some(
                        c.parse::<u32>()
                            .map_err(|_| anyhow!("`{spec}`: expected NAME or NAME:COUNT, such as `A100:8`"))?,
                    ),
                ),
                None => (spec.as_str(), None),
            };
            let gpu = ctx.catalog.gpu(name).ok_or_else(|| {
                let known: Vec<&str> = ctx.catalog.gpus().iter().map(|g| g.name.as_str()).collect();
                anyhow!("unknown GPU `{name}`; known GPUs: {}", known.join(", "))
            })?;
            // Cheapest offer per (provider, pricing, GPUs per instance), like `sky show-gpus A100:8`.
            let mut best: BTreeMap<(String, PricingModel, u32), (&Offer, Decimal)> = BTreeMap::new();
            for o in ctx.catalog.offers().iter().filter(|o| o.gpu == gpu.name && count.is_none_or(|c| c == o.gpu_count))
            {
                let Some(h) = per_hour(o) else { continue };
                let key = (o.provider.clone(), o.rate.pricing, o.gpu_count);
                if best.get(&key).is_none_or(|(_, p)| h < *p) {
                    best.insert(key, (o, h));
                }
            }
            let mut rows: Vec<OfferRow> = best
                .values()
                .map(|(o, h)| OfferRow {
                    provider: &o.provider,
                    pricing: o.rate.pricing,
                    instance_type: &o.instance_type,
                    region: &o.region,
                    gpu_count: o.gpu_count,
                    hourly_price: h.round_dp(6),
                    per_gpu_hour: (h / Decimal::from(o.gpu_count)).round_dp(6),
                    currency: cur,
                    list_price: format!("{}/{}", o.rate.price, o.rate.per.as_str()),
                    as_of: o.as_of.to_string(),
                })
                .collect();
            rows.sort_by(|a, b| a.per_gpu_hour.cmp(&b.per_gpu_hour).then(a.provider.cmp(b.provider)));
            if args.json {
                write_json(out, &rows)?;
                return Ok(if rows.is_empty() { ExitStatus::Failure } else { ExitStatus::Success });
            }
            writeln!(
                out,
                "{}: {:.0} GB, {:.2} TB/s, {} BF16 TFLOP/s dense, {}",
                gpu.name,
                gpu.memory_gb,
                gpu.mem_bw_tb_s,
                gpu.bf16_tflops.or(gpu.fp16_tflops).map(|x| format!("{x:.0}")).unwrap_or("-".into()),
                gpu.scaleup_link
            )?;
            if rows.is_empty() {
                writeln!(
                    out,
                    "no offers in the catalog{}",
                    count.map(|c| format!(" with {c} GPUs per instance")).unwrap_or_default()
                )?;
                return Ok(ExitStatus::Failure);
            }
            let mut t = table(&[
                "provider",
                "pricing",
                "instance",
                "region",
                "gpus",
                "per hour",
                "per gpu-hour",
                "list price",
                "as of",
            ]);
            for r in &rows {
                t.add_row(vec![
                    Cell::new(r.provider),
                    Cell::new(r.pricing.as_str()),
                    Cell::new(r.instance_type),
                    Cell::new(r.region),
                    Cell::new(r.gpu_count),
                    Cell::new(money(r.hourly_price, cur)),
                    Cell::new(money(r.per_gpu_hour, cur)),
                    Cell::new(&r.list_price),
                    Cell::new(&r.as_of),
                ]);
            }
            align_right(&mut t, &[4, 5, 6]);
            writeln!(out, "{t}")?;
            Ok(ExitStatus::Success)
        }
    }
}
