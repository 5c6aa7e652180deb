use gpubroker_catalog::GpuSpec;
use serde::Serialize;

use crate::efficiency::EfficiencyTable;
pub use crate::memory::MemoryBreakdown;
use crate::memory::{self, INFERENCE_MEMORY_FRACTION};
use crate::timing::{self, Layout};
use crate::workload::{Model, Workload, WorkloadKind};

/// Largest batch an inference engine schedules at once (TensorRT-LLM's default
/// `max_batch_size` is 2048; vLLM's `max_num_seqs` is 256-1024).
const MAX_INFERENCE_BATCH: f64 = 1024.0;
/// Time-per-output-token target when a serving task gives none: 100 ms ≈ 10 tokens/s per user,
/// faster than people read.
const DEFAULT_TPOT_MS: f64 = 100.0;

/// The GPUs a workload is estimated on.
#[derive(Debug, Clone, Copy)]
pub struct Hardware<'a> {
    /// The GPU type.
    pub gpu: &'a GpuSpec,
    /// GPUs in total.
    pub gpus: u32,
    /// GPUs per node (instance).
    pub gpus_per_node: u32,
    /// Whether nodes are joined by an RDMA fabric (InfiniBand/EFA).
    pub rdma: bool,
}

/// The factors an estimate used, so that a user can see (and argue with) every number.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Assumptions {
    /// Model-FLOPs utilisation (training).
    pub mfu: f64,
    /// Achieved share of peak memory bandwidth (decode).
    pub eta_bw: f64,
    /// Achieved share of peak compute (prefill).
    pub eta_prefill: f64,
    /// Share of linear speed-up kept across the GPUs.
    pub scaling_efficiency: f64,
    /// Dense peak used, TFLOP/s per GPU.
    pub peak_tflops: f64,
    /// Training FLOPs per token.
    pub flops_per_token: Option<f64>,
    /// Whether activations are recomputed to fit.
    pub activation_recompute: bool,
    /// How the model is spread: `single`, `fsdp` (sharded data parallel), `tensor-parallel`.
    pub parallelism: String,
    /// Memory headroom required, as a share of the estimate.
    pub memory_headroom: f64,
    /// Other notes.
    pub notes: Vec<String>,
}

/// What a workload needs on given hardware.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Estimate {
    /// Whether it fits in memory with the headroom.
    pub fits: bool,
    /// Estimated peak memory per GPU, GiB.
    pub memory_per_gpu_gib: f64,
    /// Device memory per GPU, GiB.
    pub gpu_memory_gib: f64,
    /// Where the memory goes.
    pub memory: MemoryBreakdown,
    /// Wall-clock hours (training, batch inference, serving duration, custom).
    pub hours: Option<f64>,
    /// GPU-hours (`hours` × GPUs).
    pub gpu_hours: Option<f64>,
    /// Tokens per second over all GPUs (training: processed; inference: generated).
    pub tokens_per_second: Option<f64>,
    /// Time to first token, ms (inference).
    pub ttft_ms: Option<f64>,
    /// Time per output token at the batch used, ms (inference).
    pub tpot_ms: Option<f64>,
    /// Concurrent sequences per replica (inference).
    pub batch: Option<u32>,
    /// Serving replicas and whether they sustain the requested rate.
    pub replicas: Option<u32>,
    /// Whether serving meets the request rate and latency targets.
    pub meets_throughput: Option<bool>,
    /// The factors used.
    pub assumptions: Assumptions,
}

/// Estimates `w` on `hw`. `headroom` is the memory margin required (0.15 = the estimate plus
/// 15% must fit). The workload must have passed [`Workload::validate`].
pub fn estimate(w: &Workload, hw: &Hardware<'_>, table: &EfficiencyTable, headroom: f64) -> Estimate {
    let eff = table.get(&hw.gpu.architecture, w.precision);
    let light_sync = matches!(w.kind, WorkloadKind::Lora | WorkloadKind::Qlora);
    let layout =
        Layout { gpu: hw.gpu, gpus: hw.gpus.max(1), gpus_per_node: hw.gpus_per_node.max(1), rdma: hw.rdma, light_sync };
    let capacity = hw.gpu.memory_gib();
    let mut notes = Vec::new();
    if !hw.gpu.supports(w.precision) {
        notes.push(format!("{} has no native {} tensor cores; computed at its 16-bit peak", hw.gpu.name, w.precision));
    }
    let mut a = Assumptions {
        mfu: eff.mfu,
        eta_bw: eff.eta_bw,
        eta_prefill: eff.eta_prefill,
        scaling_efficiency: layout.scaling_efficiency(),
        peak_tflops: hw.gpu.peak_tflops(w.precision),
        flops_per_token: None,
        activation_recompute: false,
        parallelism: if layout.gpus > 1 { "fsdp".into() } else { "single".into() },
        memory_headroom: headroom,
        notes,
    };
    match (w.kind, &w.model) {
        (WorkloadKind::Custom, _) => custom(w, &layout, capacity, headroom, a),
        (kind, Some(m)) if kind.is_training() => training(w, m, &layout, &eff, capacity, headroom, a),
        (_, Some(m)) => inference(w, m, &layout, &eff, capacity, headroom, a),
        (_, None) => {
            a.notes.push("no model given".into());
            estimate_none(capacity, a)
        }
    }
}

fn fits(total: f64, capacity: f64, headroom: f64) -> bool {
    total * (1.0 + headroom) <= capacity
}

fn training(
    w: &Workload,
    m: &Model,
    layout: &Layout<'_>,
    eff: &crate::Efficiency,
    capacity: f64,
    headroom: f64,
    mut a: Assumptions,
) -> Estimate {
    let micro_batch = w.batch.unwrap_or(1);
    let plain = memory::training(w, m, layout.gpus, micro_batch, false);
    let (mem, recompute) = if fits(plain.total, capacity, headroom) {
        (plain, false)
    } else {
        (memory::training(w, m, layout.gpus, micro_batch, true), true)
    };
    let tps = timing::training_tokens_per_second(w, m, layout, eff, recompute);
    let tokens = w.tokens.unwrap_or(0.0);
    let hours = tokens / tps / 3600.0;
    a.activation_recompute = recompute;
    a.flops_per_token = Some(timing::training_flops_per_token(w, m, recompute));
    if matches!(w.kind, WorkloadKind::Lora | WorkloadKind::Qlora) {
        a.notes.push(format!(
            "LoRA rank {} on q,k,v,o,gate,up,down: {:.1}M trainable parameters",
            w.lora_rank,
            m.lora_params(w.lora_rank) / 1e6
        ));
    }
    if recompute {
        a.notes.push("activations recomputed in the backward pass to fit (+2 FLOPs/param/token)".into());
    }
    Estimate {
        fits: fits(mem.total, capacity, headroom),
        memory_per_gpu_gib: mem.total,
        gpu_memory_gib: capacity,
        memory: mem,
        hours: Some(hours),
        gpu_hours: Some(hours * layout.gpus as f64),
        tokens_per_second: Some(tps),
        ttft_ms: None,
        tpot_ms: None,
        batch: Some(micro_batch),
        replicas: None,
        meets_throughput: None,
        assumptions: a,
    }
}

fn inference(
    w: &Workload,
    m: &Model,
    layout: &Layout<'_>,
    eff: &crate::Efficiency,
    capacity: f64,
    headroom: f64,
    mut a: Assumptions,
) -> Estimate {
    let context = (w.input_tokens + w.output_tokens) as f64;
    let smallest = replica_size(w, m, layout, capacity, headroom, context);
    let in_node = layout.gpus.min(layout.gpus_per_node).max(1);
    // Replica size: a latency estimate uses every GPU of the node for one replica (what a user
    // measuring time-to-first-token runs); throughput work tries each power of two from the
    // smallest that fits and keeps the one with the most tokens per second over all GPUs.
    let tp = match (&w.serving, w.kind) {
        (None, WorkloadKind::Inference) => smallest.max(in_node),
        _ => {
            let mut best = (smallest, 0.0);
            let mut tp = smallest;
            while tp <= in_node.max(smallest) {
                let tps =
                    replica_throughput(w, m, layout, eff, capacity, tp, context) * (layout.gpus / tp).max(1) as f64;
                if tps > best.1 * 1.02 {
                    best = (tp, tps);
                }
                if tp >= in_node {
                    break;
                }
                tp *= 2;
            }
            best.0
        }
    };
    let replicas = (layout.gpus / tp).max(1);
    let replica = Layout { gpus: tp, ..*layout };
    let base = memory::inference(w, m, tp, 1.0, context);
    let fits_one = fits(base.total, capacity, headroom);
    let max_batch = kv_batch_limit(w, m, capacity, tp, context);
    let avg_context = w.input_tokens as f64 + w.output_tokens as f64 / 2.0;
    a.parallelism =
        if tp > 1 { format!("tensor-parallel x{tp}, {replicas} replica(s)") } else { format!("{replicas} replica(s)") };
    let ttft_s = timing::ttft_s(w, m, &replica, eff);
    let step = |b: f64| timing::decode_step_s(w, m, &replica, eff, b, avg_context);
    let prefill_per_request = timing::prefill_s(w, m, &replica, eff, 1.0, w.input_tokens as f64);
    let out = w.output_tokens as f64;
    // Steady-state throughput of a replica at batch b with continuous batching: b sequences
    // advance one token per step, and each sequence's prompt was prefetched once.
    let replica_tps = |b: f64| b * out / (out * step(b) + b * prefill_per_request);
    let (batch, meets, hours) = match (&w.serving, w.kind) {
        (Some(s), _) => {
            let tpot_target = s.tpot_ms.unwrap_or(DEFAULT_TPOT_MS) / 1000.0;
            let mut b = max_batch.max(1.0);
            while b > 1.0 && step(b) > tpot_target {
                b = (b / 2.0).floor();
            }
            let need_tps = s.requests_per_second * out;
            let have_tps = replica_tps(b) * replicas as f64;
            let latency_ok = step(b) <= tpot_target && s.ttft_ms.is_none_or(|t| ttft_s * 1000.0 <= t);
            a.notes.push(format!(
                "serving {:.2} req/s needs {:.0} output tokens/s; {} replica(s) give {:.0}",
                s.requests_per_second, need_tps, replicas, have_tps
            ));
            (b, Some(latency_ok && have_tps >= need_tps && max_batch >= 1.0), Some(s.duration_hours))
        }
        (None, WorkloadKind::BatchInference) | (None, WorkloadKind::Inference) => {
            let b = w.batch.map(f64::from).unwrap_or(max_batch).max(1.0);
            let hours = w.requests.map(|r| {
                let per_replica = r / replicas as f64;
                let b = b.min(per_replica.max(1.0));
                (per_replica * out / replica_tps(b)) / 3600.0
            });
            (b, None, if w.kind == WorkloadKind::BatchInference { hours } else { None })
        }
        _ => (1.0, None, None),
    };
    let mem = memory::inference(w, m, tp, batch, context);
    if w.batch.is_some_and(|b| f64::from(b) > max_batch) {
        a.notes.push(format!(
            "batch {} does not fit the KV cache; at most {max_batch:.0} sequences of {context:.0} tokens fit",
            w.batch.unwrap_or(0)
        ));
    }
    a.notes.push(format!(
        "KV cache: {:.0} KiB per token; {:.0} sequences of {:.0} tokens fit per replica",
        m.kv_bytes_per_token(memory::kv_value_bytes(w.precision)) / 1024.0,
        max_batch,
        context
    ));
    let tps = replica_tps(batch) * replicas as f64;
    let batch_fits = w.batch.is_none_or(|b| f64::from(b) <= max_batch);
    Estimate {
        fits: fits_one && max_batch >= 1.0 && batch_fits,
        memory_per_gpu_gib: mem.total,
        gpu_memory_gib: capacity,
        memory: mem,
        hours,
        gpu_hours: hours.map(|h| h * layout.gpus as f64),
        tokens_per_second: Some(tps),
        ttft_ms: Some(ttft_s * 1000.0),
        tpot_ms: Some(step(batch) * 1000.0),
        batch: Some(batch as u32),
        replicas: Some(replicas),
        meets_throughput: meets,
        assumptions: Assumptions { scaling_efficiency: 1.0, ..a },
    }
}

/// Sequences whose KV cache fits beside the weights on a replica of `tp` GPUs.
fn kv_batch_limit(w: &Workload, m: &Model, capacity: f64, tp: u32, context: f64) -> f64 {
    let base = memory::inference(w, m, tp, 1.0, context);
    // KV pool: the engine's share of memory minus weights, workspace and runtime.
    let pool = capacity * INFERENCE_MEMORY_FRACTION - (base.total - base.kv_cache);
    let kv_per_seq = memory::kv_bytes_per_token_per_gpu(w, m, tp as f64) * context / memory::GIB;
    if kv_per_seq > 0.0 { (pool / kv_per_seq).floor().clamp(0.0, MAX_INFERENCE_BATCH) } else { MAX_INFERENCE_BATCH }
}

/// Steady-state output tokens/s of one replica of `tp` GPUs at its largest batch.
fn replica_throughput(
    w: &Workload,
    m: &Model,
    layout: &Layout<'_>,
    eff: &crate::Efficiency,
    capacity: f64,
    tp: u32,
    context: f64,
) -> f64 {
    let replica = Layout { gpus: tp, ..*layout };
    let b = w.batch.map(f64::from).unwrap_or_else(|| kv_batch_limit(w, m, capacity, tp, context));
    if b < 1.0 {
        return 0.0;
    }
    let out = w.output_tokens as f64;
    let avg_context = w.input_tokens as f64 + out / 2.0;
    let step = timing::decode_step_s(w, m, &replica, eff, b, avg_context);
    let prefill = timing::prefill_s(w, m, &replica, eff, 1.0, w.input_tokens as f64);
    b * out / (out * step + b * prefill)
}

/// GPUs per inference replica: the smallest power of two (within a node, and within the GPUs
/// given) whose shard plus one full-context sequence fits.
fn replica_size(w: &Workload, m: &Model, layout: &Layout<'_>, capacity: f64, headroom: f64, context: f64) -> u32 {
    let limit = layout.gpus.min(layout.gpus_per_node).max(1);
    let mut tp = 1;
    while tp < limit {
        if fits(memory::inference(w, m, tp, 1.0, context).total, capacity, headroom) {
            return tp;
        }
        tp *= 2;
    }
    // Pipeline across nodes when even a whole node is too small, but only over an RDMA fabric:
    // splitting one replica across Ethernet-connected machines is not a serving setup anyone
    // should be recommended.
    if layout.rdma
        && layout.gpus > limit
        && !fits(memory::inference(w, m, limit, 1.0, context).total, capacity, headroom)
    {
        return layout.gpus;
    }
    limit
}

fn custom(w: &Workload, layout: &Layout<'_>, capacity: f64, headroom: f64, mut a: Assumptions) -> Estimate {
    let Some(c) = &w.custom else {
        return estimate_none(capacity, a);
    };
    let (reference, target) = if c.bandwidth_bound {
        (c.reference_bw_tb_s, layout.gpu.mem_bw_tb_s)
    } else {
        (c.reference_tflops, layout.gpu.peak_tflops(w.precision))
    };
    let speedup = if reference > 0.0 && target > 0.0 { target / reference } else { 1.0 };
    let gpu_hours = c.gpu_hours / speedup / layout.scaling_efficiency();
    let hours = gpu_hours / layout.gpus as f64;
    a.notes.push(format!(
        "{:.2}x the reference GPU's {}",
        speedup,
        if c.bandwidth_bound { "memory bandwidth" } else { "peak throughput" }
    ));
    let mem = c.memory_gib.unwrap_or(0.0);
    Estimate {
        fits: fits(mem, capacity, headroom),
        memory_per_gpu_gib: mem,
        gpu_memory_gib: capacity,
        memory: MemoryBreakdown { total: mem, ..Default::default() },
        hours: Some(hours),
        gpu_hours: Some(gpu_hours),
        tokens_per_second: None,
        ttft_ms: None,
        tpot_ms: None,
        batch: None,
        replicas: None,
        meets_throughput: None,
        assumptions: a,
    }
}

fn estimate_none(capacity: f64, a: Assumptions) -> Estimate {
    Estimate {
        fits: false,
        memory_per_gpu_gib: 0.0,
        gpu_memory_gib: capacity,
        memory: MemoryBreakdown::default(),
        hours: None,
        gpu_hours: None,
        tokens_per_second: None,
        ttft_ms: None,
        tpot_ms: None,
        batch: None,
        replicas: None,
        meets_throughput: None,
        assumptions: a,
    }
}

/// The smallest GPU count (1, 2, 4, ... up to a node, then whole nodes up to `max_gpus`) at
/// which `w` fits in memory and, for serving, sustains its request rate.
pub fn smallest_fit(
    w: &Workload,
    gpu: &GpuSpec,
    gpus_per_node: u32,
    rdma: bool,
    table: &EfficiencyTable,
    headroom: f64,
    max_gpus: u32,
) -> Option<(u32, Estimate)> {
    let per_node = gpus_per_node.max(1);
    let mut candidates: Vec<u32> = Vec::new();
    let mut n = 1;
    while n < per_node {
        candidates.push(n);
        n *= 2;
    }
    let mut nodes = 1;
    while nodes * per_node <= max_gpus {
        candidates.push(nodes * per_node);
        nodes = if nodes < 8 { nodes + 1 } else { nodes * 2 };
    }
    candidates.into_iter().filter(|&n| n <= max_gpus).find_map(|gpus| {
        let e = estimate(w, &Hardware { gpu, gpus, gpus_per_node: per_node, rdma }, table, headroom);
        (e.fits && e.meets_throughput != Some(false)).then_some((gpus, e))
    })
}
