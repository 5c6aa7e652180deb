//! Benchmarks of the planner's hot paths.
//!
//! ```text
//! cargo bench -p gpubroker-plan --bench plan
//! ```
//! The "imported" cases add the SkyPilot catalogs from `../shared/data/skypilot-catalog`
//! (converted once before timing); they are skipped when that folder is absent.

use std::path::PathBuf;

use gpubroker_catalog::{Catalog, CatalogSource, skypilot};
use gpubroker_estimate::EfficiencyTable;
use gpubroker_plan::{PlanSettings, Task, TaskFile};

fn main() {
    divan::main();
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn task(catalog: &Catalog, name: &str) -> Task {
    let path = repo().join("examples").join(name);
    let text = std::fs::read_to_string(&path).expect("example task");
    let shown = path.display().to_string();
    TaskFile::parse(&shown, &text)
        .expect("parse")
        .validate(&shown, &text, catalog, "2026-11-29T12:00:00Z".parse().expect("time"))
        .expect("valid")
}

/// Built-in offers plus the imported SkyPilot catalogs, when `../shared` is present.
fn builtin_and_imported() -> Option<Catalog> {
    let dir = repo().join("../shared/data/skypilot-catalog");
    if !dir.is_dir() {
        return None;
    }
    let builtin = Catalog::builtin().expect("builtin");
    let import = skypilot::import(&dir, &builtin, jiff::civil::Date::constant(2026, 11, 29)).expect("import");
    let out = std::env::temp_dir().join(format!("gpubroker-bench-{}.csv", std::process::id()));
    let file = std::fs::File::create(&out).expect("temp file");
    gpubroker_catalog::write_offers_csv(file, &import.offers).expect("write");
    let catalog = Catalog::load(&[CatalogSource::Builtin, CatalogSource::Path(out.clone())]).expect("load");
    std::fs::remove_file(&out).ok();
    Some(catalog)
}

#[divan::bench]
fn load_builtin_catalog() -> Catalog {
    Catalog::builtin().expect("builtin")
}

#[divan::bench(args = ["lora-llama3-8b.yaml", "pretrain-llama3-70b.yaml", "serve-qwen2.5-72b.yaml", "batch-inference-llama3-70b.yaml"])]
fn plan_builtin(bencher: divan::Bencher, example: &str) {
    let catalog = Catalog::builtin().expect("builtin");
    let task = task(&catalog, example);
    let table = EfficiencyTable::builtin();
    let settings = PlanSettings { now: "2026-11-29T12:00:00Z".parse().expect("time"), ..Default::default() };
    bencher.bench_local(|| gpubroker_plan::plan(&task, &catalog, &table, &settings));
}

#[divan::bench(args = ["lora-llama3-8b.yaml", "pretrain-llama3-70b.yaml"])]
fn plan_builtin_and_imported(bencher: divan::Bencher, example: &str) {
    let Some(catalog) = builtin_and_imported() else { return };
    let task = task(&catalog, example);
    let table = EfficiencyTable::builtin();
    let settings = PlanSettings { now: "2026-11-29T12:00:00Z".parse().expect("time"), ..Default::default() };
    bencher.bench_local(|| gpubroker_plan::plan(&task, &catalog, &table, &settings));
}

/// A year of hourly demand for one GPU type: a base load, weekday office-hour peaks, a slow
/// trend and noise (fixed seed, so every run plans the same series).
fn year_of_demand(seed: u64) -> Vec<f64> {
    let mut rng = fastrand::Rng::with_seed(seed);
    let base = 4.0 + (seed % 7) as f64 * 3.0;
    (0..8760)
        .map(|h| {
            let office = (h / 24) % 7 < 5 && (9..18).contains(&(h % 24));
            let trend = 1.0 + 0.3 * h as f64 / 8760.0;
            (base * trend + if office { base } else { 0.0 } + rng.f64() * 3.0).round()
        })
        .collect()
}

/// The commitment planner over a year of hourly history for 20 GPU types, two instruments
/// each (1y and 3y), spot for a third of the work: the `commit plan` core (target: well under 1 s).
#[divan::bench(sample_count = 10)]
fn commit_plan_year_20_gpus(bencher: divan::Bencher) {
    use gpubroker_plan::commit::{CommitSettings, GpuPrices, Instrument, plan_gpu};
    let series: Vec<Vec<f64>> = (0..20).map(year_of_demand).collect();
    let prices = GpuPrices {
        on_demand: 3.0,
        spot: Some(1.2),
        instruments: vec![
            Instrument { name: "reserved_1y".into(), rate: 1.9, long_term: false },
            Instrument { name: "reserved_3y".into(), rate: 1.3, long_term: true },
        ],
    };
    let settings = CommitSettings::default();
    bencher.bench(|| {
        series
            .iter()
            .enumerate()
            .map(|(i, s)| plan_gpu(&format!("gpu{i}"), s, 0.33, &prices, &settings).expected_cost)
            .sum::<f64>()
    });
}
