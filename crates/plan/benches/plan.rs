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
