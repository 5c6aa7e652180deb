use crate::common::{gpubroker, json, run, shared, temp_file};

#[test]
fn backtest_json_has_the_documented_fields() {
    let Some(shared) = shared() else {
        eprintln!("skipped: ../shared not present");
        return;
    };
    let trace = shared.join("data/spot-traces/availability/1-node/aws-10-26-2022/us-west-2a_v100_1.json");
    let raw = shared.join("data/spot-traces/raw-2022-probes/2022-10-26T22-05/us-west-2b_v100_1.txt");
    let report = json(gpubroker().args([
        "backtest",
        "--trace",
        &format!("{},{}", trace.display(), raw.display()),
        "--job-hours",
        "48",
        "--deadline-hours",
        "52",
        "--changeover-hours",
        "0.2",
        "--on-demand-price",
        "3.06",
        "--spot-price",
        "0.9731",
        "--starts",
        "20",
        "--seed",
        "1",
        "--policy",
        "on-demand,greedy,uniform-progress,gpubroker,omniscient",
        "--json",
    ]));
    let policies = report["policies"].as_array().expect("policies");
    assert_eq!(policies.len(), 5);
    for p in policies {
        for f in [
            "name",
            "mean_cost",
            "mean_cost_vs_on_demand",
            "mean_gap_vs_omniscient",
            "p75_cost",
            "mean_spot_hours",
            "mean_on_demand_hours",
            "deadline_misses",
        ] {
            assert!(p.get(f).is_some(), "missing {f}: {p}");
        }
        assert_eq!(p["runs"], 40, "20 starts x 2 traces");
        if p["name"] != "omniscient" {
            assert_eq!(p["deadline_misses"], 0);
        }
    }
    assert!((policies[0]["mean_cost_vs_on_demand"].as_f64().expect("od") - 1.0).abs() < 1e-9);
    // Same seed, same answer.
    let again = json(gpubroker().args([
        "backtest",
        "--trace",
        &format!("{},{}", trace.display(), raw.display()),
        "--job-hours",
        "48",
        "--deadline-hours",
        "52",
        "--starts",
        "20",
        "--seed",
        "1",
        "--json",
    ]));
    assert_eq!(report["policies"][3]["mean_cost"], again["policies"][3]["mean_cost"]);
}

#[test]
fn backtest_bad_input() {
    let (_d, bad) = temp_file("t.json", "{\"metadata\": {\"gap_seconds\": 600}, \"data\": [1, -1]}");
    let out = run(gpubroker().args([
        "backtest",
        "--trace",
        bad.to_str().expect("p"),
        "--job-hours",
        "10",
        "--deadline-hours",
        "12",
    ]));
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("t.json") && out.stderr.contains("data[1]"), "{}", out.stderr);
    let (_d, ok) = temp_file("ok.json", "{\"metadata\": {\"gap_seconds\": 600}, \"data\": [1, 0, 1]}");
    let out = run(gpubroker().args([
        "backtest",
        "--trace",
        ok.to_str().expect("p"),
        "--job-hours",
        "10",
        "--deadline-hours",
        "8",
    ]));
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("--deadline-hours 8 must be at least --job-hours 10"), "{}", out.stderr);
    let out = run(gpubroker().args([
        "backtest",
        "--trace",
        ok.to_str().expect("p"),
        "--job-hours",
        "10",
        "--deadline-hours",
        "12",
        "--policy",
        "yolo",
    ]));
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("unknown policy `yolo`"), "{}", out.stderr);
}

/// `launch --backend sim`: the real controller on the simulated cloud, faster than real time.
#[test]
fn launch_on_the_simulated_cloud() {
    let Some(shared) = shared() else {
        eprintln!("skipped: ../shared not present");
        return;
    };
    let trace = shared.join("data/spot-traces/availability/1-node/aws-10-26-2022/us-west-2a_v100_1.json");
    let (_d, task) = temp_file("t.yaml", "name: sim-job\nrun: python train.py\n");
    let home = tempfile::tempdir().expect("home");
    let mut reports = Vec::new();
    for policy in ["on-demand", "gpubroker"] {
        let started = std::time::Instant::now();
        let r = json(gpubroker().env("GPUBROKER_HOME", home.path()).args([
            "launch",
            task.to_str().expect("p"),
            "--backend",
            "sim",
            "--trace",
            trace.to_str().expect("p"),
            "--work-hours",
            "48",
            "--deadline",
            "60h",
            "--policy",
            policy,
            "--start-offset-hours",
            "100",
            "--json",
        ]));
        assert!(started.elapsed().as_secs_f64() < 5.0, "a 48 h job simulates in seconds");
        assert_eq!(r["state"], "SUCCEEDED", "{r}");
        assert_eq!(r["met_deadline"], true, "{r}");
        reports.push(r);
    }
    let (od, gb) = (&reports[0], &reports[1]);
    assert!(crate::common::dec(&gb["cost"]) < crate::common::dec(&od["cost"]), "spot policy should save money here");
    assert!(gb["attempts"].as_array().expect("attempts").iter().any(|a| a["pricing"] == "spot"));
}
