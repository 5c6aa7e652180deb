//! Budgets: each threshold fires once per period, on actual spend and on the forecast.

use std::io::{Read, Write};
use std::path::Path;
use std::process::Command;

use crate::common::{gpubroker, json, run};

fn at(home: &Path, now: &str) -> Command {
    let mut c = gpubroker();
    c.env("GPUBROKER_HOME", home).env("GPUBROKER_NOW", now);
    c
}

fn spend(home: &Path, now: &str, id: &str, start: &str, end: &str, rate: &str, team: &str) {
    let out = run(at(home, now).args([
        "usage",
        "add",
        "--resource",
        id,
        "--provider",
        "aws",
        "--start",
        start,
        "--end",
        end,
        "--hourly-rate",
        rate,
        "--tags",
        &format!("team={team}"),
    ]));
    assert_eq!(out.code, 0, "{}", out.stderr);
}

fn alerts(home: &Path, now: &str) -> (Vec<String>, serde_json::Value) {
    let out = run(at(home, now).args(["budget", "status", "--json"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let fired: Vec<String> = out.stderr.lines().filter(|l| l.starts_with("alert:")).map(String::from).collect();
    (fired, serde_json::from_str(&out.stdout).expect("json"))
}

#[test]
fn thresholds_fire_once_per_period_on_actual_and_forecast() {
    let home = tempfile::tempdir().expect("home");
    let h = home.path();
    let now = "2026-11-10T00:00:00Z";
    let out = run(at(h, now).args([
        "budget",
        "set",
        "ml",
        "--scope",
        "team=ml",
        "--amount",
        "100",
        "USD",
        "--alert",
        "50,80,100",
        "--forecast",
    ]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    // 30 USD in the first 9 days of a 30-day month: the trend says 100 USD by the end.
    spend(h, now, "a", "2026-11-02T00:00:00Z", "2026-11-02T10:00:00Z", "3 USD", "ml");
    spend(h, now, "other", "2026-11-02T00:00:00Z", "2026-11-02T10:00:00Z", "50 USD", "infra");
    let (fired, state) = alerts(h, now);
    assert_eq!(state[0]["spent"], 30, "only team=ml counts: {state}");
    assert_eq!(fired.len(), 3, "forecast 50/80/100: {fired:?}");
    assert!(fired.iter().all(|l| l.contains("forecast")));
    let (again, _) = alerts(h, now);
    assert!(again.is_empty(), "nothing fires twice: {again:?}");
    // 25 USD more: actual spend crosses 50% (and only that).
    spend(h, now, "b", "2026-11-05T00:00:00Z", "2026-11-05T05:00:00Z", "5 USD", "ml");
    let (fired, state) = alerts(h, now);
    assert_eq!(state[0]["spent"], 55);
    assert_eq!(fired.len(), 1, "{fired:?}");
    assert!(fired[0].contains("actual") && fired[0].contains("50% threshold"), "{fired:?}");
    assert!(alerts(h, now).0.is_empty());
    // A new month starts a new period: thresholds fire again.
    let december = "2026-12-15T00:00:00Z";
    spend(h, december, "c", "2026-12-01T00:00:00Z", "2026-12-01T20:00:00Z", "3 USD", "ml");
    let (fired, state) = alerts(h, december);
    assert_eq!(state[0]["spent"], 60);
    assert!(fired.iter().any(|l| l.contains("actual") && l.contains("50% threshold")), "{fired:?}");
    assert!(alerts(h, december).0.is_empty());
    let log = std::fs::read_to_string(h.join("alerts.log")).expect("alerts.log");
    assert_eq!(log.lines().count(), 3 + 1 + fired.len());
}

#[test]
fn alerts_reach_a_webhook() {
    let home = tempfile::tempdir().expect("home");
    let h = home.path();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}/hook", listener.local_addr().expect("addr"));
    let server = std::thread::spawn(move || {
        let (mut conn, _) = listener.accept().expect("accept");
        // Read until the body announced by Content-Length has arrived.
        let mut data = Vec::new();
        let mut buf = [0u8; 4096];
        loop {
            let n = conn.read(&mut buf).expect("read");
            data.extend_from_slice(&buf[..n]);
            let text = String::from_utf8_lossy(&data).into_owned();
            if let Some(split) = text.find("\r\n\r\n") {
                let length: usize = text
                    .lines()
                    .find_map(|l| l.strip_prefix("Content-Length: "))
                    .and_then(|v| v.trim().parse().ok())
                    .unwrap_or(0);
                if data.len() >= split + 4 + length {
                    break;
                }
            }
            if n == 0 {
                break;
            }
        }
        conn.write_all(b"HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n").expect("write");
        String::from_utf8_lossy(&data).into_owned()
    });
    let now = "2026-11-20T00:00:00Z";
    assert_eq!(
        run(at(h, now).args(["budget", "set", "all", "--amount", "10", "USD", "--alert", "100", "--webhook", &url]))
            .code,
        0
    );
    spend(h, now, "x", "2026-11-19T00:00:00Z", "2026-11-19T10:00:00Z", "2 USD", "ml");
    let (fired, _) = alerts(h, now);
    assert_eq!(fired.len(), 1);
    let request = server.join().expect("server");
    assert!(request.starts_with("POST /hook HTTP/1.1"), "{request}");
    assert!(request.contains("\"budget\":\"all\"") && request.contains("\"threshold_pct\":100"), "{request}");
}

#[test]
fn an_enforced_budget_refuses_launches_in_its_scope() {
    let home = tempfile::tempdir().expect("home");
    let h = home.path();
    let now = "2026-11-20T00:00:00Z";
    assert_eq!(
        run(at(h, now).args(["budget", "set", "infra", "--scope", "team=infra", "--amount", "1", "USD", "--enforce"]))
            .code,
        0
    );
    spend(h, now, "y", "2026-11-19T00:00:00Z", "2026-11-19T01:00:00Z", "2 USD", "infra");
    let (_d, task) = crate::common::temp_file("t.yaml", "name: t\nrun: 'true'\n");
    let out = run(at(h, now).env_remove("GPUBROKER_NOW").args([
        "launch",
        task.to_str().expect("p"),
        "--tag",
        "team=infra",
        "--no-controller",
    ]));
    assert_eq!(out.code, 2, "{}", out.stdout);
    assert!(out.stderr.contains("launch refused: budget `infra`"), "{}", out.stderr);
    let out = run(at(h, now).args(["launch", task.to_str().expect("p"), "--tag", "team=ml", "--no-controller"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let jobs = json(at(h, now).args(["jobs", "--json"]));
    assert_eq!(jobs.as_array().expect("jobs").len(), 1);
    // A budget that stops running jobs: the team=ml job is cancelled once `ml` is spent.
    assert_eq!(
        run(at(h, now).args(["budget", "set", "ml", "--scope", "team=ml", "--amount", "1", "USD", "--stop-running"]))
            .code,
        0
    );
    spend(h, now, "z", "2026-11-19T00:00:00Z", "2026-11-19T01:00:00Z", "5 USD", "ml");
    let out = run(at(h, now).args(["budget", "status"]));
    assert!(out.stderr.contains("stopped job 1 `t`: budget `ml` is spent"), "{}", out.stderr);
    let show = json(at(h, now).args(["jobs", "show", "1", "--json"]));
    assert!(show["events"].to_string().contains("budget-stop"), "{show}");
}

#[test]
fn contracts_report_utilisation_overage_and_waste() {
    let home = tempfile::tempdir().expect("home");
    let h = home.path();
    let now = "2026-11-01T10:00:00Z";
    let out = run(at(h, now).args([
        "usage",
        "add",
        "--resource",
        "n1",
        "--provider",
        "aws",
        "--gpu-count",
        "2",
        "--start",
        "2026-11-01T00:00:00Z",
        "--end",
        "2026-11-01T10:00:00Z",
        "--hourly-rate",
        "6 USD",
        "--tags",
        "team=ml",
    ]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let set = |args: &[&str]| assert_eq!(run(at(h, now).args(args)).code, 0);
    // 3 GPUs reserved every hour at 1.00: 20 of 30 GPU-hours used, 10 wasted.
    set(&[
        "contract",
        "set",
        "reserved",
        "--scope",
        "team=ml",
        "--kind",
        "hourly",
        "--units",
        "3",
        "--rate",
        "1 USD",
        "--overage",
        "3 USD",
    ]);
    // A 15 GPU-hour block at 2.00, overage 3.00: 5 GPU-hours over.
    set(&[
        "contract",
        "set",
        "block",
        "--scope",
        "team=ml",
        "--kind",
        "block",
        "--units",
        "15",
        "--rate",
        "2 USD",
        "--overage",
        "3 USD",
    ]);
    let status = json(at(h, now).args(["contract", "status", "--json"]));
    let by: std::collections::BTreeMap<String, serde_json::Value> = status
        .as_array()
        .expect("contracts")
        .iter()
        .map(|c| (c["name"].as_str().expect("n").to_string(), c.clone()))
        .collect();
    let r = &by["reserved"];
    assert_eq!(
        (r["used_gpu_hours"].as_f64(), r["billed"].as_f64(), r["unused"].as_f64()),
        (Some(20.0), Some(30.0), Some(10.0)),
        "{r}"
    );
    let b = &by["block"];
    assert_eq!(
        (b["billed"].as_f64(), b["overage"].as_f64(), b["unused"].as_f64()),
        (Some(45.0), Some(15.0), Some(0.0)),
        "{b}"
    );
    assert_eq!(b["coverage"].as_f64(), Some(0.75));
    let out = run(at(h, now).args([
        "contract",
        "set",
        "x",
        "--kind",
        "weird",
        "--units",
        "1",
        "--rate",
        "1 USD",
        "--overage",
        "2 USD",
    ]));
    assert_eq!(out.code, 2);
}

/// The FOCUS export bills exactly what `contract status` says: a Purchase row for the fee,
/// covered usage as Committed/Used rows (billed 0, effective at the contract rate), and the
/// commitment nobody used as an Unused row.
#[test]
fn contracts_export_used_and_unused_focus_rows() {
    let home = tempfile::tempdir().expect("home");
    let h = home.path();
    let now = "2026-11-01T10:00:00Z";
    let out = run(at(h, now).args([
        "usage",
        "add",
        "--resource",
        "n1",
        "--provider",
        "aws",
        "--gpu-count",
        "2",
        "--start",
        "2026-11-01T00:00:00Z",
        "--end",
        "2026-11-01T10:00:00Z",
        "--hourly-rate",
        "6 USD",
        "--tags",
        "team=ml",
    ]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert_eq!(
        run(at(h, now).args([
            "contract",
            "set",
            "reserved",
            "--scope",
            "team=ml",
            "--kind",
            "hourly",
            "--units",
            "3",
            "--rate",
            "1 USD",
            "--overage",
            "3 USD"
        ]))
        .code,
        0
    );
    let exported = run(at(h, now).args(["cost", "export", "--format", "focus"]));
    assert_eq!(exported.code, 0, "{}", exported.stderr);
    let mut r = csv::Reader::from_reader(exported.stdout.as_bytes());
    let hd = r.headers().expect("h").clone();
    let col = |n: &str| hd.iter().position(|x| x == n).expect(n);
    let rows: Vec<csv::StringRecord> = r.records().map(|x| x.expect("row")).collect();
    let sum = |f: &str, filter: &dyn Fn(&csv::StringRecord) -> bool| -> rust_decimal::Decimal {
        rows.iter().filter(|x| filter(x)).map(|x| x[col(f)].parse::<rust_decimal::Decimal>().expect("d")).sum()
    };
    let status = |s: &'static str| move |x: &csv::StringRecord| x[col("CommitmentDiscountStatus")] == *s;
    assert_eq!(sum("BilledCost", &|_| true), rust_decimal::Decimal::from(30), "the fee, nothing more");
    assert_eq!(sum("EffectiveCost", &status("Used")), rust_decimal::Decimal::from(20));
    assert_eq!(sum("EffectiveCost", &status("Unused")), rust_decimal::Decimal::from(10));
    assert_eq!(rows.iter().filter(|x| status("Used")(x)).count(), 10, "one Used row per hour");
    assert_eq!(rows.iter().filter(|x| &x[col("ChargeCategory")] == "Purchase").count(), 1);
}
