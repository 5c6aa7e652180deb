use std::fmt;
use std::str::FromStr;

use gpubroker_catalog::{ModelPreset, Precision};
use serde::Serialize;

/// What kind of work a task does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum WorkloadKind {
    /// Training from scratch: all weights, gradients and optimizer states.
    Pretrain,
    /// Full fine-tuning: the same memory and compute per token as pre-training.
    Finetune,
    /// LoRA: frozen base weights, small trainable adapters.
    Lora,
    /// QLoRA: LoRA on a 4-bit quantised base.
    Qlora,
    /// Online serving: requests per second over a duration, with latency targets.
    Inference,
    /// Offline generation over a fixed set of requests, at the throughput-optimal batch.
    BatchInference,
    /// A job measured elsewhere: GPU-hours on a reference GPU, scaled by relative throughput.
    Custom,
}

impl WorkloadKind {
    /// Whether the kind trains (has tokens to process and a backward pass).
    pub fn is_training(&self) -> bool {
        matches!(self, WorkloadKind::Pretrain | WorkloadKind::Finetune | WorkloadKind::Lora | WorkloadKind::Qlora)
    }

    /// Whether the kind serves or generates.
    pub fn is_inference(&self) -> bool {
        matches!(self, WorkloadKind::Inference | WorkloadKind::BatchInference)
    }

    /// The name used in task files.
    pub fn as_str(&self) -> &'static str {
        match self {
            WorkloadKind::Pretrain => "pretrain",
            WorkloadKind::Finetune => "finetune",
            WorkloadKind::Lora => "lora",
            WorkloadKind::Qlora => "qlora",
            WorkloadKind::Inference => "inference",
            WorkloadKind::BatchInference => "batch-inference",
            WorkloadKind::Custom => "custom",
        }
    }
}

impl fmt::Display for WorkloadKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for WorkloadKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(match s.trim().to_ascii_lowercase().replace('_', "-").as_str() {
            "pretrain" | "pretraining" | "train" => WorkloadKind::Pretrain,
            "finetune" | "fine-tune" | "full-finetune" | "sft" => WorkloadKind::Finetune,
            "lora" => WorkloadKind::Lora,
            "qlora" => WorkloadKind::Qlora,
            "inference" | "serve" | "serving" => WorkloadKind::Inference,
            "batch-inference" | "batch" | "offline-inference" => WorkloadKind::BatchInference,
            "custom" => WorkloadKind::Custom,
            _ => {
                return Err(format!(
                    "unknown workload kind `{s}`: expected pretrain, finetune, lora, qlora, inference, batch-inference or custom"
                ));
            }
        })
    }
}

/// The architecture numbers the estimator needs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Model {
    /// Name, for display.
    pub name: String,
    /// All parameters (memory).
    pub total_params: f64,
    /// Parameters per token (compute).
    pub active_params: f64,
    /// Layers.
    pub layers: u32,
    /// Hidden size.
    pub hidden: u32,
    /// MLP intermediate size.
    pub ffn: u32,
    /// Attention heads.
    pub heads: u32,
    /// KV heads.
    pub kv_heads: u32,
    /// Head dimension.
    pub head_dim: u32,
    /// Vocabulary.
    pub vocab: u32,
    /// For MLA models: values cached per token per layer (latent + rope); replaces 2·kv_heads·head_dim.
    pub kv_latent: Option<u32>,
}

impl Model {
    /// From a catalog preset.
    pub fn from_preset(p: &ModelPreset) -> Self {
        let kv_latent = match (p.mla_kv_lora_rank, p.mla_rope_dim) {
            (Some(r), rope) => Some(r + rope.unwrap_or(0)),
            _ => None,
        };
        Model {
            name: p.name.clone(),
            total_params: p.total_params,
            active_params: p.active_params,
            layers: p.layers,
            hidden: p.hidden,
            ffn: p.ffn.unwrap_or(p.hidden * 4),
            heads: p.heads,
            kv_heads: p.kv_heads,
            head_dim: p.head_dim,
            vocab: p.vocab,
            kv_latent,
        }
    }

    /// A dense decoder with `params` parameters and a typical shape, for users who know only
    /// the size: hidden = 128·layers and params ≈ 12·layers·hidden² (GPT-3 family proportions),
    /// hidden rounded to a multiple of 128.
    pub fn from_params(params: f64, active_params: Option<f64>) -> Self {
        let layers = ((params / (12.0 * 128.0 * 128.0)).cbrt()).round().max(2.0) as u32;
        let hidden = (((params / (12.0 * layers as f64)).sqrt() / 128.0).round().max(1.0) as u32) * 128;
        let heads = (hidden / 128).max(1);
        Model {
            name: format!("{:.1}B-param model", params / 1e9),
            total_params: params,
            active_params: active_params.unwrap_or(params),
            layers,
            hidden,
            ffn: hidden * 4,
            heads,
            kv_heads: heads,
            head_dim: 128,
            vocab: 32_000,
            kv_latent: None,
        }
    }

    /// Bytes of KV cache per token for all layers at `bytes_per_value`.
    pub fn kv_bytes_per_token(&self, bytes_per_value: f64) -> f64 {
        let per_layer = match self.kv_latent {
            Some(latent) => latent as f64,
            None => 2.0 * self.kv_heads as f64 * self.head_dim as f64,
        };
        per_layer * self.layers as f64 * bytes_per_value
    }

    /// Parameters of LoRA adapters of rank `r` on every attention and MLP projection
    /// (q, k, v, o, gate, up, down): r·(d_in + d_out) each.
    pub fn lora_params(&self, rank: u32) -> f64 {
        let h = self.hidden as f64;
        let kv = (self.kv_heads * self.head_dim) as f64;
        let f = self.ffn as f64;
        let per_layer = (h + h) + (h + kv) + (h + kv) + (h + h) + 2.0 * (h + f) + (f + h);
        rank as f64 * per_layer * self.layers as f64
    }
}

/// Online serving requirements.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Serving {
    /// Requests per second to sustain.
    pub requests_per_second: f64,
    /// Longest acceptable time to first token, ms.
    pub ttft_ms: Option<f64>,
    /// Longest acceptable time per output token, ms.
    pub tpot_ms: Option<f64>,
    /// How long the service runs, hours.
    pub duration_hours: f64,
}

/// A job measured on another GPU.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CustomWork {
    /// GPU-hours measured on the reference GPU.
    pub gpu_hours: f64,
    /// The reference GPU's dense peak at the workload's precision, TFLOP/s.
    pub reference_tflops: f64,
    /// The reference GPU's memory bandwidth, TB/s (for `scale_by: bandwidth`).
    pub reference_bw_tb_s: f64,
    /// Scale by memory bandwidth instead of compute.
    pub bandwidth_bound: bool,
    /// Memory the job needs per GPU, GiB (optional).
    pub memory_gib: Option<f64>,
}

/// A workload, validated: every number is finite and in range.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Workload {
    /// What it does.
    pub kind: WorkloadKind,
    /// The model (absent only for `custom`).
    pub model: Option<Model>,
    /// Numeric precision of weights and compute.
    pub precision: Precision,
    /// Tokens processed (training).
    pub tokens: Option<f64>,
    /// Sequence length (training) or context length.
    pub seq_len: u32,
    /// Sequences per GPU per step (training micro-batch) or concurrent sequences (inference).
    pub batch: Option<u32>,
    /// LoRA rank.
    pub lora_rank: u32,
    /// Prompt tokens per request (inference).
    pub input_tokens: u32,
    /// Generated tokens per request (inference).
    pub output_tokens: u32,
    /// Requests to process (batch inference).
    pub requests: Option<f64>,
    /// Online serving requirements.
    pub serving: Option<Serving>,
    /// Measured work (custom).
    pub custom: Option<CustomWork>,
}

/// A workload that cannot be estimated.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct WorkloadError {
    /// The offending field, as named in task files.
    pub field: String,
    /// What was expected.
    pub message: String,
}

impl Workload {
    /// Checks ranges. Every problem a user can cause is reported here, so the estimator itself
    /// never sees a NaN, a zero divisor or an absurd number.
    pub fn validate(&self) -> Result<(), WorkloadError> {
        let err = |field: &str, message: String| Err(WorkloadError { field: field.into(), message });
        let positive = |field: &str, v: f64, max: f64| -> Result<(), WorkloadError> {
            if !v.is_finite() || v <= 0.0 || v > max {
                return Err(WorkloadError {
                    field: field.into(),
                    message: format!("`{v}` must be a number > 0 and at most {max:e}"),
                });
            }
            Ok(())
        };
        if let Some(m) = &self.model {
            positive("model.params", m.total_params, 1e14)?;
            positive("model.active_params", m.active_params, m.total_params * 1.000001)?;
            for (field, v) in [
                ("model.layers", m.layers),
                ("model.hidden", m.hidden),
                ("model.heads", m.heads),
                ("model.kv_heads", m.kv_heads),
            ] {
                if v == 0 || v > 1_000_000 {
                    return err(field, format!("`{v}` must be between 1 and 1000000"));
                }
            }
        } else if self.kind != WorkloadKind::Custom {
            return err(
                "workload.model",
                format!("a `{}` workload needs a model (a preset name or `params`)", self.kind),
            );
        }
        if self.seq_len == 0 || self.seq_len > 10_000_000 {
            return err("workload.seq_len", format!("`{}` must be between 1 and 10000000", self.seq_len));
        }
        if self.kind.is_training() {
            match self.tokens {
                Some(t) => positive("workload.tokens", t, 1e16)?,
                None => {
                    return err(
                        "workload.tokens",
                        format!("a `{}` workload needs `tokens` (tokens processed)", self.kind),
                    );
                }
            }
        }
        if self.kind.is_inference() {
            if self.output_tokens == 0 {
                return err("workload.output_tokens", "must be at least 1".into());
            }
            if self.input_tokens as u64 + self.output_tokens as u64 > 10_000_000 {
                return err("workload.input_tokens", "input + output tokens must be at most 10000000".into());
            }
        }
        if self.kind == WorkloadKind::BatchInference
            && let Some(r) = self.requests
        {
            positive("workload.requests", r, 1e13)?;
        }
        if self.kind == WorkloadKind::Inference {
            match &self.serving {
                Some(s) => {
                    positive("workload.requests_per_second", s.requests_per_second, 1e7)?;
                    positive("workload.duration", s.duration_hours, 24.0 * 366.0 * 10.0)?;
                    if let Some(t) = s.ttft_ms {
                        positive("workload.ttft_ms", t, 1e7)?;
                    }
                    if let Some(t) = s.tpot_ms {
                        positive("workload.tpot_ms", t, 1e7)?;
                    }
                }
                None => {
                    // Without a request rate, `inference` estimates one replica's latency and throughput.
                }
            }
        }
        if self.kind == WorkloadKind::Custom {
            match &self.custom {
                Some(c) => positive("workload.gpu_hours", c.gpu_hours, 1e9)?,
                None => {
                    return err(
                        "workload.gpu_hours",
                        "a `custom` workload needs `gpu_hours` and `reference_gpu`".into(),
                    );
                }
            }
        }
        if let Some(b) = self.batch
            && (b == 0 || b > 1_000_000)
        {
            return err("workload.batch", format!("`{b}` must be between 1 and 1000000"));
        }
        if self.lora_rank == 0 || self.lora_rank > 65_536 {
            return err("workload.lora_rank", format!("`{}` must be between 1 and 65536", self.lora_rank));
        }
        Ok(())
    }
}
