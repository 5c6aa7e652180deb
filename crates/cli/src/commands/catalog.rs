use std::collections::BTreeMap;
use std::io::Write;
use std::str::FromStr;

use anyhow::{Context as _, Result, anyhow};
use comfy_table::Cell;
use gpubroker_catalog::{OfferFilter, skypilot, write_offers_csv};
use gpubroker_core::{Currency, Decimal, Money, PricingModel};
use jiff::civil::Date;
use serde::Serialize;

use crate::ExitStatus;
use crate::args::{CatalogImportArgs, CatalogInfoArgs, CatalogListArgs};
use crate::context::Context;
use crate::output::{align_right, money, table, write_json};

#[derive(Serialize)]
struct OfferJson<'a> {
    provider: &'a str,
    region: &'a str,
    zone: Option<&'a str>,
    instance_type: &'a str,
    gpu: &'a str,
    gpu_count: u32,
    pricing: PricingModel,
    list_price: Money,
    per: &'a str,
    hourly_price: Decimal,
    currency: Currency,
    billing_increment_s: u32,
    min_billed_s: u32,
    spot_interruption: Option<&'a str>,
    window: Option<&'a str>,
    source: &'a str,
    as_of: String,
}

pub(crate) fn list(ctx: &Context, args: &CatalogListArgs, out: &mut impl Write) -> Result<ExitStatus> {
    let cur = ctx.currency.unwrap_or(Currency::USD);
    let mut filter =
        OfferFilter { providers: args.provider.clone(), regions: args.region.clone(), ..Default::default() };
    for g in &args.gpu {
        let (name, count) = match g.rsplit_once(':') {
            Some((n, c)) => {
                (n, Some(c.parse::<u32>().map_err(|_| anyhow!("`--gpu {g}`: expected NAME or NAME:COUNT"))?))
            }
            None => (g.as_str(), None),
        };
        let spec = ctx
            .catalog
            .gpu(name)
            .ok_or_else(|| anyhow!("unknown GPU `{name}`; run `gpubroker gpus` for the known names"))?;
        filter.gpus.push(spec.name.clone());
        filter.gpu_count = count.or(filter.gpu_count);
    }
    filter.pricing = args
        .pricing
        .iter()
        .map(|p| PricingModel::from_str(p))
        .collect::<Result<_, _>>()
        .map_err(|e| anyhow!("`--pricing`: {e}"))?;
    if let Some(max) = &args.max_price {
        let m = match Decimal::from_str(max.trim()) {
            Ok(d) => Money::new(d, cur),
            Err(_) => Money::from_str(max).map_err(|e| anyhow!("`--max-price`: {e}"))?,
        };
        filter.max_hourly = Some(m);
    }
    let fx = ctx.catalog.fx();
    let mut offers: Vec<(&gpubroker_catalog::Offer, Decimal)> = ctx
        .catalog
        .filter(&filter)
        .filter_map(|o| fx.convert(o.hourly_price(), cur).ok().map(|m| (o, m.amount)))
        .collect();
    offers.sort_by(|a, b| a.1.cmp(&b.1).then_with(|| a.0.key().cmp(&b.0.key())));
    if args.json {
        let rows: Vec<OfferJson> = offers
            .iter()
            .map(|(o, h)| OfferJson {
                provider: &o.provider,
                region: &o.region,
                zone: o.zone.as_deref(),
                instance_type: &o.instance_type,
                gpu: &o.gpu,
                gpu_count: o.gpu_count,
                pricing: o.rate.pricing,
                list_price: o.rate.price,
                per: o.rate.per.as_str(),
                hourly_price: h.round_dp(6),
                currency: cur,
                billing_increment_s: o.rate.billing.increment_s,
                min_billed_s: o.rate.billing.minimum_s,
                spot_interruption: o.spot_interruption.map(|b| b.label()),
                window: o.rate.window.as_ref().map(|w| w.text.as_str()),
                source: &o.source,
                as_of: o.as_of.to_string(),
            })
            .collect();
        write_json(out, &rows)?;
    } else {
        let mut t = table(&[
            "provider",
            "region",
            "zone",
            "instance",
            "gpus",
            "pricing",
            "per hour",
            "list price",
            "billing",
            "as of",
        ]);
        for (o, h) in offers.iter().take(args.limit) {
            t.add_row(vec![
                Cell::new(&o.provider),
                Cell::new(&o.region),
                Cell::new(o.zone.as_deref().unwrap_or("")),
                Cell::new(&o.instance_type),
                Cell::new(format!("{}x{}", o.gpu, o.gpu_count)),
                Cell::new(o.rate.pricing.as_str()),
                Cell::new(money(*h, cur)),
                Cell::new(format!("{}/{}", o.rate.price, o.rate.per.as_str())),
                Cell::new(billing_text(o.rate.billing.increment_s, o.rate.billing.minimum_s)),
                Cell::new(o.as_of.to_string()),
            ]);
        }
        align_right(&mut t, &[6]);
        writeln!(out, "{t}")?;
        if offers.len() > args.limit {
            writeln!(out, "{} of {} offers shown (--limit, or --json for all)", args.limit, offers.len())?;
        }
    }
    Ok(if offers.is_empty() { ExitStatus::Failure } else { ExitStatus::Success })
}

fn billing_text(increment_s: u32, minimum_s: u32) -> String {
    let inc = match increment_s {
        1 => "per second".to_string(),
        60 => "per minute".to_string(),
        3600 => "per hour".to_string(),
        n => format!("per {n} s"),
    };
    if minimum_s > 0 && minimum_s != increment_s { format!("{inc}, min {minimum_s} s") } else { inc }
}

pub(crate) fn import(ctx: &Context, args: &CatalogImportArgs, out: &mut impl Write) -> Result<ExitStatus> {
    let as_of = match &args.as_of {
        Some(d) => Date::from_str(d).map_err(|_| anyhow!("`--as-of {d}`: expected a date YYYY-MM-DD"))?,
        None => ctx.clock.now().to_zoned_datetime(jiff::tz::TimeZone::UTC).date(),
    };
    let import = skypilot::import(&args.skypilot, &ctx.catalog, as_of)?;
    let mut stderr = std::io::stderr().lock();
    for w in import.warnings.iter().take(20) {
        writeln!(stderr, "warning: {w}")?;
    }
    if import.warnings.len() > 20 {
        writeln!(stderr, "warning: ... and {} more", import.warnings.len() - 20)?;
    }
    let s = &import.stats;
    let per: Vec<String> = s.per_pricing.iter().map(|(k, v)| format!("{v} {k}")).collect();
    writeln!(
        stderr,
        "imported {} offers ({}) from {} rows in {} file(s); skipped {} CPU-only, {} bad, {} duplicate rows",
        import.offers.len(),
        per.join(", "),
        s.rows,
        s.files,
        s.cpu_only,
        s.bad_rows,
        s.duplicates
    )?;
    match &args.output {
        Some(path) => {
            let file = std::fs::File::create(path).with_context(|| format!("cannot create {}", path.display()))?;
            write_offers_csv(std::io::BufWriter::new(file), &import.offers)
                .with_context(|| format!("cannot write {}", path.display()))?;
            writeln!(stderr, "wrote {}; use it with `gpubroker --catalog {} ...`", path.display(), path.display())?;
        }
        None => write_offers_csv(&mut *out, &import.offers)?,
    }
    Ok(ExitStatus::Success)
}

#[derive(Serialize)]
struct Info {
    gpus: usize,
    models: usize,
    offers: usize,
    providers: BTreeMap<String, usize>,
    pricing: BTreeMap<String, usize>,
    currencies: BTreeMap<String, usize>,
    exchange_rates: Vec<gpubroker_core::FxRate>,
    oldest_price: Option<String>,
    newest_price: Option<String>,
}

pub(crate) fn info(ctx: &Context, args: &CatalogInfoArgs, out: &mut impl Write) -> Result<ExitStatus> {
    let c = &ctx.catalog;
    let mut providers = BTreeMap::new();
    let mut pricing = BTreeMap::new();
    let mut currencies = BTreeMap::new();
    for o in c.offers() {
        *providers.entry(o.provider.clone()).or_insert(0) += 1;
        *pricing.entry(o.rate.pricing.to_string()).or_insert(0) += 1;
        *currencies.entry(o.rate.price.currency.to_string()).or_insert(0) += 1;
    }
    let info = Info {
        gpus: c.gpus().len(),
        models: c.models().len(),
        offers: c.offers().len(),
        providers,
        pricing,
        currencies,
        exchange_rates: c.fx().rates().cloned().collect(),
        oldest_price: c.offers().iter().map(|o| o.as_of).min().map(|d| d.to_string()),
        newest_price: c.offers().iter().map(|o| o.as_of).max().map(|d| d.to_string()),
    };
    if args.json {
        write_json(out, &info)?;
        return Ok(ExitStatus::Success);
    }
    writeln!(
        out,
        "{} offers from {} providers, {} GPU types, {} model presets",
        info.offers,
        info.providers.len(),
        info.gpus,
        info.models
    )?;
    writeln!(
        out,
        "prices observed {} to {}",
        info.oldest_price.as_deref().unwrap_or("-"),
        info.newest_price.as_deref().unwrap_or("-")
    )?;
    let join = |m: &BTreeMap<String, usize>| m.iter().map(|(k, v)| format!("{k} {v}")).collect::<Vec<_>>().join(", ");
    writeln!(out, "providers: {}", join(&info.providers))?;
    writeln!(out, "pricing: {}", join(&info.pricing))?;
    writeln!(out, "currencies: {}", join(&info.currencies))?;
    for r in &info.exchange_rates {
        writeln!(out, "rate: 1 {} = {} USD (as of {}, {})", r.currency, r.usd_per_unit, r.as_of, r.source)?;
    }
    Ok(ExitStatus::Success)
}
