//! Memory per GPU. All results are GiB (2^30 bytes), the unit `nvidia-smi` and PyTorch report.
//!
//! Sources (see `../shared/reference/perf-model.md` §2): mixed-precision AdamW keeps 16 bytes per
//! parameter (bf16 weights 2 + bf16 gradients 2 + fp32 master, momentum and variance 12; ZeRO
//! paper, EleutherAI); fully sharded data parallelism (ZeRO-3/FSDP) divides all three by the GPU
//! count and adds a gather buffer for the layers in flight; activations follow Korthikanti et al.
//! (34·s·b·h bytes per layer with flash attention; 2·s·b·h per layer when every layer is
//! recomputed); LoRA freezes the base (no gradients, no optimizer) and QLoRA stores it in 4-bit
//! NF4 with double quantisation (0.516 bytes/param); the KV cache holds 2·layers·kv_heads·head_dim
//! values per token (vLLM), or one MLA latent per layer for DeepSeek.

use gpubroker_catalog::Precision;
use serde::Serialize;

use crate::workload::{Model, Workload, WorkloadKind};

/// Bytes in a GiB.
pub const GIB: f64 = 1_073_741_824.0;

/// CUDA context, cuBLAS workspaces and NCCL buffers: about 1.5 GiB on current stacks.
const RUNTIME_GIB: f64 = 1.5;
/// Allocator fragmentation as a share of everything else (PyTorch caching allocator).
const FRAGMENTATION: f64 = 0.05;
/// NF4 with double quantisation: 4 bits + 0.127 bits of scales per parameter (QLoRA paper).
const NF4_BYTES_PER_PARAM: f64 = (4.0 + 0.127) / 8.0;
/// Share of device memory inference engines give to weights + KV cache (vLLM and TensorRT-LLM
/// default `gpu_memory_utilization` / `kv_cache_free_gpu_mem_fraction` = 0.90).
pub const INFERENCE_MEMORY_FRACTION: f64 = 0.90;

/// Where the memory of one GPU goes, GiB.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct MemoryBreakdown {
    /// Model weights (the shard on this GPU, plus gather buffers).
    pub weights: f64,
    /// Gradients.
    pub gradients: f64,
    /// Optimizer states (including fp32 master weights).
    pub optimizer: f64,
    /// Activations kept for the backward pass, or inference workspace.
    pub activations: f64,
    /// KV cache (inference).
    pub kv_cache: f64,
    /// Runtime and fragmentation.
    pub overhead: f64,
    /// The sum.
    pub total: f64,
}

impl MemoryBreakdown {
    fn finish(mut self) -> Self {
        let sum = self.weights + self.gradients + self.optimizer + self.activations + self.kv_cache;
        self.overhead = RUNTIME_GIB + FRAGMENTATION * sum;
        self.total = sum + self.overhead;
        self
    }
}

/// Bytes per stored weight at `precision`.
pub fn weight_bytes(precision: Precision) -> f64 {
    precision.bytes()
}

/// Training memory per GPU with `gpus` GPUs sharing the states (FSDP/ZeRO-3 when > 1),
/// `micro_batch` sequences of `seq_len` tokens per GPU, and optional full activation recompute.
pub fn training(w: &Workload, m: &Model, gpus: u32, micro_batch: u32, recompute: bool) -> MemoryBreakdown {
    let p = m.total_params;
    let n = gpus.max(1) as f64;
    let per_layer_params = p / m.layers.max(1) as f64;
    let mut mem = MemoryBreakdown::default();
    let full_precision = w.precision == Precision::Fp32;
    match w.kind {
        WorkloadKind::Lora | WorkloadKind::Qlora => {
            let base_bytes = if w.kind == WorkloadKind::Qlora {
                NF4_BYTES_PER_PARAM
            } else {
                match w.precision {
                    Precision::Fp32 => 4.0,
                    Precision::Int4 | Precision::Fp4 => NF4_BYTES_PER_PARAM,
                    Precision::Int8 | Precision::Fp8 => 1.0,
                    _ => 2.0,
                }
            };
            let adapters = m.lora_params(w.lora_rank);
            mem.weights = p * base_bytes / n + adapters * 4.0;
            if n > 1.0 {
                // Two layers gathered at a time (current + prefetch), in 16-bit.
                mem.weights += 2.0 * per_layer_params * 2.0;
            }
            mem.gradients = adapters * 4.0;
            mem.optimizer = adapters * 8.0;
        }
        _ => {
            let (wb, gb, ob) = if full_precision { (4.0, 4.0, 8.0) } else { (2.0, 2.0, 12.0) };
            mem.weights = p * wb / n;
            if n > 1.0 {
                mem.weights += 2.0 * per_layer_params * wb;
            }
            mem.gradients = p * gb / n;
            mem.optimizer = p * ob / n;
        }
    }
    let s = w.seq_len as f64;
    let b = micro_batch.max(1) as f64;
    let h = m.hidden as f64;
    let layers = m.layers as f64;
    let act_scale = if full_precision { 2.0 } else { 1.0 };
    let per_layer_full = 34.0 * s * b * h * act_scale;
    let activations =
        if recompute { 2.0 * s * b * h * layers * act_scale + per_layer_full } else { per_layer_full * layers };
    // Logits in 16 bits plus their fp32 copy for the loss.
    let logits = 6.0 * s * b * m.vocab as f64;
    mem.activations = activations + logits;
    to_gib(mem).finish()
}

/// Inference memory per GPU for one replica spread over `tp` GPUs, holding the KV cache of
/// `sequences` sequences of `context` tokens each.
pub fn inference(w: &Workload, m: &Model, tp: u32, sequences: f64, context: f64) -> MemoryBreakdown {
    let tp = tp.max(1) as f64;
    let mut mem = MemoryBreakdown::default();
    let scales = match w.precision {
        Precision::Int4 | Precision::Fp4 => 1.03, // group-wise scales and zero points
        _ => 1.0,
    };
    mem.weights = m.total_params * weight_bytes(w.precision) * scales / tp;
    mem.kv_cache = sequences * context * kv_bytes_per_token_per_gpu(w, m, tp);
    // Workspace for one prefill chunk of 8192 tokens through the widest layer.
    mem.activations = 8192.0 * (2.0 * m.hidden as f64 + m.ffn as f64) * 2.0 * 2.0 / tp;
    to_gib(mem).finish()
}

/// KV cache bytes per token on each GPU of a tensor-parallel group of `tp`. KV heads split
/// across the group but never below one per GPU; an MLA latent is replicated on every GPU.
pub fn kv_bytes_per_token_per_gpu(w: &Workload, m: &Model, tp: f64) -> f64 {
    let per_token = m.kv_bytes_per_token(kv_value_bytes(w.precision));
    if m.kv_latent.is_some() { per_token } else { per_token / tp.min(m.kv_heads.max(1) as f64) }
}

/// Bytes per cached K or V value: fp8 engines keep an fp8 cache; weight-only int8/int4 keep 16 bits.
pub fn kv_value_bytes(precision: Precision) -> f64 {
    match precision {
        Precision::Fp8 | Precision::Fp4 => 1.0,
        Precision::Fp32 => 4.0,
        _ => 2.0,
    }
}

fn to_gib(mut m: MemoryBreakdown) -> MemoryBreakdown {
    m.weights /= GIB;
    m.gradients /= GIB;
    m.optimizer /= GIB;
    m.activations /= GIB;
    m.kv_cache /= GIB;
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model_7b() -> Model {
        Model {
            name: "llama-2-7b".into(),
            total_params: 6.74e9,
            active_params: 6.74e9,
            layers: 32,
            hidden: 4096,
            ffn: 11008,
            heads: 32,
            kv_heads: 32,
            head_dim: 128,
            vocab: 32000,
            kv_latent: None,
        }
    }

    fn workload(kind: WorkloadKind) -> Workload {
        Workload {
            kind,
            model: Some(model_7b()),
            precision: Precision::Bf16,
            tokens: Some(1e9),
            seq_len: 4096,
            batch: None,
            lora_rank: 16,
            input_tokens: 1000,
            output_tokens: 1000,
            requests: None,
            serving: None,
            custom: None,
        }
    }

    #[test]
    fn full_training_is_sixteen_bytes_per_param_before_activations() {
        let w = workload(WorkloadKind::Finetune);
        let mem = training(&w, &model_7b(), 1, 1, true);
        let states = mem.weights + mem.gradients + mem.optimizer;
        assert!((states - 16.0 * 6.74e9 / GIB).abs() < 0.01, "{states}");
    }

    #[test]
    fn sharding_divides_states() {
        let w = workload(WorkloadKind::Pretrain);
        let one = training(&w, &model_7b(), 1, 1, true);
        let eight = training(&w, &model_7b(), 8, 1, true);
        assert!(eight.optimizer * 8.0 - one.optimizer < 1e-6);
        assert!(eight.total < one.total / 3.0);
    }

    #[test]
    fn qlora_fits_where_lora_does_not() {
        let lora = training(&workload(WorkloadKind::Lora), &model_7b(), 1, 1, true);
        let qlora = training(&workload(WorkloadKind::Qlora), &model_7b(), 1, 1, true);
        assert!(lora.weights > 12.0 && qlora.weights < 4.5, "{} {}", lora.weights, qlora.weights);
    }

    #[test]
    fn kv_cache_matches_vllm_table() {
        // Llama-2-7B MHA bf16: 512 KiB per token, 4 GiB for an 8K sequence (perf-model.md §2.6).
        let w = workload(WorkloadKind::Inference);
        let mem = inference(&w, &model_7b(), 1, 1.0, 8192.0);
        assert!((mem.kv_cache - 4.0).abs() < 1e-9, "{}", mem.kv_cache);
    }
}
