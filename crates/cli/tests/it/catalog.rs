use std::collections::HashMap;

use rust_decimal::Decimal;

use crate::common::{dec, filters, gpubroker, json, run, shared, temp_file};

#[test]
fn gpus_table_snapshot() {
    let out = run(gpubroker().args(["gpus"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    filters().bind(|| insta::assert_snapshot!("gpus", out.stdout));
}

#[test]
fn gpus_one_type_snapshot() {
    let out = run(gpubroker().args(["gpus", "a100-80gb:8"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    filters().bind(|| insta::assert_snapshot!("gpus_a100_80gb_8", out.stdout));
}

#[test]
fn catalog_list_filters() {
    let rows = json(gpubroker().args([
        "catalog",
        "list",
        "--gpu",
        "H100:8",
        "--pricing",
        "spot",
        "--max-price",
        "20",
        "--json",
    ]));
    let rows = rows.as_array().expect("rows");
    assert!(!rows.is_empty());
    for r in rows {
        assert_eq!(r["gpu"], "H100");
        assert_eq!(r["gpu_count"], 8);
        assert_eq!(r["pricing"], "spot");
        assert!(dec(&r["hourly_price"]) <= Decimal::from(20));
    }
    let cny = json(gpubroker().args(["catalog", "list", "--provider", "compshare", "--json"]));
    assert!(cny.as_array().expect("rows").iter().any(|r| r["list_price"]["currency"] == "CNY"));
}

#[test]
fn catalog_info_counts_providers() {
    let info = json(gpubroker().args(["catalog", "info", "--json"]));
    assert!(info["providers"].as_object().expect("providers").len() >= 10);
    assert!(info["currencies"]["CNY"].as_u64().expect("CNY offers") > 0);
}

/// The acceptance check of the issue: import SkyPilot's CSVs, plan A100:8 and H100:8 on-demand
/// with the imported catalog, and find the same cheapest offers a direct read of the CSVs gives.
#[test]
fn skypilot_import_finds_the_cheapest_8_gpu_offers() {
    let Some(shared) = shared() else {
        eprintln!("skipped: ../shared not present");
        return;
    };
    let dir = shared.join("data/skypilot-catalog");
    let (_tmp, out_path) = temp_file("sky.csv", "");
    let out = run(gpubroker().args([
        "catalog",
        "import",
        "--skypilot",
        dir.to_str().expect("dir"),
        "-o",
        out_path.to_str().expect("out"),
        "--as-of",
        "2026-11-29",
    ]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stderr.contains("imported"), "{}", out.stderr);
    assert!(out.stderr.contains("unknown accelerator"), "bad rows are reported: {}", out.stderr);

    // Direct read: cheapest on-demand price per (GPU, 8 per instance) over every vms.csv.
    // GPU -> (cheapest price, the (cloud, instance type) pairs at that price).
    type Cheapest = (Decimal, Vec<(String, String)>);
    let mut direct: HashMap<&str, Cheapest> = HashMap::new();
    for cloud in ["aws", "lambda"] {
        let mut reader = csv::Reader::from_path(dir.join(cloud).join("vms.csv")).expect("vms.csv");
        let headers = reader.headers().expect("headers").clone();
        let col = |name: &str| headers.iter().position(|h| h == name).expect(name);
        for rec in reader.records() {
            let rec = rec.expect("row");
            let (accel, count, price, itype) = (
                &rec[col("AcceleratorName")],
                &rec[col("AcceleratorCount")],
                &rec[col("Price")],
                &rec[col("InstanceType")],
            );
            if price.is_empty() || count.parse::<f64>().ok() != Some(8.0) {
                continue;
            }
            for gpu in ["A100", "H100"] {
                if accel == gpu {
                    let p: Decimal = price.parse().expect("price");
                    let entry = direct.entry(gpu).or_insert((p, Vec::new()));
                    if p < entry.0 {
                        *entry = (p, Vec::new());
                    }
                    if p == entry.0 {
                        entry.1.push((cloud.to_string(), itype.to_string()));
                    }
                }
            }
        }
    }
    for gpu in ["A100", "H100"] {
        let (_d, task) = temp_file("t.yaml", &format!("resources:\n  accelerators: {gpu}:8\n"));
        let plan = json(gpubroker().args([
            "--catalog",
            out_path.to_str().expect("out"),
            "plan",
            task.to_str().expect("task"),
            "--pricing",
            "on_demand",
            "--json",
        ]));
        let best = &plan["options"][plan["best"].as_u64().expect("best") as usize];
        let (price, offers) = &direct[gpu];
        assert_eq!(dec(&best["hourly_price"]), *price, "{gpu}: cheapest on-demand price differs");
        let key = (
            best["provider"].as_str().expect("provider").to_string(),
            best["instance_type"].as_str().expect("type").to_string(),
        );
        assert!(offers.contains(&key), "{gpu}: {key:?} is not among the cheapest {offers:?}");
    }
}
