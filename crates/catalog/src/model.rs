use serde::Serialize;

/// Architecture numbers of an open model, enough to estimate its memory and compute.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelPreset {
    /// Lowercase id (`llama-3-8b`).
    pub name: String,
    /// Other spellings, including Hugging Face ids.
    pub aliases: Vec<String>,
    /// Family (`llama-3`).
    pub family: String,
    /// All parameters (what memory holds).
    pub total_params: f64,
    /// Parameters used per token (what compute costs); equals `total_params` for dense models.
    pub active_params: f64,
    /// Transformer layers.
    pub layers: u32,
    /// Hidden size.
    pub hidden: u32,
    /// MLP intermediate size.
    pub ffn: Option<u32>,
    /// Attention heads.
    pub heads: u32,
    /// Key/value heads (GQA); equals `heads` for MHA.
    pub kv_heads: u32,
    /// Head dimension.
    pub head_dim: u32,
    /// Vocabulary size.
    pub vocab: u32,
    /// Maximum context length.
    pub context: Option<u32>,
    /// MoE experts (routed).
    pub moe_experts: Option<u32>,
    /// MoE experts active per token.
    pub moe_active_experts: Option<u32>,
    /// MLA latent rank (DeepSeek): the KV cache holds `kv_lora_rank + rope_dim` values per token per layer.
    pub mla_kv_lora_rank: Option<u32>,
    /// MLA rotary dimension.
    pub mla_rope_dim: Option<u32>,
    /// Where the numbers come from.
    pub source: String,
}
