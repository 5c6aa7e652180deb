//! Task files: SkyPilot task YAML plus gpubroker's `workload:` and `data:` blocks.
//!
//! Parsing has two stages (ripgrep's low/high args): serde reads the YAML into the raw structs
//! below, rejecting unknown keys with their line; [`TaskFile::validate`] then resolves names
//! against the catalog and checks every number, returning a [`Task`] that the planner uses
//! without checking again. Every error names the file, the line and the field.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use gpubroker_catalog::{Catalog, Precision};
use gpubroker_core::units::{parse_duration_s, parse_size_gb};
use gpubroker_core::{Money, PricingModel};
use gpubroker_estimate::{CustomWork, Model, Serving, Workload, WorkloadKind};
use jiff::Timestamp;
use rust_decimal::Decimal;
use serde::Deserialize;
use serde_yaml_ng::Value;

use crate::yaml_location::locate;

/// A task file that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct TaskError {
    /// The file.
    pub file: String,
    /// 1-based line, when known.
    pub line: Option<usize>,
    /// The field (`workload.tokens`).
    pub field: String,
    /// What is wrong and what was expected.
    pub message: String,
}

impl fmt::Display for TaskError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}:{}: ", self.file, line)?,
            None => write!(f, "{}: ", self.file)?,
        }
        if self.field.is_empty() {
            write!(f, "{}", self.message)
        } else {
            write!(f, "`{}`: {}", self.field, self.message)
        }
    }
}

/// A number written as a YAML number or as text (`2.0e9`, `2B`, `500M`).
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum Count {
    /// A YAML number.
    Number(f64),
    /// Text with an optional K/M/B/T suffix.
    Text(String),
}

impl Count {
    fn value(&self) -> Result<f64, String> {
        match self {
            Count::Number(n) => Ok(*n),
            Count::Text(t) => parse_count(t),
        }
    }
}

/// Parses `2e9`, `2.0e9`, `2B`, `1.5T`, `500M`, `8k`, `1_000_000`.
pub fn parse_count(text: &str) -> Result<f64, String> {
    let t = text.trim().replace('_', "");
    let (num, mult) = match t.chars().last().map(|c| c.to_ascii_uppercase()) {
        Some('K') => (&t[..t.len() - 1], 1e3),
        Some('M') => (&t[..t.len() - 1], 1e6),
        Some('B') | Some('G') => (&t[..t.len() - 1], 1e9),
        Some('T') => (&t[..t.len() - 1], 1e12),
        _ => (t.as_str(), 1.0),
    };
    num.trim()
        .parse::<f64>()
        .map(|v| v * mult)
        .map_err(|_| format!("`{text}` is not a number (examples: 2.0e9, 2B, 500M)"))
}

/// A size written as a number of GB or as text (`200GB`).
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum Size {
    /// GB.
    Number(f64),
    /// Text with a unit.
    Text(String),
}

impl Size {
    fn gb(&self) -> Result<Decimal, String> {
        match self {
            Size::Number(n) if n.is_finite() && *n >= 0.0 => {
                Decimal::from_str(&format!("{n}")).map_err(|_| format!("`{n}` is not a size"))
            }
            Size::Number(n) => Err(format!("`{n}` must be a size >= 0, such as 200GB")),
            Size::Text(t) => parse_size_gb(t).map_err(|e| e.to_string()),
        }
    }
}

/// SkyPilot's `accelerators`: `A100:8`, `{A100: 8}`, `[A100:8, H100:8]` or `{A100:8, H100:8}`.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub(crate) enum Accelerators {
    /// `A100:8` or `A100`.
    One(String),
    /// Several alternatives.
    List(Vec<String>),
    /// `{A100: 8}`, values may be null.
    Map(BTreeMap<String, Option<f64>>),
}

/// The `resources:` block (SkyPilot keys).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)] // SkyPilot keys accepted for compatibility but not used yet
pub(crate) struct RawResources {
    accelerators: Option<Accelerators>,
    use_spot: Option<bool>,
    cloud: Option<String>,
    infra: Option<String>,
    region: Option<String>,
    zone: Option<String>,
    instance_type: Option<String>,
    disk_size: Option<Size>,
    any_of: Option<Vec<RawResources>>,
    ordered: Option<Vec<RawResources>>,
    // Accepted for compatibility with SkyPilot task files; not used by the planner yet.
    cpus: Option<Value>,
    memory: Option<Value>,
    disk_tier: Option<Value>,
    network_tier: Option<Value>,
    ports: Option<Value>,
    image_id: Option<Value>,
    labels: Option<Value>,
    job_recovery: Option<Value>,
    autostop: Option<Value>,
    accelerator_args: Option<Value>,
}

/// The `workload:` block as written (also built from `gpubroker estimate` flags).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkloadSpec {
    /// pretrain, finetune, lora, qlora, inference, batch-inference or custom.
    pub kind: Option<String>,
    /// A model preset name (`llama-3-8b`).
    pub model: Option<String>,
    /// Parameters, when there is no preset (`8e9`, `8B`).
    pub params: Option<Count>,
    /// Parameters active per token (MoE).
    pub active_params: Option<Count>,
    /// Transformer layers (overrides the preset).
    pub layers: Option<u32>,
    /// Hidden size.
    pub hidden: Option<u32>,
    /// MLP intermediate size.
    pub ffn: Option<u32>,
    /// Attention heads.
    pub heads: Option<u32>,
    /// KV heads (GQA).
    pub kv_heads: Option<u32>,
    /// Head dimension.
    pub head_dim: Option<u32>,
    /// Vocabulary size.
    pub vocab: Option<u32>,
    /// Tokens processed (training kinds).
    pub tokens: Option<Count>,
    /// Sequence length.
    pub seq_len: Option<u32>,
    /// Micro-batch per GPU (training) or concurrent sequences (inference).
    pub batch: Option<u32>,
    /// fp32, bf16, fp16, fp8, int8, int4 or fp4.
    pub precision: Option<String>,
    /// LoRA rank (default 16).
    pub lora_rank: Option<u32>,
    /// Prompt tokens per request.
    pub input_tokens: Option<u32>,
    /// Generated tokens per request.
    pub output_tokens: Option<u32>,
    /// Requests to process (batch inference).
    pub requests: Option<Count>,
    /// Requests per second to sustain (serving).
    pub requests_per_second: Option<f64>,
    /// Time-to-first-token target, ms.
    pub ttft_ms: Option<f64>,
    /// Time-per-output-token target, ms.
    pub tpot_ms: Option<f64>,
    /// How long a service runs (`720h`).
    pub duration: Option<String>,
    /// Measured GPU-hours on `reference_gpu` (custom).
    pub gpu_hours: Option<f64>,
    /// The GPU `gpu_hours` were measured on.
    pub reference_gpu: Option<String>,
    /// `compute` (default) or `bandwidth`: how to scale `gpu_hours` to other GPUs.
    pub scale_by: Option<String>,
    /// Memory per GPU a custom job needs.
    pub memory: Option<Size>,
    /// A duration (`48h`) or an RFC 3339 time.
    pub deadline: Option<String>,
    /// Spending limit (`800 USD`, `5000 CNY`).
    pub budget: Option<Count>,
    /// Currency of a numeric `budget` (default USD).
    pub budget_currency: Option<String>,
    /// Time lost per spot interruption (`15m`).
    pub restart_overhead: Option<String>,
    /// Pricing models allowed (`[spot, on_demand]`).
    pub pricing: Option<Vec<String>>,
}

/// `data.dataset`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawDataset {
    size: Size,
    provider: Option<String>,
    region: Option<String>,
}

/// The `data:` block.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawData {
    dataset: Option<RawDataset>,
    checkpoint_size: Option<Size>,
    output_egress: Option<Size>,
}

/// A task file as written.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
#[allow(dead_code)] // SkyPilot keys accepted for compatibility but not used yet
pub struct TaskFile {
    name: Option<String>,
    resources: Option<RawResources>,
    num_nodes: Option<u32>,
    envs: Option<BTreeMap<String, Value>>,
    secrets: Option<BTreeMap<String, Value>>,
    setup: Option<String>,
    run: Option<String>,
    file_mounts: Option<Value>,
    workdir: Option<String>,
    /// The `workload:` block.
    pub workload: Option<WorkloadSpec>,
    data: Option<RawData>,
    // Accepted SkyPilot keys that planning does not use.
    config: Option<Value>,
    service: Option<Value>,
    event_callback: Option<Value>,
    volumes: Option<Value>,
}

/// One acceptable kind of placement (SkyPilot's resources, or one `any_of` entry).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResourceChoice {
    /// Canonical GPU names (any of); empty = any GPU.
    pub gpus: Vec<(String, Option<u32>)>,
    /// Provider id.
    pub provider: Option<String>,
    /// Region.
    pub region: Option<String>,
    /// Zone.
    pub zone: Option<String>,
    /// Instance type.
    pub instance_type: Option<String>,
    /// `use_spot`: `Some(true)` = spot only, `Some(false)` = no spot, `None` = any pricing.
    pub use_spot: Option<bool>,
}

/// Where the data lives and how much moves.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DataSpec {
    /// Dataset size, GB.
    pub dataset_gb: Decimal,
    /// Provider the dataset is stored with.
    pub dataset_provider: Option<String>,
    /// Region it is stored in.
    pub dataset_region: Option<String>,
    /// Checkpoint size, GB.
    pub checkpoint_gb: Decimal,
    /// Outputs sent out of the compute region, GB.
    pub output_egress_gb: Decimal,
}

/// A validated task.
#[derive(Debug, Clone, PartialEq)]
pub struct Task {
    /// Task name.
    pub name: String,
    /// The file it came from.
    pub file: String,
    /// Acceptable placements (at least one).
    pub choices: Vec<ResourceChoice>,
    /// Nodes, when the task fixes them.
    pub num_nodes: Option<u32>,
    /// Disk per node, GB, when the task fixes it.
    pub disk_size_gb: Option<Decimal>,
    /// The workload, when the task describes one.
    pub workload: Option<Workload>,
    /// Deadline, seconds from now.
    pub deadline_s: Option<u64>,
    /// Spending limit.
    pub budget: Option<Money>,
    /// Data movement.
    pub data: DataSpec,
    /// Work lost and relaunch time per spot interruption, hours.
    pub restart_overhead_h: f64,
    /// Pricing models the task allows (empty = the planner's default).
    pub pricing: Vec<PricingModel>,
    /// `setup` commands.
    pub setup: Option<String>,
    /// `run` commands.
    pub run: Option<String>,
    /// Environment variables.
    pub envs: BTreeMap<String, String>,
}

/// Default time lost per spot interruption: about 5 minutes to relaunch and reload plus, with
/// checkpoints every 20 minutes, 10 minutes of lost progress on average.
pub const DEFAULT_RESTART_OVERHEAD_H: f64 = 0.25;

impl TaskFile {
    /// Parses YAML text. `file` names the source in errors.
    pub fn parse(file: &str, text: &str) -> Result<TaskFile, TaskError> {
        if text.trim().is_empty() {
            return Err(TaskError {
                file: file.into(),
                line: None,
                field: String::new(),
                message: "the task file is empty".into(),
            });
        }
        serde_yaml_ng::from_str::<TaskFile>(text).map_err(|e| {
            let line = e.location().map(|l| l.line());
            let raw = e.to_string();
            // serde_yaml_ng appends " at line L column C"; the line is reported in front instead.
            let message = match raw.find(" at line ") {
                Some(i) => raw[..i].to_string(),
                None => raw,
            };
            let (field, message) = match message.split_once(": ") {
                Some((path, rest)) if !path.contains(' ') => (path.to_string(), rest.to_string()),
                _ => (String::new(), message),
            };
            TaskError { file: file.into(), line, field, message }
        })
    }

    /// Resolves and checks everything. `now` anchors RFC 3339 deadlines.
    pub fn validate(self, file: &str, text: &str, catalog: &Catalog, now: Timestamp) -> Result<Task, TaskError> {
        let err = |path: &[&str], message: String| TaskError {
            file: file.into(),
            line: locate(text, path),
            field: path.join("."),
            message,
        };
        let resources = self.resources.clone().unwrap_or_default();
        let mut choices = Vec::new();
        let alternatives = resources.any_of.clone().or(resources.ordered.clone()).unwrap_or_default();
        let base = resource_choice(&resources, catalog).map_err(|(f, m)| err(&["resources", f], m))?;
        if alternatives.is_empty() {
            choices.push(base.clone());
        }
        for alt in &alternatives {
            let mut c = resource_choice(alt, catalog).map_err(|(f, m)| err(&["resources", "any_of", f], m))?;
            // Unset keys inherit from the enclosing resources block (SkyPilot semantics).
            if c.gpus.is_empty() {
                c.gpus = base.gpus.clone();
            }
            c.provider = c.provider.or(base.provider.clone());
            c.region = c.region.or(base.region.clone());
            c.zone = c.zone.or(base.zone.clone());
            c.instance_type = c.instance_type.or(base.instance_type.clone());
            c.use_spot = c.use_spot.or(base.use_spot);
            choices.push(c);
        }
        if let Some(n) = self.num_nodes
            && (n == 0 || n > 4096)
        {
            return Err(err(&["num_nodes"], format!("`{n}` must be between 1 and 4096")));
        }
        let disk_size_gb = match &resources.disk_size {
            Some(s) => Some(s.gb().map_err(|m| err(&["resources", "disk_size"], m))?),
            None => None,
        };
        let raw = self.workload.clone();
        let (workload, deadline_s, budget, restart_overhead_h, pricing) = match raw {
            None => (None, None, None, DEFAULT_RESTART_OVERHEAD_H, Vec::new()),
            Some(w) => {
                let wl = workload(&w, catalog).map_err(|(f, m)| err(&["workload", f], m))?;
                let deadline_s = match &w.deadline {
                    None => None,
                    Some(d) => Some(deadline(d, now).map_err(|m| err(&["workload", "deadline"], m))?),
                };
                let budget = match &w.budget {
                    None => None,
                    Some(b) => {
                        Some(budget(b, w.budget_currency.as_deref()).map_err(|m| err(&["workload", "budget"], m))?)
                    }
                };
                let overhead = match &w.restart_overhead {
                    None => DEFAULT_RESTART_OVERHEAD_H,
                    Some(t) => {
                        parse_duration_s(t).map_err(|e| err(&["workload", "restart_overhead"], e.to_string()))? as f64
                            / 3600.0
                    }
                };
                let pricing = w
                    .pricing
                    .iter()
                    .flatten()
                    .map(|p| PricingModel::from_str(p))
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|m| err(&["workload", "pricing"], m))?;
                (Some(wl), deadline_s, budget, overhead, pricing)
            }
        };
        let data = match &self.data {
            None => DataSpec::default(),
            Some(d) => data_spec(d, catalog).map_err(|(f, m)| err(&["data", f], m))?,
        };
        let name = self.name.clone().unwrap_or_else(|| {
            std::path::Path::new(file).file_stem().and_then(|s| s.to_str()).unwrap_or("task").to_string()
        });
        let envs = self
            .envs
            .iter()
            .flatten()
            .map(|(k, v)| {
                let text = match v {
                    Value::String(s) => s.clone(),
                    Value::Null => String::new(),
                    other => serde_yaml_ng::to_string(other).unwrap_or_default().trim().to_string(),
                };
                (k.clone(), text)
            })
            .collect();
        Ok(Task {
            name,
            file: file.into(),
            choices,
            num_nodes: self.num_nodes,
            disk_size_gb,
            workload,
            deadline_s,
            budget,
            data,
            restart_overhead_h,
            pricing,
            setup: self.setup,
            run: self.run,
            envs,
        })
    }
}

type FieldError = (&'static str, String);

fn resource_choice(r: &RawResources, catalog: &Catalog) -> Result<ResourceChoice, FieldError> {
    let mut c = ResourceChoice { use_spot: r.use_spot, ..Default::default() };
    let names: Vec<(String, Option<f64>)> = match &r.accelerators {
        None => Vec::new(),
        Some(Accelerators::One(s)) => vec![split_accelerator(s)?],
        Some(Accelerators::List(v)) => v.iter().map(|s| split_accelerator(s)).collect::<Result<_, _>>()?,
        Some(Accelerators::Map(m)) => m.iter().map(|(k, v)| (k.clone(), *v)).collect(),
    };
    for (name, count) in names {
        let gpu = catalog.gpu(&name).ok_or_else(|| {
            let known: Vec<&str> = catalog.gpus().iter().map(|g| g.name.as_str()).collect();
            ("accelerators", format!("unknown GPU `{name}`; known GPUs: {}", known.join(", ")))
        })?;
        let count = match count {
            None => None,
            Some(n) if n >= 1.0 && n.fract() == 0.0 && n <= 64.0 => Some(n as u32),
            Some(n) => {
                return Err(("accelerators", format!("`{name}:{n}`: the count must be a whole number from 1 to 64")));
            }
        };
        c.gpus.push((gpu.name.clone(), count));
    }
    // `infra: aws/us-east-1/us-east-1a` (SkyPilot >= 0.10) sets cloud, region and zone at once.
    if let Some(infra) = &r.infra {
        let mut parts = infra.split('/');
        c.provider = parts.next().filter(|s| !s.is_empty() && *s != "*").map(str::to_ascii_lowercase);
        c.region = parts.next().filter(|s| !s.is_empty() && *s != "*").map(String::from);
        c.zone = parts.next().filter(|s| !s.is_empty()).map(String::from);
    }
    if let Some(cloud) = &r.cloud {
        c.provider = Some(cloud.to_ascii_lowercase());
    }
    if let Some(p) = &c.provider
        && !catalog.providers().contains(p.as_str())
    {
        let field = if r.cloud.is_some() { "cloud" } else { "infra" };
        let known: Vec<&str> = catalog.providers().into_iter().collect();
        return Err((field, format!("no offers from provider `{p}` in the catalog; known: {}", known.join(", "))));
    }
    c.region = r.region.clone().or(c.region);
    c.zone = r.zone.clone().or(c.zone);
    c.instance_type = r.instance_type.clone();
    Ok(c)
}

fn split_accelerator(s: &str) -> Result<(String, Option<f64>), FieldError> {
    match s.rsplit_once(':') {
        Some((name, count)) => {
            let n: f64 = count
                .trim()
                .parse()
                .map_err(|_| ("accelerators", format!("`{s}`: expected NAME or NAME:COUNT, such as `A100:8`")))?;
            Ok((name.trim().to_string(), Some(n)))
        }
        None => Ok((s.trim().to_string(), None)),
    }
}

impl WorkloadSpec {
    /// Resolves the model and checks every number. Errors name the field inside `workload:`.
    pub fn resolve(&self, catalog: &Catalog) -> Result<Workload, (&'static str, String)> {
        workload(self, catalog)
    }
}

fn workload(w: &WorkloadSpec, catalog: &Catalog) -> Result<Workload, FieldError> {
    let kind = match &w.kind {
        Some(k) => WorkloadKind::from_str(k).map_err(|m| ("kind", m))?,
        None if w.gpu_hours.is_some() => WorkloadKind::Custom,
        None if w.requests_per_second.is_some() => WorkloadKind::Inference,
        None => {
            return Err((
                "kind",
                "is required: pretrain, finetune, lora, qlora, inference, batch-inference or custom".into(),
            ));
        }
    };
    let precision = match &w.precision {
        Some(p) => Precision::from_str(p).map_err(|m| ("precision", m))?,
        None if kind == WorkloadKind::Qlora => Precision::Int4,
        None => Precision::Bf16,
    };
    let num = |field: &'static str, c: &Option<Count>| -> Result<Option<f64>, FieldError> {
        match c {
            None => Ok(None),
            Some(c) => {
                let v = c.value().map_err(|m| (field, m))?;
                if !v.is_finite() || v <= 0.0 {
                    return Err((field, format!("`{v}` must be a number > 0")));
                }
                Ok(Some(v))
            }
        }
    };
    let mut model = match (&w.model, num("params", &w.params)?) {
        (Some(name), _) => {
            let preset = catalog.model(name).ok_or_else(|| {
                let known: Vec<&str> = catalog.models().iter().map(|m| m.name.as_str()).collect();
                (
                    "model",
                    format!(
                        "unknown model `{name}`; give `params` (and optionally layers/hidden/heads) or a preset: {}",
                        known.join(", ")
                    ),
                )
            })?;
            Some(Model::from_preset(preset))
        }
        (None, Some(p)) => Some(Model::from_params(p, num("active_params", &w.active_params)?)),
        (None, None) => None,
    };
    if let Some(m) = &mut model {
        if let Some(p) = num("params", &w.params)? {
            m.total_params = p;
        }
        if let Some(a) = num("active_params", &w.active_params)? {
            m.active_params = a;
        }
        for (field, slot, v) in [
            ("layers", &mut m.layers, w.layers),
            ("hidden", &mut m.hidden, w.hidden),
            ("ffn", &mut m.ffn, w.ffn),
            ("heads", &mut m.heads, w.heads),
            ("kv_heads", &mut m.kv_heads, w.kv_heads),
            ("head_dim", &mut m.head_dim, w.head_dim),
            ("vocab", &mut m.vocab, w.vocab),
        ] {
            if let Some(v) = v {
                if v == 0 {
                    return Err((field, "must be at least 1".into()));
                }
                *slot = v;
            }
        }
        if w.heads.is_some() && w.kv_heads.is_none() {
            m.kv_heads = m.heads;
        }
        if w.head_dim.is_none() && (w.hidden.is_some() || w.heads.is_some()) {
            m.head_dim = (m.hidden / m.heads.max(1)).max(1);
        }
        if m.active_params > m.total_params {
            return Err((
                "active_params",
                format!("{:e} exceeds the total parameters {:e}", m.active_params, m.total_params),
            ));
        }
    }
    let serving = match (kind, w.requests_per_second) {
        (WorkloadKind::Inference, Some(rps)) => {
            let duration = w.duration.as_deref().ok_or((
                "duration",
                "serving needs a `duration` (how long the service runs), such as `720h`".to_string(),
            ))?;
            let duration_s = parse_duration_s(duration).map_err(|e| ("duration", e.to_string()))?;
            Some(Serving {
                requests_per_second: rps,
                ttft_ms: w.ttft_ms,
                tpot_ms: w.tpot_ms,
                duration_hours: duration_s as f64 / 3600.0,
            })
        }
        _ => None,
    };
    let custom = match (kind, w.gpu_hours) {
        (WorkloadKind::Custom, Some(gpu_hours)) => {
            let name = w.reference_gpu.as_deref().ok_or((
                "reference_gpu",
                "a custom workload needs the GPU its `gpu_hours` were measured on".to_string(),
            ))?;
            let gpu = catalog.gpu(name).ok_or(("reference_gpu", format!("unknown GPU `{name}`")))?;
            let bandwidth_bound = match w.scale_by.as_deref() {
                None | Some("compute") => false,
                Some("bandwidth") | Some("memory") => true,
                Some(other) => return Err(("scale_by", format!("`{other}`: expected compute or bandwidth"))),
            };
            let memory_gib = match &w.memory {
                Some(s) => Some(
                    s.gb().map_err(|m| ("memory", m))?.to_string().parse::<f64>().unwrap_or(0.0) * 1e9
                        / (1u64 << 30) as f64,
                ),
                None => None,
            };
            Some(CustomWork {
                gpu_hours,
                reference_tflops: gpu.peak_tflops(precision),
                reference_bw_tb_s: gpu.mem_bw_tb_s,
                bandwidth_bound,
                memory_gib,
            })
        }
        _ => None,
    };
    let wl = Workload {
        kind,
        model,
        precision,
        tokens: num("tokens", &w.tokens)?,
        seq_len: w.seq_len.unwrap_or(if kind.is_inference() { 4096 } else { 2048 }),
        batch: w.batch,
        lora_rank: w.lora_rank.unwrap_or(16),
        input_tokens: w.input_tokens.unwrap_or(1024),
        output_tokens: w.output_tokens.unwrap_or(256),
        requests: num("requests", &w.requests)?,
        serving,
        custom,
    };
    wl.validate().map_err(|e| {
        let field: &'static str = match e.field.trim_start_matches("workload.").trim_start_matches("model.") {
            "tokens" => "tokens",
            "seq_len" => "seq_len",
            "batch" => "batch",
            "lora_rank" => "lora_rank",
            "output_tokens" => "output_tokens",
            "input_tokens" => "input_tokens",
            "requests" => "requests",
            "requests_per_second" => "requests_per_second",
            "duration" => "duration",
            "gpu_hours" => "gpu_hours",
            "params" => "params",
            "active_params" => "active_params",
            "layers" => "layers",
            "hidden" => "hidden",
            "heads" => "heads",
            "kv_heads" => "kv_heads",
            "ttft_ms" => "ttft_ms",
            "tpot_ms" => "tpot_ms",
            _ => "model",
        };
        (field, e.message)
    })?;
    Ok(wl)
}

fn deadline(text: &str, now: Timestamp) -> Result<u64, String> {
    if let Ok(at) = text.trim().parse::<Timestamp>() {
        let secs = at.as_second() - now.as_second();
        if secs <= 0 {
            return Err(format!("`{text}` is in the past (now is {now})"));
        }
        return Ok(secs as u64);
    }
    let s = parse_duration_s(text).map_err(|e| format!("{e}, or an RFC 3339 time such as 2026-12-01T00:00:00Z"))?;
    if s < 60 {
        return Err(format!("`{text}` is shorter than a minute; no GPU job can be planned for it"));
    }
    Ok(s)
}

fn budget(b: &Count, currency: Option<&str>) -> Result<Money, String> {
    let money = match b {
        Count::Number(n) => {
            let amount = Decimal::from_str(&format!("{n}")).map_err(|_| format!("`{n}` is not an amount"))?;
            let currency = currency.unwrap_or("USD").parse().map_err(|e| format!("{e}"))?;
            Money::new(amount, currency)
        }
        Count::Text(t) => Money::from_str(t).map_err(|e| e.to_string())?,
    };
    if money.amount <= Decimal::ZERO {
        return Err(format!("`{money}` must be more than zero"));
    }
    Ok(money)
}

fn data_spec(d: &RawData, catalog: &Catalog) -> Result<DataSpec, FieldError> {
    let mut spec = DataSpec::default();
    if let Some(ds) = &d.dataset {
        spec.dataset_gb = ds.size.gb().map_err(|m| ("dataset", m))?;
        if let Some(p) = &ds.provider {
            let p = p.to_ascii_lowercase();
            if !catalog.providers().contains(p.as_str()) {
                return Err(("dataset", format!("unknown provider `{p}` for the dataset")));
            }
            spec.dataset_provider = Some(p);
        }
        spec.dataset_region = ds.region.clone();
    }
    if let Some(c) = &d.checkpoint_size {
        spec.checkpoint_gb = c.gb().map_err(|m| ("checkpoint_size", m))?;
    }
    if let Some(o) = &d.output_egress {
        spec.output_egress_gb = o.gb().map_err(|m| ("output_egress", m))?;
    }
    Ok(spec)
}
