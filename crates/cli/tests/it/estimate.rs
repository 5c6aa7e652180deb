use crate::common::{gpubroker, json, run};

#[test]
fn estimate_json_has_the_documented_fields() {
    let e = json(gpubroker().args([
        "estimate",
        "--model",
        "llama-3-8b",
        "--mode",
        "lora",
        "--tokens",
        "2e9",
        "--seq-len",
        "4096",
        "--gpu",
        "A100-80GB",
        "--count",
        "1",
        "--json",
    ]));
    assert_eq!(e["fits"], true);
    for f in ["memory_per_gpu_gib", "hours", "gpu_hours", "tokens_per_second", "assumptions"] {
        assert!(e[f].is_number() || e[f].is_object(), "missing {f}: {e}");
    }
    assert!(e["assumptions"]["mfu"].as_f64().expect("mfu") > 0.0);
    // 1 GPU: GPU-hours equal hours.
    assert!((e["hours"].as_f64().expect("h") - e["gpu_hours"].as_f64().expect("gh")).abs() < 1e-9);
}

#[test]
fn inference_reports_latency_and_throughput() {
    let e = json(gpubroker().args([
        "estimate",
        "--model",
        "llama-3.1-8b",
        "--mode",
        "inference",
        "--input-tokens",
        "1000",
        "--output-tokens",
        "1000",
        "--precision",
        "fp8",
        "--gpu",
        "H200",
        "--json",
    ]));
    for f in ["ttft_ms", "tpot_ms", "tokens_per_second"] {
        assert!(e[f].as_f64().expect(f) > 0.0, "{f}: {e}");
    }
    let b1 = json(gpubroker().args([
        "estimate",
        "--model",
        "llama-3.1-8b",
        "--mode",
        "inference",
        "--batch",
        "1",
        "--gpu",
        "H200",
        "--json",
    ]));
    // Batch 1 decode is bandwidth-bound: fewer tokens/s than the throughput-optimal batch.
    assert!(b1["tokens_per_second"].as_f64().expect("tps") < e["tokens_per_second"].as_f64().expect("tps"));
}

#[test]
fn more_gpus_fit_what_one_cannot() {
    let one = run(gpubroker().args([
        "estimate",
        "--model",
        "llama-3-70b",
        "--mode",
        "finetune",
        "--tokens",
        "1e9",
        "--gpu",
        "H100",
        "--count",
        "1",
        "--json",
    ]));
    assert_eq!(one.code, 1, "does not fit: exit 1");
    let v: serde_json::Value = serde_json::from_str(&one.stdout).expect("json");
    assert_eq!(v["fits"], false);
    let many = json(gpubroker().args([
        "estimate",
        "--model",
        "llama-3-70b",
        "--mode",
        "finetune",
        "--tokens",
        "1e9",
        "--gpu",
        "H100",
        "--count",
        "32",
        "--json",
    ]));
    assert_eq!(many["fits"], true);
}

#[test]
fn estimate_reads_a_task_file() {
    let out = run(gpubroker().args(["estimate", "examples/lora-llama3-8b.yaml", "--gpu", "L40S"]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains("lora llama-3-8b (bf16) on L40S x1"), "{}", out.stdout);
}
