//! Throughput and time.
//!
//! Training: FLOPs per token = c·N_active + c·layers·hidden·seq (attention, causal), with c = 6
//! for full training (2 forward + 4 backward), 4 for LoRA/QLoRA (no weight gradients of the
//! frozen base), plus 2 when activations are recomputed. Achieved FLOP/s per GPU = dense peak at
//! the precision × MFU (data, per architecture) × scaling efficiency.
//!
//! Inference: a roofline. Prefill is compute-bound (2·N_active per prompt token plus attention);
//! a decode step reads the weights shard and the batch's KV cache (bandwidth-bound at small
//! batch) or does 2·N_active FLOPs per sequence (compute-bound at large batch), plus a
//! tensor-parallel all-reduce per layer.

use gpubroker_catalog::GpuSpec;

use crate::efficiency::Efficiency;
use crate::memory;
use crate::workload::{Model, Workload, WorkloadKind};

/// Per-GPU efficiency lost per doubling of GPUs inside a node over NVLink/Infinity Fabric.
const INTRA_NODE_LOSS_FAST: f64 = 0.015;
/// ... and over PCIe only (gradients cross the host bridge).
const INTRA_NODE_LOSS_PCIE: f64 = 0.06;
/// Per-GPU efficiency lost per doubling of nodes on an RDMA fabric (InfiniBand/EFA, which cloud
/// 8-GPU NVLink instances come with). Calibrated on Llama 3 405B (38% MFU on 16K H100s vs 43% on
/// 8K) and MLPerf GPT-3 on 11,616 H100s: tuned 3D parallelism loses little per doubling.
const INTER_NODE_LOSS_RDMA: f64 = 0.008;
/// ... and on ordinary Ethernet (10-100 Gb/s) when every step exchanges full gradients or
/// gathers sharded weights: tens of GB per step over a link 10-100x slower than NVLink.
const INTER_NODE_LOSS_ETHERNET: f64 = 0.25;
/// ... and on Ethernet when only small gradients cross it (LoRA adapters, data-parallel replicas
/// of a model that fits one node).
const INTER_NODE_LOSS_ETHERNET_LIGHT: f64 = 0.04;
/// Latency of one all-reduce inside a node, seconds.
const ALLREDUCE_LATENCY_FAST_S: f64 = 8e-6;
const ALLREDUCE_LATENCY_PCIE_S: f64 = 25e-6;
/// LoRA runs slower per FLOP than full training (small adapter GEMMs, frozen-weight casts);
/// QLoRA also dequantises every weight on every pass.
const LORA_EFFICIENCY: f64 = 0.9;
const QLORA_EFFICIENCY: f64 = 0.6;

/// How GPUs are laid out.
#[derive(Debug, Clone, Copy)]
pub struct Layout<'a> {
    /// The GPU.
    pub gpu: &'a GpuSpec,
    /// GPUs in total.
    pub gpus: u32,
    /// GPUs per node.
    pub gpus_per_node: u32,
    /// Whether nodes are joined by an RDMA fabric.
    pub rdma: bool,
    /// Whether each step moves little data between nodes (LoRA adapters only).
    pub light_sync: bool,
}

impl Layout<'_> {
    /// Nodes used.
    pub fn nodes(&self) -> u32 {
        self.gpus.div_ceil(self.gpus_per_node.max(1))
    }

    /// GPUs used per node.
    pub fn in_node(&self) -> u32 {
        self.gpus.min(self.gpus_per_node.max(1))
    }

    /// Share of linear speed-up kept at this size (1.0 on one GPU).
    pub fn scaling_efficiency(&self) -> f64 {
        let intra_loss = if self.gpu.has_fast_scaleup() { INTRA_NODE_LOSS_FAST } else { INTRA_NODE_LOSS_PCIE };
        let inter_loss = match (self.rdma, self.light_sync) {
            (true, _) => INTER_NODE_LOSS_RDMA,
            (false, true) => INTER_NODE_LOSS_ETHERNET_LIGHT,
            (false, false) => INTER_NODE_LOSS_ETHERNET,
        };
        let intra = 1.0 - intra_loss * (self.in_node() as f64).log2();
        let inter = 1.0 - inter_loss * (self.nodes() as f64).log2();
        (intra * inter).clamp(0.2, 1.0)
    }
}

/// Training FLOPs per token.
pub fn training_flops_per_token(w: &Workload, m: &Model, recompute: bool) -> f64 {
    let base: f64 = match w.kind {
        WorkloadKind::Lora | WorkloadKind::Qlora => 4.0,
        _ => 6.0,
    };
    let c = base + if recompute { 2.0 } else { 0.0 };
    c * m.active_params + c * m.layers as f64 * m.hidden as f64 * w.seq_len as f64
}

/// Training throughput in tokens per second over all GPUs.
pub fn training_tokens_per_second(
    w: &Workload,
    m: &Model,
    layout: &Layout<'_>,
    eff: &Efficiency,
    recompute: bool,
) -> f64 {
    let kind_factor = match w.kind {
        WorkloadKind::Lora => LORA_EFFICIENCY,
        WorkloadKind::Qlora => QLORA_EFFICIENCY,
        _ => 1.0,
    };
    let per_gpu = layout.gpu.peak_tflops(w.precision) * 1e12 * eff.mfu * kind_factor;
    layout.gpus as f64 * per_gpu * layout.scaling_efficiency() / training_flops_per_token(w, m, recompute)
}

/// Weight bytes a decode step reads on each GPU. A MoE model touches only the experts its batch
/// routes to: all of them at large batch, the active ones at batch 1.
fn weight_bytes_read(w: &Workload, m: &Model, tp: f64, batch: f64) -> f64 {
    let b = memory::weight_bytes(w.precision);
    let active_share = (m.active_params / m.total_params).clamp(0.0, 1.0);
    let touched = if active_share >= 1.0 {
        m.total_params
    } else {
        m.active_params + (m.total_params - m.active_params) * (1.0 - (1.0 - active_share).powf(batch))
    };
    touched * b / tp
}

/// Seconds for one decode step of `batch` sequences whose cached context averages `context`.
pub fn decode_step_s(w: &Workload, m: &Model, layout: &Layout<'_>, eff: &Efficiency, batch: f64, context: f64) -> f64 {
    let tp = layout.gpus.max(1) as f64;
    let gpu = layout.gpu;
    let bytes = weight_bytes_read(w, m, tp, batch) + batch * context * memory::kv_bytes_per_token_per_gpu(w, m, tp);
    let t_mem = bytes / (gpu.mem_bw_tb_s * 1e12 * eff.eta_bw);
    let flops = (2.0 * m.active_params + 4.0 * m.layers as f64 * m.hidden as f64 * context) * batch / tp;
    let t_compute = flops / (gpu.peak_tflops(w.precision) * 1e12 * eff.eta_prefill);
    t_mem.max(t_compute) + allreduce_s(m, layout, batch)
}

/// Two all-reduces per layer of the batch's hidden states across the tensor-parallel group.
fn allreduce_s(m: &Model, layout: &Layout<'_>, tokens: f64) -> f64 {
    let tp = layout.gpus as f64;
    if tp <= 1.0 {
        return 0.0;
    }
    let gpu = layout.gpu;
    let (latency, link_gb_s) = if gpu.has_fast_scaleup() {
        (ALLREDUCE_LATENCY_FAST_S, gpu.scaleup_bw_gb_s / 2.0)
    } else {
        (ALLREDUCE_LATENCY_PCIE_S, gpu.host_bw_gb_s.unwrap_or(64.0) / 2.0)
    };
    let bytes = 2.0 * tokens * m.hidden as f64 * 2.0 * (tp - 1.0) / tp;
    2.0 * m.layers as f64 * (latency + bytes / (link_gb_s * 1e9))
}

/// Seconds of prefill compute for `prompts` prompts of `input` tokens, spread over the group.
pub fn prefill_s(w: &Workload, m: &Model, layout: &Layout<'_>, eff: &Efficiency, prompts: f64, input: f64) -> f64 {
    let flops = prompts * (2.0 * m.active_params * input + 2.0 * m.layers as f64 * m.hidden as f64 * input * input);
    let tp = layout.gpus.max(1) as f64;
    flops / (tp * layout.gpu.peak_tflops(w.precision) * 1e12 * eff.eta_prefill)
        + allreduce_s(m, layout, input * prompts)
}

/// Time to first token of one request on an idle replica: its prefill plus one pass over the weights.
pub fn ttft_s(w: &Workload, m: &Model, layout: &Layout<'_>, eff: &Efficiency) -> f64 {
    let tp = layout.gpus.max(1) as f64;
    let weights = weight_bytes_read(w, m, tp, 1.0) / (layout.gpu.mem_bw_tb_s * 1e12 * eff.eta_bw);
    prefill_s(w, m, layout, eff, 1.0, w.input_tokens as f64).max(weights)
}
