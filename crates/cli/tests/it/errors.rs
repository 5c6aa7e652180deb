//! Bad input gets exit code 2 and a message naming the file, line and field; never a panic.

use crate::common::{gpubroker, run, temp_file};

/// Runs `plan` on a task with `text` and returns (exit code, stderr).
fn plan_task(text: &str) -> (i32, String) {
    let (_dir, path) = temp_file("task.yaml", text);
    let out = run(gpubroker().args(["plan", path.to_str().expect("path")]));
    assert!(!out.stderr.contains("panicked"), "panic: {}", out.stderr);
    (out.code, out.stderr)
}

fn assert_error(text: &str, expect_line: u32, expect: &[&str]) {
    let (code, stderr) = plan_task(text);
    assert_eq!(code, 2, "expected exit 2 for:\n{text}\nstderr: {stderr}");
    assert!(stderr.contains(&format!("task.yaml:{expect_line}:")), "no `task.yaml:{expect_line}:` in: {stderr}");
    for e in expect {
        assert!(stderr.contains(e), "`{e}` not in: {stderr}");
    }
}

#[test]
fn malformed_yaml() {
    assert_error("workload:\n  kind: lora\n   model: llama-3-8b\n", 3, &["error:"]);
    assert_error("workload:\n  kind: lora\n  model: [llama\n", 3, &["`workload.model`", "expected a string"]);
}

#[test]
fn unknown_key_names_the_field_and_the_expected_keys() {
    assert_error("workload:\n  kind: lora\n  modle: llama-3-8b\n", 3, &["unknown field `modle`", "expected one of"]);
    assert_error("resources:\n  acelerators: A100:8\n", 2, &["unknown field `acelerators`"]);
}

#[test]
fn unknown_gpu() {
    assert_error(
        "resources:\n  accelerators: GTX480:8\n",
        2,
        &["`resources.accelerators`", "unknown GPU `GTX480`", "known GPUs:"],
    );
}

#[test]
fn unknown_model() {
    assert_error(
        "workload:\n  kind: lora\n  model: llama-9-9000b\n  tokens: 1e9\n",
        3,
        &["`workload.model`", "unknown model `llama-9-9000b`"],
    );
}

#[test]
fn negative_and_absurd_numbers() {
    assert_error(
        "workload:\n  kind: lora\n  model: llama-3-8b\n  tokens: -5\n",
        4,
        &["`workload.tokens`", "must be a number > 0"],
    );
    assert_error(
        "workload:\n  kind: pretrain\n  model: llama-3-8b\n  tokens: 1e30\n",
        4,
        &["`workload.tokens`", "at most"],
    );
    assert_error(
        "workload:\n  kind: lora\n  model: llama-3-8b\n  tokens: 1e9\n  seq_len: 0\n",
        5,
        &["`workload.seq_len`"],
    );
    assert_error("resources:\n  accelerators: A100:-8\n", 2, &["whole number from 1 to 64"]);
    assert_error("num_nodes: 0\n", 1, &["`num_nodes`", "between 1 and 4096"]);
    assert_error(
        "workload:\n  kind: lora\n  model: llama-3-8b\n  tokens: lots\n",
        4,
        &["`workload.tokens`", "is not a number"],
    );
}

#[test]
fn impossible_deadline_and_budget() {
    assert_error(
        "workload:\n  kind: lora\n  model: llama-3-8b\n  tokens: 1e9\n  deadline: 2020-01-01T00:00:00Z\n",
        5,
        &["`workload.deadline`", "in the past"],
    );
    assert_error(
        "workload:\n  kind: lora\n  model: llama-3-8b\n  tokens: 1e9\n  deadline: 10s\n",
        5,
        &["shorter than a minute"],
    );
    assert_error(
        "workload:\n  kind: lora\n  model: llama-3-8b\n  tokens: 1e9\n  deadline: soon\n",
        5,
        &["invalid duration `soon`"],
    );
    assert_error(
        "workload:\n  kind: lora\n  model: llama-3-8b\n  tokens: 1e9\n  budget: -5 USD\n",
        5,
        &["`workload.budget`"],
    );
    assert_error(
        "workload:\n  kind: lora\n  model: llama-3-8b\n  tokens: 1e9\n  budget: five dollars\n",
        5,
        &["`workload.budget`", "expected a number and a currency"],
    );
}

#[test]
fn missing_required_fields() {
    assert_error("workload:\n  kind: lora\n  model: llama-3-8b\n", 1, &["`workload.tokens`", "needs `tokens`"]);
    assert_error(
        "workload:\n  kind: inference\n  model: llama-3-8b\n  requests_per_second: 3\n",
        1,
        &["`workload.duration`"],
    );
    assert_error("workload:\n  model: llama-3-8b\n", 1, &["`workload.kind`", "is required"]);
}

#[test]
fn empty_and_missing_files() {
    let (code, stderr) = plan_task("");
    assert_eq!(code, 2);
    assert!(stderr.contains("task.yaml: the task file is empty"), "{stderr}");
    let out = run(gpubroker().args(["plan", "does/not/exist.yaml"]));
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("does/not/exist.yaml: cannot read the task file"), "{}", out.stderr);
}

#[test]
fn bad_catalog_rows_name_file_line_and_field() {
    let header = "provider,region,instance_type,gpu,gpu_count,pricing,price,currency\n";
    for (row, field, expect) in [
        ("x,r,t,H100,8,on_demand,-1,USD", "price", "must be > 0"),
        ("x,r,t,H100,8,on_demand,abc,USD", "price", "not a decimal"),
        ("x,r,t,GTX480,8,on_demand,1,USD", "gpu", "unknown GPU `GTX480`"),
        ("x,r,t,H100,0,on_demand,1,USD", "gpu_count", "between 1 and 64"),
        ("x,r,t,H100,8,cheap,1,USD", "pricing", "unknown pricing model `cheap`"),
        ("x,r,t,H100,8,on_demand,1,DOLLARS", "currency", "ISO 4217"),
        ("x,r,t,H100,8,on_demand,1,XYZ", "currency", "no exchange rate for XYZ"),
    ] {
        let (_dir, path) = temp_file("offers.csv", &format!("{header}x,r,t0,H100,8,on_demand,1,USD\n{row}\n"));
        let out = run(gpubroker().args(["--catalog", path.to_str().expect("path"), "gpus"]));
        assert_eq!(out.code, 2, "{row}: {}", out.stderr);
        assert!(out.stderr.contains(&format!("offers.csv:3: {field}:")), "{row}: {}", out.stderr);
        assert!(out.stderr.contains(expect), "{row}: `{expect}` not in {}", out.stderr);
    }
    let (_dir, path) = temp_file("prices.csv", "a,b,c\n1,2,3\n");
    let out = run(gpubroker().args(["--catalog", path.to_str().expect("path"), "gpus"]));
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("prices.csv:1: header: not a catalog table"), "{}", out.stderr);
}

#[test]
fn bad_flags() {
    let out = run(gpubroker().args(["plan", "examples/lora-llama3-8b.yaml", "--currency", "XYZ"]));
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("no exchange rate for `XYZ`"), "{}", out.stderr);
    let out = run(gpubroker().args(["plan", "examples/lora-llama3-8b.yaml", "--pricing", "free"]));
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("unknown pricing model `free`"), "{}", out.stderr);
    let out = run(gpubroker().args(["plan", "examples/lora-llama3-8b.yaml", "--headroom", "3"]));
    assert_eq!(out.code, 2);
    let out = run(gpubroker().args([
        "estimate",
        "--model",
        "llama-3-8b",
        "--mode",
        "lora",
        "--tokens",
        "1e9",
        "--gpu",
        "GTX480",
    ]));
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("unknown GPU `GTX480`"), "{}", out.stderr);
    let out = run(gpubroker().args(["plan"]));
    assert_eq!(out.code, 2, "clap usage errors exit 2");
    let out = run(gpubroker().env("GPUBROKER_NOW", "yesterday").args(["gpus"]));
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("GPUBROKER_NOW"), "{}", out.stderr);
}
