//! `cost forecast`: monthly spend from the ledger's daily history, trend + weekly season.

use std::fmt::Write as _;

use crate::common::{dec, filters, gpubroker, json, run, temp_file};

/// Spend on day `d` (0 = 2026-10-05, a Monday): weekdays 100 + 1/day, weekends 20.
fn spend(d: i64) -> f64 {
    if d % 7 >= 5 { 20.0 } else { 100.0 + d as f64 }
}

#[test]
fn forecasts_this_month_and_the_next_from_trend_and_weekly_season() {
    let home = tempfile::tempdir().expect("home");
    let mut csv = String::from(
        "resource_id,provider,region,instance_type,gpu,gpu_count,pricing,start,end,hourly_rate,currency,min_billable_seconds,tags\n",
    );
    let first = 20_731; // 2026-10-05
    let today = 20_786; // 2026-11-29 (GPUBROKER_NOW)
    for d in 0..(today - first) {
        let start = jiff::Timestamp::from_second((first + d) * 86_400 + 9 * 3600).expect("time");
        let end = start + jiff::SignedDuration::from_hours(1);
        let _ =
            writeln!(csv, "r{d},aws,us-east-1,p5.48xlarge,H100,8,on_demand,{start},{end},{},USD,0,team=ml", spend(d));
    }
    let (_dir, path) = temp_file("usage.csv", &csv);
    let out = run(gpubroker().env("GPUBROKER_HOME", home.path()).args(["usage", "import", "--csv"]).arg(&path));
    assert_eq!(out.code, 0, "{}", out.stderr);

    let v = json(
        gpubroker()
            .env("GPUBROKER_HOME", home.path())
            .args(["cost", "forecast", "--months", "1", "--by", "team", "--json"]),
    );
    let scope = &v["scopes"][0];
    assert_eq!(scope["scope"], "ml");
    assert_eq!(scope["history_days"], today - first);
    let months = scope["months"].as_array().expect("months");
    assert_eq!(months.len(), 2);
    assert_eq!(months[0]["month"], "2026-11");
    // November: actual through the 28th, plus the 29th-30th (Sunday 20, Monday 100 + 56).
    let nov_actual: f64 = (27..(today - first)).map(spend).sum();
    assert!(
        (dec(&months[0]["actual"]).to_string().parse::<f64>().expect("f64") - nov_actual).abs() < 0.01,
        "{months:?} vs {nov_actual}"
    );
    let truth = |from: i64, to: i64| (from..to).map(spend).sum::<f64>();
    let f = |m: &serde_json::Value, k: &str| dec(&m[k]).to_string().parse::<f64>().expect("f64");
    let nov_truth = nov_actual + truth(today - first, today - first + 2);
    let dec_truth = truth(today - first + 2, today - first + 33);
    // A linear trend cannot fit a weekday-only slope exactly; within 3% of the truth.
    assert!((f(&months[0], "forecast") - nov_truth).abs() / nov_truth < 0.03, "{months:?} vs {nov_truth}");
    assert!((f(&months[1], "forecast") - dec_truth).abs() / dec_truth < 0.03, "{months:?} vs {dec_truth}");
    for m in months {
        assert!(f(m, "low") <= f(m, "forecast") && f(m, "forecast") <= f(m, "high"), "{m}");
    }
    // Further ahead, wider.
    assert!(f(&months[1], "high") - f(&months[1], "low") > f(&months[0], "high") - f(&months[0], "low"));

    let text = run(gpubroker().env("GPUBROKER_HOME", home.path()).args(["cost", "forecast", "--months", "2"]));
    assert_eq!(text.code, 0, "{}", text.stderr);
    filters().bind(|| insta::assert_snapshot!("cost_forecast_2_months", text.stdout));
}

#[test]
fn too_little_history_is_a_clear_error() {
    let home = tempfile::tempdir().expect("home");
    let out = run(gpubroker().env("GPUBROKER_HOME", home.path()).args(["cost", "forecast"]));
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("no spend in the ledger"), "{}", out.stderr);
    let out = run(gpubroker().env("GPUBROKER_HOME", home.path()).args([
        "usage",
        "add",
        "--resource",
        "a",
        "--provider",
        "aws",
        "--start",
        "2026-11-27T00:00:00Z",
        "--end",
        "2026-11-27T02:00:00Z",
        "--hourly-rate",
        "3 USD",
    ]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let out = run(gpubroker().env("GPUBROKER_HOME", home.path()).args(["cost", "forecast"]));
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("needs at least 7"), "{}", out.stderr);
}
