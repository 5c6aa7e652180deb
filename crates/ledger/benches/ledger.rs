//! Ledger benchmarks (numbers in docs/benchmarks.md; `scripts/bench-ledger` runs this and the
//! `sqlite3` comparison):
//!
//! ```text
//! cargo bench -p gpubroker-ledger --bench ledger -- DB_PATH ROWS
//! ```
//! 1. Durable ingest rate: 1,000,000 charges through `Store::add_charges` in batches of 10,000,
//!    each batch one `synchronous=FULL` transaction (what `usage import` does).
//! 2. Builds a DB of ROWS charges (default 10 million; generated in SQL so that building it
//!    takes seconds) and times the grouped report by team.

#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::time::Instant;

use gpubroker_core::{Currency, Decimal};
use gpubroker_ledger::{Charge, ChargeSource, GroupBy, Store};

fn charge(i: u64) -> Charge {
    let teams = ["ml", "infra", "research", "vision", "speech", "ads", "search"];
    Charge {
        key: format!("bench:{i}"),
        source: ChargeSource::Usage,
        provider: "aws".into(),
        service: "compute".into(),
        region: "us-east-1".into(),
        resource_id: format!("i-{i}"),
        instance_type: "p5.48xlarge".into(),
        gpu: "H100".into(),
        gpu_count: 8,
        pricing: "on_demand".into(),
        start_ms: 1_790_000_000_000 + (i as i64 % 2_592_000) * 1000,
        end_ms: 1_790_000_000_000 + (i as i64 % 2_592_000) * 1000 + 3_600_000,
        billed_cost: Decimal::new(9832 + (i % 1000) as i64, 2),
        effective_cost: Decimal::new(9832 + (i % 1000) as i64, 2),
        list_cost: Decimal::new(9832 + (i % 1000) as i64, 2),
        currency: Currency::USD,
        tags: [("team".to_string(), teams[(i % 7) as usize].to_string())].into_iter().collect::<BTreeMap<_, _>>(),
        raw: BTreeMap::new(),
    }
}

fn main() {
    let args: Vec<String> = std::env::args().filter(|a| !a.starts_with("--")).collect();
    let db = args
        .get(1)
        .cloned()
        .unwrap_or_else(|| std::env::temp_dir().join("gpubroker-bench-ledger.db").display().to_string());
    let rows: u64 = args.get(2).and_then(|r| r.parse().ok()).unwrap_or(10_000_000);
    let _ = std::fs::remove_file(&db);
    let _ = std::fs::remove_file(format!("{db}-wal"));
    let store = Store::open(std::path::Path::new(&db)).unwrap();

    let ingest = 1_000_000u64;
    let started = Instant::now();
    let mut batch = Vec::with_capacity(10_000);
    for i in 0..ingest {
        batch.push(charge(i));
        if batch.len() == 10_000 {
            store.add_charges(&batch).unwrap();
            batch.clear();
        }
    }
    let secs = started.elapsed().as_secs_f64();
    println!(
        "ingest: {ingest} records in {secs:.2} s = {:.0} records/s (batches of 10,000, synchronous=FULL)",
        ingest as f64 / secs
    );

    let started = Instant::now();
    store.bench_fill(ingest, rows).unwrap();
    println!("generated {} more rows in SQL in {:.1} s", rows.saturating_sub(ingest), started.elapsed().as_secs_f64());

    for _ in 0..3 {
        let started = Instant::now();
        let report = store.report(&GroupBy::parse("team"), None, None, &[]).unwrap();
        let total: Decimal = report.iter().map(|(r, _)| r.billed_cost).sum();
        let n: usize = report.iter().map(|(r, _)| r.charges).sum();
        println!("report by team over {n} charges: {:.2} s (total {total} USD)", started.elapsed().as_secs_f64());
    }
    println!("db: {db}");
}
