//! `commit plan`: commitment levels from a demand history, within one provider's prices.

use std::fmt::Write as _;

use crate::common::{filters, gpubroker, json, run, temp_file};

/// Hourly H100 demand from 2026-09-01: `base` GPUs always, plus `peak` more on weekday office
/// hours; after `drop_after_weeks`, only `after` GPUs.
fn demand_csv(weeks: u32, base: u32, peak: u32, drop_after_weeks: u32, after: u32) -> String {
    let mut csv = String::from("timestamp,gpu,count\n");
    let start = jiff::Timestamp::from_second(1_788_220_800).expect("2026-09-01"); // a Tuesday
    for h in 0..i64::from(weeks) * 168 {
        let t = start + jiff::SignedDuration::from_hours(h);
        let weekday = (1 + h / 24) % 7 < 5; // Monday = 0
        let office = weekday && (9..17).contains(&(h % 24));
        let count = if h >= i64::from(drop_after_weeks) * 168 { after } else { base + if office { peak } else { 0 } };
        writeln!(csv, "{t},H100,{count}").expect("write");
    }
    csv
}

#[test]
fn commits_the_base_load_at_the_break_even_quantile() {
    let (_dir, path) = temp_file("demand.csv", &demand_csv(8, 8, 8, 99, 0));
    let plot = path.with_extension("svg");
    let v = json(
        gpubroker()
            .args(["commit", "plan", "--provider", "aws", "--train-weeks", "6", "--json"])
            .arg("--plot")
            .arg(&plot)
            .arg("--usage")
            .arg(&path),
    );
    let recs = v["recommendations"].as_array().expect("recommendations");
    let reserved: Vec<_> =
        recs.iter().filter(|r| r["instrument"].as_str().is_some_and(|i| i.starts_with("reserved"))).collect();
    // The 3y reservation costs 43% of on-demand at AWS; peaks run 40 of 168 hours (24%), so
    // only the 8 always-busy GPUs pay for themselves.
    assert_eq!(reserved.len(), 1, "{recs:?}");
    assert_eq!(reserved[0]["term"], "3y");
    assert_eq!(reserved[0]["provider"], "aws");
    assert!((reserved[0]["commit_gpus"].as_f64().expect("gpus") - 8.0).abs() < 1e-6, "{:?}", reserved[0]);
    assert!((reserved[0]["utilization"].as_f64().expect("utilization") - 1.0).abs() < 1e-9);
    let break_even = reserved[0]["break_even_utilization"].as_f64().expect("break-even");
    assert!(break_even > 0.3 && break_even < 0.5, "{break_even}");
    // The chart: every hour of demand, and the commitment level labelled.
    let svg = std::fs::read_to_string(&plot).expect("plot written");
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
    let polyline = svg.lines().find(|l| l.starts_with("<polyline")).expect("demand line");
    assert_eq!(polyline.matches(',').count(), 8 * 168);
    assert!(svg.contains("reserved_3y 8.0 GPUs"), "{svg:.400}");
    let saved = reserved[0]["savings_pct"].as_f64().expect("savings");
    assert!(saved > 40.0 && saved < 57.0, "{saved}");
    let expected = v["total_expected_cost"].as_f64().expect("total");
    let on_demand = v["total_on_demand_cost"].as_f64().expect("on-demand");
    assert!((1.0 - expected / on_demand) * 100.0 - saved < 1e-6);
    // Same weekly pattern in training and test: the trained plan is the hindsight plan.
    let bt = &v["backtest"][0];
    assert_eq!(bt["train_hours"], 6 * 168);
    assert_eq!(bt["test_hours"], 2 * 168);
    assert!(bt["gap_to_hindsight_pct"].as_f64().expect("gap").abs() < 1e-6, "{bt}");
}

#[test]
fn a_recent_usage_drop_is_not_locked_in() {
    let (_dir, path) = temp_file("demand.csv", &demand_csv(8, 16, 0, 6, 4));
    let plan = |lookback: &str| {
        let v = json(
            gpubroker()
                .args(["commit", "plan", "--gpu", "H100", "--on-demand-price", "2", "--commit-price", "1y=1"])
                .args(["--json", "--lookback", lookback, "--usage"])
                .arg(&path),
        );
        v["recommendations"]
            .as_array()
            .expect("recs")
            .iter()
            .filter(|r| r["instrument"] != "on_demand")
            .map(|r| r["commit_gpus"].as_f64().expect("gpus"))
            .sum::<f64>()
    };
    // 16 GPUs for six weeks, then 4: the last two weeks cap the commitment at 4.
    assert!((plan("14d") - 4.0).abs() < 1e-6);
    // A 1y reservation at half price pays for GPUs busy over half the hours: over the whole
    // history, 16 are busy 75% of hours.
    assert!((plan("56d") - 16.0).abs() < 1e-6);
}

#[test]
fn what_if_prices_replace_the_catalog() {
    let (_dir, path) = temp_file("demand.csv", &demand_csv(4, 8, 8, 99, 0));
    let v = json(
        gpubroker()
            .args([
                "commit",
                "plan",
                "--gpu",
                "H100",
                "--on-demand-price",
                "2",
                "--commit-price",
                "1y=1.9",
                "--json",
                "--usage",
            ])
            .arg(&path),
    );
    let recs = v["recommendations"].as_array().expect("recs");
    assert!(recs.iter().all(|r| r["provider"] == "what-if"), "{recs:?}");
    // 1.9/2 = 95%: only demand present 95% of hours is worth committing: the base 8.
    let committed: f64 =
        recs.iter().filter(|r| r["term"] == "1y").map(|r| r["commit_gpus"].as_f64().expect("gpus")).sum();
    assert!((committed - 8.0).abs() < 1e-6, "{recs:?}");
    let od = v["total_on_demand_cost"].as_f64().expect("od");
    let hours = 4.0 * 168.0;
    let gpu_hours = hours * 8.0 + 4.0 * 40.0 * 8.0;
    assert!((od - gpu_hours * 2.0).abs() < 1e-6, "{od}");
    assert!(
        (v["total_expected_cost"].as_f64().expect("cost") - (8.0 * hours * 1.9 + 4.0 * 40.0 * 8.0 * 2.0)).abs() < 1e-6
    );
}

#[test]
fn ledger_usage_is_planned_at_its_own_provider() {
    let home = tempfile::tempdir().expect("home");
    // Two GPUs on-demand and one on spot, around the clock.
    for (id, pricing) in [("a", "on_demand"), ("b", "on_demand"), ("c", "spot")] {
        let (start, end) = ("2026-10-01T00:00:00Z", "2026-11-28T00:00:00Z");
        let out = run(gpubroker().env("GPUBROKER_HOME", home.path()).args([
            "usage",
            "add",
            "--resource",
            id,
            "--provider",
            "gcp",
            "--gpu",
            "H100",
            "--gpu-count",
            "1",
            "--start",
            start,
            "--end",
            end,
            "--hourly-rate",
            "11 USD",
            "--pricing",
            pricing,
        ]));
        assert_eq!(out.code, 0, "{}", out.stderr);
    }
    let v = json(gpubroker().env("GPUBROKER_HOME", home.path()).args(["commit", "plan", "--json"]));
    let recs = v["recommendations"].as_array().expect("recs");
    assert!(recs.iter().all(|r| r["provider"] == "gcp"), "{recs:?}");
    let committed: f64 =
        recs.iter().filter(|r| r["instrument"] != "on_demand").map(|r| r["commit_gpus"].as_f64().expect("gpus")).sum();
    // gcp's 3-year rate is below its spot price: all three always-busy GPUs are committed.
    assert!((committed - 3.0).abs() < 1e-6, "{recs:?}");
    // Where commitments cost more than spot, what ran on spot (job metadata) stays on spot.
    let dear = json(gpubroker().env("GPUBROKER_HOME", home.path()).args([
        "commit",
        "plan",
        "--json",
        "--gpu",
        "H100",
        "--on-demand-price",
        "11",
        "--commit-price",
        "1y=9",
    ]));
    let spot_share = dear["recommendations"][0]["spot_share"].as_f64().expect("spot share");
    assert!((spot_share - 1.0 / 3.0).abs() < 1e-6, "{dear}");

    // The same demand through a FOCUS bill (`cost export`, read back in another data dir):
    // GPU type, count, provider and pricing survive the round trip, so the plan is the same.
    let bill = home.path().join("bill.csv");
    let out = run(gpubroker().env("GPUBROKER_HOME", home.path()).args(["cost", "export", "-o"]).arg(&bill));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let other = tempfile::tempdir().expect("other home");
    let from_focus =
        json(gpubroker().env("GPUBROKER_HOME", other.path()).args(["commit", "plan", "--json", "--focus"]).arg(&bill));
    assert_eq!(from_focus["recommendations"], v["recommendations"]);
    assert_eq!(from_focus["total_expected_cost"], v["total_expected_cost"]);
}

#[test]
fn bad_demand_rows_name_the_line_and_field() {
    let (_dir, path) =
        temp_file("demand.csv", "timestamp,gpu,count\n2026-09-01T00:00:00Z,H100,4\n2026-09-01T01:00:00Z,H100,many\n");
    let out = run(gpubroker().args(["commit", "plan", "--usage"]).arg(&path));
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("demand.csv:3: count: `many` is not a number"), "{}", out.stderr);
    let (_dir, good) = temp_file("demand.csv", "timestamp,gpu,count\n2026-09-01T00:00:00Z,H100,4\n");
    let out = run(gpubroker().args(["commit", "plan", "--plot", "chart.png", "--usage"]).arg(&good));
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("only SVG"), "{}", out.stderr);
    let (_dir, unknown) = temp_file("demand.csv", "timestamp,gpu,count\n2026-09-01T00:00:00Z,NoSuchGPU,4\n");
    let out = run(gpubroker().args(["commit", "plan", "--usage"]).arg(&unknown));
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("no on-demand price for `NoSuchGPU`"), "{}", out.stderr);
    // A mistyped year is caught before it allocates decades of empty hours.
    let (_dir, typo) =
        temp_file("demand.csv", "timestamp,gpu,count\n2026-09-01T00:00:00Z,H100,4\n9026-09-01T00:00:00Z,H100,4\n");
    let out = run(gpubroker().args(["commit", "plan", "--usage"]).arg(&typo));
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("more than 10 years"), "{}", out.stderr);
    // Beside a priced GPU, an unpriced one is left out with a warning, not fatal.
    let (_dir, mixed) =
        temp_file("demand.csv", "timestamp,gpu,count\n2026-09-01T00:00:00Z,NoSuchGPU,4\n2026-09-01T00:00:00Z,H100,4\n");
    let out = run(gpubroker().args(["commit", "plan", "--json", "--usage"]).arg(&mixed));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stderr.contains("warning: no on-demand price for `NoSuchGPU`"), "{}", out.stderr);
    let v: serde_json::Value = serde_json::from_str(&out.stdout).expect("json");
    assert_eq!(v["left_out"], serde_json::json!(["NoSuchGPU"]));
    assert_eq!(v["plans"][0]["gpu"], "H100");
}

#[test]
fn growing_demand_is_forecast_and_planned_for() {
    // 8 GPUs, 2 more every week, for 8 weeks.
    let mut csv = String::from("timestamp,gpu,count\n");
    for h in 0..8 * 168i64 {
        let t = jiff::Timestamp::from_second(1_788_220_800 + h * 3600).expect("time");
        writeln!(csv, "{t},H100,{}", 8 + h / 168 * 2).expect("write");
    }
    let (_dir, path) = temp_file("demand.csv", &csv);
    let plan = |extra: &[&str]| {
        json(
            gpubroker()
                .args([
                    "commit",
                    "plan",
                    "--gpu",
                    "H100",
                    "--on-demand-price",
                    "2",
                    "--commit-price",
                    "1y=1.2",
                    "--json",
                ])
                .args(extra)
                .arg("--usage")
                .arg(&path),
        )
    };
    let committed = |v: &serde_json::Value| -> f64 {
        v["recommendations"].as_array().expect("recs").iter().map(|r| r["commit_gpus"].as_f64().expect("gpus")).sum()
    };
    let history = plan(&[]);
    let forecast = &history["plans"][0]["forecast"];
    assert!((forecast["trend_gpus_per_week"].as_f64().expect("trend") - 2.0).abs() < 0.1, "{forecast}");
    // The last week ran 22 GPUs; the next four are expected higher.
    assert!(forecast["mean_gpus"].as_f64().expect("mean") > 23.0, "{forecast}");
    let ahead = plan(&["--forecast-weeks", "8"]);
    assert!(committed(&ahead) > committed(&history) + 1.0, "{} vs {}", committed(&ahead), committed(&history));
}

#[test]
fn monthly_subscriptions_count_as_commitments_in_cny() {
    // RTX 4090s at Compshare: 6 busy 20 hours a day, 2 around the clock. A monthly
    // subscription costs 87.6% of on-demand, so only the 2 always-busy GPUs are subscribed.
    let mut csv = String::from("timestamp,gpu,count\n");
    for h in 0..4 * 168i64 {
        let t = jiff::Timestamp::from_second(1_788_220_800 + h * 3600).expect("time");
        writeln!(csv, "{t},RTX4090,{}", if h % 24 < 20 { 6 } else { 2 }).expect("write");
    }
    let (_dir, path) = temp_file("demand.csv", &csv);
    let v = json(
        gpubroker()
            .args(["--currency", "CNY", "commit", "plan", "--provider", "compshare", "--json", "--usage"])
            .arg(&path),
    );
    assert_eq!(v["currency"], "CNY");
    let recs = v["recommendations"].as_array().expect("recs");
    let sub = recs.iter().find(|r| r["instrument"] == "subscription_month").unwrap_or_else(|| panic!("{recs:?}"));
    assert_eq!(sub["term"], "1 month");
    assert_eq!(sub["region"], "cn-wlcb");
    assert!((sub["commit_gpus"].as_f64().expect("gpus") - 2.0).abs() < 1e-6, "{sub}");
    let saved = v["total_on_demand_cost"].as_f64().expect("od") - v["total_expected_cost"].as_f64().expect("cost");
    // 2 GPUs x 672 h x (1.67 - 1068/730) CNY.
    assert!((saved - 2.0 * 672.0 * (1.67 - 1068.0 / 730.0)).abs() < 0.5, "{saved}");
}

#[test]
fn a_commitment_and_overage_contract_takes_the_peaks() {
    // 8 GPUs always, 16 on weekday office hours; reservations at 63% of on-demand cover the 8,
    // a contract (block at 70%, overage at 83%) takes the peaks instead of on-demand.
    let (_dir, path) = temp_file("demand.csv", &demand_csv(8, 8, 8, 99, 0));
    let args = ["commit", "plan", "--json", "--gpu", "H100", "--on-demand-price", "3", "--commit-price", "1y=1.9"];
    let without = json(gpubroker().args(args).arg("--usage").arg(&path));
    let with = json(gpubroker().args(args).args(["--contract", "min=1000,rate=2.1,overage=2.5", "--usage"]).arg(&path));
    let recs = with["recommendations"].as_array().expect("recs");
    let contract = recs.iter().find(|r| r["instrument"] == "contract").unwrap_or_else(|| panic!("{recs:?}"));
    assert_eq!(contract["term"], "1 month, pooled");
    assert!(recs.iter().all(|r| r["instrument"] != "on_demand"), "{recs:?}");
    assert!(
        with["total_expected_cost"].as_f64().expect("with") < without["total_expected_cost"].as_f64().expect("without")
    );
    // A block too large to pay off is not signed.
    let dear =
        json(gpubroker().args(args).args(["--contract", "min=100000,rate=2.1,overage=2.5", "--usage"]).arg(&path));
    assert_eq!(dear["total_expected_cost"], without["total_expected_cost"]);
    let out =
        run(gpubroker().args(["commit", "plan", "--contract", "min=1,rate=2", "--gpu", "H100", "--usage"]).arg(&path));
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("missing `overage=`"), "{}", out.stderr);
}

#[test]
fn text_output_snapshot() {
    let (_dir, path) = temp_file("demand.csv", &demand_csv(8, 8, 8, 99, 0));
    let out =
        run(gpubroker().args(["commit", "plan", "--provider", "aws", "--train-weeks", "6", "--usage"]).arg(&path));
    assert_eq!(out.code, 0, "{}", out.stderr);
    filters().bind(|| insta::assert_snapshot!("commit_plan_aws_h100", out.stdout));
}
