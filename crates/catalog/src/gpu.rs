use std::fmt;
use std::str::FromStr;

use jiff::civil::Date;
use serde::{Deserialize, Serialize};

/// Numeric precision of weights and compute.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Precision {
    /// 32-bit float.
    Fp32,
    /// bfloat16 (mixed precision with fp32 master weights when training).
    Bf16,
    /// IEEE half precision.
    Fp16,
    /// 8-bit float (Transformer Engine style).
    Fp8,
    /// 8-bit integer weights.
    Int8,
    /// 4-bit integer or NF4 weights.
    Int4,
    /// 4-bit float (NVFP4, MXFP4).
    Fp4,
}

impl Precision {
    /// Bytes per stored parameter.
    pub fn bytes(&self) -> f64 {
        match self {
            Precision::Fp32 => 4.0,
            Precision::Bf16 | Precision::Fp16 => 2.0,
            Precision::Fp8 | Precision::Int8 => 1.0,
            Precision::Int4 | Precision::Fp4 => 0.5,
        }
    }

    /// The lowercase name.
    pub fn as_str(&self) -> &'static str {
        match self {
            Precision::Fp32 => "fp32",
            Precision::Bf16 => "bf16",
            Precision::Fp16 => "fp16",
            Precision::Fp8 => "fp8",
            Precision::Int8 => "int8",
            Precision::Int4 => "int4",
            Precision::Fp4 => "fp4",
        }
    }
}

impl fmt::Display for Precision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Precision {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(match s.trim().to_ascii_lowercase().as_str() {
            "fp32" | "float32" | "f32" => Precision::Fp32,
            "bf16" | "bfloat16" => Precision::Bf16,
            "fp16" | "float16" | "f16" | "half" => Precision::Fp16,
            "fp8" | "float8" | "e4m3" => Precision::Fp8,
            "int8" | "i8" => Precision::Int8,
            "int4" | "i4" | "nf4" => Precision::Int4,
            "fp4" | "nvfp4" | "mxfp4" => Precision::Fp4,
            _ => return Err(format!("unknown precision `{s}`: expected fp32, bf16, fp16, fp8, int8, int4 or fp4")),
        })
    }
}

/// What one accelerator can do (dense peaks; no 2:4 sparsity).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GpuSpec {
    /// Canonical name (`H100`, `A100-80GB`).
    pub name: String,
    /// Other spellings.
    pub aliases: Vec<String>,
    /// `nvidia`, `amd`, `intel`.
    pub vendor: String,
    /// `hopper`, `ampere`, ... (selects efficiency factors).
    pub architecture: String,
    /// Device memory, decimal GB.
    pub memory_gb: f64,
    /// Peak memory bandwidth, TB/s.
    pub mem_bw_tb_s: f64,
    /// Dense BF16 tensor peak, TFLOP/s.
    pub bf16_tflops: Option<f64>,
    /// Dense FP16 tensor peak, TFLOP/s.
    pub fp16_tflops: Option<f64>,
    /// Dense FP8 tensor peak, TFLOP/s.
    pub fp8_tflops: Option<f64>,
    /// Dense INT8 tensor peak, TOP/s.
    pub int8_tops: Option<f64>,
    /// Dense FP4 tensor peak, TFLOP/s.
    pub fp4_tflops: Option<f64>,
    /// Vector FP32 peak, TFLOP/s.
    pub fp32_tflops: Option<f64>,
    /// Board power, W.
    pub tdp_w: Option<f64>,
    /// GPU-to-GPU link inside a node.
    pub scaleup_link: String,
    /// Bidirectional GB/s per GPU over that link; 0 = PCIe only.
    pub scaleup_bw_gb_s: f64,
    /// Host link bidirectional GB/s.
    pub host_bw_gb_s: Option<f64>,
    /// Where the figures come from.
    pub source: String,
    /// When.
    pub as_of: Date,
}

impl GpuSpec {
    /// Device memory in GiB (2^30 bytes), the unit memory estimates use.
    pub fn memory_gib(&self) -> f64 {
        self.memory_gb * 1e9 / (1u64 << 30) as f64
    }

    /// The dense tensor peak for computing at `precision`, falling back to the nearest wider
    /// format the GPU has (a V100 computes bf16 work in fp16; int4 weights compute in 16 bits).
    pub fn peak_tflops(&self, precision: Precision) -> f64 {
        let sixteen = self.bf16_tflops.or(self.fp16_tflops).or(self.fp32_tflops).unwrap_or(0.0);
        match precision {
            Precision::Fp32 => self.fp32_tflops.unwrap_or(sixteen / 8.0),
            Precision::Bf16 => sixteen,
            Precision::Fp16 => self.fp16_tflops.unwrap_or(sixteen),
            Precision::Fp8 => self.fp8_tflops.unwrap_or(sixteen),
            Precision::Fp4 => self.fp4_tflops.or(self.fp8_tflops).unwrap_or(sixteen),
            // Weight-only int8/int4 dequantize to 16-bit for the matmul.
            Precision::Int8 | Precision::Int4 => sixteen,
        }
    }

    /// Whether the GPU has native tensor support for `precision` (used to explain assumptions).
    pub fn supports(&self, precision: Precision) -> bool {
        match precision {
            Precision::Fp32 => true,
            Precision::Bf16 => self.bf16_tflops.is_some(),
            Precision::Fp16 => self.fp16_tflops.is_some(),
            Precision::Fp8 => self.fp8_tflops.is_some(),
            Precision::Fp4 => self.fp4_tflops.is_some(),
            Precision::Int8 | Precision::Int4 => true,
        }
    }

    /// Whether GPUs in one node talk over NVLink/Infinity Fabric rather than PCIe.
    pub fn has_fast_scaleup(&self) -> bool {
        self.scaleup_bw_gb_s >= 300.0
    }
}

/// The key used to match names: lowercase, without `-`, `_`, spaces or dots.
pub fn normalize_name(name: &str) -> String {
    name.chars().filter(|c| !matches!(c, '-' | '_' | ' ' | '.')).flat_map(char::to_lowercase).collect()
}
