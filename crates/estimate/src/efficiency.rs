use std::collections::HashMap;

use gpubroker_catalog::Precision;
use serde::Serialize;

const BUILTIN: &str = include_str!("../data/efficiency.csv");

/// Achieved fractions of peak for one GPU architecture and precision.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Efficiency {
    /// Model-FLOPs utilisation in training (achieved model FLOP/s ÷ dense peak at the precision).
    pub mfu: f64,
    /// Achieved fraction of peak memory bandwidth during decode.
    pub eta_bw: f64,
    /// Achieved fraction of the dense peak during prefill.
    pub eta_prefill: f64,
}

/// Efficiency factors per (architecture, precision), with `*` fallbacks.
#[derive(Debug, Clone)]
pub struct EfficiencyTable {
    rows: HashMap<(String, String), Efficiency>,
}

impl EfficiencyTable {
    /// The calibrated built-in table.
    pub fn builtin() -> Self {
        // The file is part of the crate and covered by a test, so a parse failure is a bug.
        Self::parse(BUILTIN).unwrap_or_else(|_| EfficiencyTable { rows: HashMap::new() })
    }

    /// Parses `architecture,precision,mfu,eta_bw,eta_prefill[,source]`.
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut rows = HashMap::new();
        for (i, line) in text.lines().enumerate().skip(1) {
            if line.trim().is_empty() {
                continue;
            }
            let cells: Vec<&str> = line.splitn(6, ',').collect();
            let num = |j: usize| -> Result<f64, String> {
                let v: f64 = cells
                    .get(j)
                    .ok_or_else(|| format!("efficiency.csv:{}: missing column {j}", i + 1))?
                    .trim()
                    .parse()
                    .map_err(|_| format!("efficiency.csv:{}: column {j} is not a number", i + 1))?;
                if !(v > 0.0 && v <= 1.0) {
                    return Err(format!("efficiency.csv:{}: {v} must be in (0, 1]", i + 1));
                }
                Ok(v)
            };
            let key = (cells[0].trim().to_string(), cells.get(1).unwrap_or(&"*").trim().to_string());
            rows.insert(key, Efficiency { mfu: num(2)?, eta_bw: num(3)?, eta_prefill: num(4)? });
        }
        if !rows.contains_key(&("*".to_string(), "*".to_string())) {
            return Err("efficiency.csv: a `*,*` default row is required".into());
        }
        Ok(EfficiencyTable { rows })
    }

    /// Factors for `architecture` at `precision`. Weight-only int8/int4 compute in 16 bits, so
    /// they use the bf16 row; a missing architecture falls back to `*`.
    pub fn get(&self, architecture: &str, precision: Precision) -> Efficiency {
        let compute = match precision {
            Precision::Int8 | Precision::Int4 | Precision::Fp32 => Precision::Bf16,
            p => p,
        };
        let arch = architecture.to_ascii_lowercase();
        let tries = [
            (arch.clone(), compute.as_str().to_string()),
            (arch.clone(), if compute == Precision::Fp16 { "bf16" } else { "fp16" }.to_string()),
            (arch, "bf16".to_string()),
            ("*".to_string(), "*".to_string()),
        ];
        for key in tries {
            if let Some(e) = self.rows.get(&key) {
                return *e;
            }
        }
        Efficiency { mfu: 0.35, eta_bw: 0.7, eta_prefill: 0.45 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_table_parses_with_default() {
        let t = EfficiencyTable::parse(BUILTIN).expect("built-in efficiency table must parse");
        assert!(t.get("hopper", Precision::Bf16).mfu > 0.3);
        assert_eq!(t.get("nonexistent", Precision::Bf16), t.get("*", Precision::Bf16));
        assert_eq!(t.get("volta", Precision::Bf16), t.get("volta", Precision::Fp16));
    }
}
