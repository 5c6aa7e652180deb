use std::time::Instant;

use rust_decimal::Decimal;

use crate::common::{dec, filters, gpubroker, json, run, temp_file};

const EXAMPLES: &[&str] = &[
    "examples/lora-llama3-8b.yaml",
    "examples/pretrain-llama3-70b.yaml",
    "examples/serve-qwen2.5-72b.yaml",
    "examples/batch-inference-llama3-70b.yaml",
    "examples/qlora-qwen2.5-7b-cny.yaml",
    "examples/skypilot-a100.yaml",
];

#[test]
fn plan_table_snapshot() {
    let out = run(gpubroker().args(["plan", "examples/lora-llama3-8b.yaml", "--limit", "8"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    filters().bind(|| insta::assert_snapshot!("plan_lora_llama3_8b", out.stdout));
}

#[test]
fn plan_in_cny_snapshot() {
    let out = run(gpubroker().args([
        "plan",
        "examples/qlora-qwen2.5-7b-cny.yaml",
        "--limit",
        "5",
        "--pricing",
        "on_demand,off_peak,subscription_day,subscription_week",
    ]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    filters().bind(|| insta::assert_snapshot!("plan_qlora_cny", out.stdout));
}

#[test]
fn every_example_plans_quickly_and_its_totals_add_up() {
    for example in EXAMPLES {
        let started = Instant::now();
        let plan = json(gpubroker().args(["plan", example, "--json", "--hours", "10"]));
        // Debug build, whole process; the release figure is in docs/benchmarks.md.
        assert!(started.elapsed().as_secs_f64() < 2.0, "{example} took {:?}", started.elapsed());
        let options = plan["options"].as_array().expect("options");
        assert!(!options.is_empty(), "{example}: no options");
        let best = plan["best"].as_u64().unwrap_or_else(|| panic!("{example}: no recommendation")) as usize;
        assert_eq!(best, 0, "{example}: the best option is listed first");
        for o in options {
            for field in [
                "provider",
                "region",
                "zone",
                "instance_type",
                "gpu",
                "gpus_per_node",
                "nodes",
                "pricing",
                "hourly_price",
                "currency",
                "hours",
                "memory_per_gpu_gib",
                "cost",
                "meets_deadline",
            ] {
                assert!(o.get(field).is_some(), "{example}: option lacks `{field}`");
            }
            let c = &o["cost"];
            let sum = dec(&c["compute"]) + dec(&c["storage"]) + dec(&c["data_transfer"]) + dec(&c["preemption"]);
            assert_eq!(sum, dec(&c["total"]), "{example}: parts do not add up to the total: {c}");
            assert!(dec(&c["total"]) >= Decimal::ZERO);
            assert_eq!(o["currency"], plan["currency"]);
        }
        // Feasible options come first, sorted by total cost.
        let feasible: Vec<&serde_json::Value> = options.iter().take_while(|o| o["feasible"] == true).collect();
        assert!(options.iter().skip(feasible.len()).all(|o| o["feasible"] == false));
        for pair in feasible.windows(2) {
            assert!(dec(&pair[0]["cost"]["total"]) <= dec(&pair[1]["cost"]["total"]), "{example}: not sorted by cost");
        }
        assert!(feasible.iter().all(|o| o["meets_deadline"] == true && o["fits"] == true));
    }
}

#[test]
fn budget_and_deadline_are_respected() {
    let plan = json(gpubroker().args(["plan", "examples/lora-llama3-8b.yaml", "--json"]));
    let deadline = plan["deadline_hours"].as_f64().expect("deadline");
    let budget = dec(&plan["budget"]);
    for o in plan["options"].as_array().expect("options").iter().filter(|o| o["feasible"] == true) {
        assert!(o["hours"].as_f64().expect("hours") * 1.15 <= deadline + 1e-9);
        assert!(dec(&o["cost"]["total"]) <= budget);
    }
    // The excluded options say why.
    let over = plan["options"]
        .as_array()
        .expect("options")
        .iter()
        .find(|o| o["within_budget"] == false)
        .expect("an option over budget");
    assert!(over["reasons"].to_string().contains("over budget"));
}

#[test]
fn objective_time_sorts_by_hours() {
    let plan = json(gpubroker().args(["plan", "examples/lora-llama3-8b.yaml", "--json", "--objective", "time"]));
    let feasible: Vec<f64> = plan["options"]
        .as_array()
        .expect("options")
        .iter()
        .filter(|o| o["feasible"] == true)
        .map(|o| o["hours"].as_f64().expect("hours"))
        .collect();
    assert!(feasible.windows(2).all(|w| w[0] <= w[1]));
}

#[test]
fn spot_only_task_gets_spot_with_preemption_cost() {
    let (_dir, task) = temp_file(
        "spot.yaml",
        "resources:\n  use_spot: true\nworkload:\n  kind: finetune\n  model: llama-3-8b\n  tokens: 5e9\n  deadline: 7d\n",
    );
    let plan = json(gpubroker().args(["plan", task.to_str().expect("path"), "--json"]));
    let options = plan["options"].as_array().expect("options");
    assert!(options.iter().all(|o| o["pricing"] == "spot"));
    let best = &options[0];
    assert!(dec(&best["cost"]["preemption"]) > Decimal::ZERO, "spot carries an expected restart cost: {best}");
    assert!(best["expected_interruptions"].as_f64().expect("n") > 0.0);
}

#[test]
fn nothing_fits_exits_1_with_reasons() {
    let (_dir, task) = temp_file(
        "huge.yaml",
        "resources:\n  accelerators: RTX4090:1\nworkload:\n  kind: pretrain\n  model: llama-3.1-405b\n  tokens: 1e12\n  deadline: 24h\n",
    );
    let out = run(gpubroker().args(["plan", task.to_str().expect("path")]));
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    assert!(out.stdout.contains("nothing fits this task"), "{}", out.stdout);
    assert!(out.stdout.contains("does not fit") || out.stdout.contains("too slow"), "{}", out.stdout);
}

#[test]
fn currency_flag_converts_everything() {
    let usd = json(gpubroker().args(["plan", "examples/lora-llama3-8b.yaml", "--json"]));
    let cny = json(gpubroker().args(["plan", "examples/lora-llama3-8b.yaml", "--json", "--currency", "CNY"]));
    assert_eq!(cny["currency"], "CNY");
    let a = dec(&usd["options"][0]["cost"]["compute"]);
    let b = dec(&cny["options"][0]["cost"]["compute"]);
    assert_eq!(usd["options"][0]["instance_type"], cny["options"][0]["instance_type"]);
    // 1 CNY = 0.147033 USD in the built-in table (ECB 2026-05-08); allow micro-unit rounding.
    let back = b * Decimal::new(147033, 6);
    assert!((back - a).abs() < Decimal::new(1, 4), "{a} USD vs {b} CNY");
}
