use std::io::Write;

use anyhow::{Context as _, Result, anyhow, bail};
use gpubroker_estimate::{EfficiencyTable, Estimate, Hardware, estimate as run_estimate};
use gpubroker_plan::{Count, TaskFile, WorkloadSpec};
use serde::Serialize;

use crate::ExitStatus;
use crate::args::{EstimateArgs, ModeArg};
use crate::context::Context;
use crate::output::write_json;

#[derive(Serialize)]
struct EstimateOutput<'a> {
    gpu: &'a str,
    count: u32,
    gpus_per_node: u32,
    model: Option<&'a str>,
    mode: &'a str,
    precision: &'a str,
    #[serde(flatten)]
    estimate: &'a Estimate,
}

pub(crate) fn estimate(ctx: &Context, args: &EstimateArgs, out: &mut impl Write) -> Result<ExitStatus> {
    let (mut spec, source) = match &args.task {
        Some(path) => {
            let shown = path.display().to_string();
            let text = std::fs::read_to_string(path).with_context(|| format!("{shown}: cannot read the task file"))?;
            let file = TaskFile::parse(&shown, &text)?;
            let spec = file.workload.clone().ok_or_else(|| anyhow!("{shown}: has no `workload:` block to estimate"))?;
            (spec, shown)
        }
        None => (WorkloadSpec::default(), "command line".to_string()),
    };
    apply_flags(&mut spec, args);
    if spec.kind.is_none() {
        bail!("`--mode` is required: pretrain, finetune, lora, qlora, inference or batch-inference");
    }
    if spec.model.is_none() && spec.params.is_none() {
        bail!("give `--model NAME` or `--params N`");
    }
    let workload = spec.resolve(&ctx.catalog).map_err(|(field, message)| anyhow!("{source}: `{field}`: {message}"))?;
    let gpu = ctx.catalog.gpu(&args.gpu).ok_or_else(|| {
        let known: Vec<&str> = ctx.catalog.gpus().iter().map(|g| g.name.as_str()).collect();
        anyhow!("unknown GPU `{}`; known GPUs: {}", args.gpu, known.join(", "))
    })?;
    if args.count == 0 || args.count > 100_000 {
        bail!("`--count {}` must be between 1 and 100000", args.count);
    }
    if !(0.0..=1.0).contains(&args.headroom) {
        bail!("`--headroom {}` must be a fraction between 0 and 1", args.headroom);
    }
    let gpus_per_node = args.gpus_per_node.unwrap_or(args.count.min(8)).max(1);
    let hw =
        Hardware { gpu, gpus: args.count, gpus_per_node, rdma: args.count > gpus_per_node && gpu.has_fast_scaleup() };
    let est = run_estimate(&workload, &hw, &EfficiencyTable::builtin(), args.headroom);
    let output = EstimateOutput {
        gpu: &gpu.name,
        count: args.count,
        gpus_per_node,
        model: workload.model.as_ref().map(|m| m.name.as_str()),
        mode: workload.kind.as_str(),
        precision: workload.precision.as_str(),
        estimate: &est,
    };
    if args.json {
        write_json(out, &output)?;
    } else {
        print_estimate(&output, out)?;
    }
    Ok(if est.fits { ExitStatus::Success } else { ExitStatus::Failure })
}

fn apply_flags(spec: &mut WorkloadSpec, a: &EstimateArgs) {
    if let Some(m) = a.mode {
        spec.kind = Some(
            match m {
                ModeArg::Pretrain => "pretrain",
                ModeArg::Finetune => "finetune",
                ModeArg::Lora => "lora",
                ModeArg::Qlora => "qlora",
                ModeArg::Inference => "inference",
                ModeArg::BatchInference => "batch-inference",
            }
            .to_string(),
        );
    }
    let text = |v: &Option<String>| v.as_ref().map(|s| Count::Text(s.clone()));
    if a.model.is_some() {
        spec.model = a.model.clone();
    }
    if a.params.is_some() {
        spec.params = text(&a.params);
    }
    if a.active_params.is_some() {
        spec.active_params = text(&a.active_params);
    }
    if a.tokens.is_some() {
        spec.tokens = text(&a.tokens);
    }
    if a.requests.is_some() {
        spec.requests = text(&a.requests);
    }
    spec.layers = a.layers.or(spec.layers);
    spec.hidden = a.hidden.or(spec.hidden);
    spec.heads = a.heads.or(spec.heads);
    spec.kv_heads = a.kv_heads.or(spec.kv_heads);
    spec.vocab = a.vocab.or(spec.vocab);
    spec.seq_len = a.seq_len.or(spec.seq_len);
    spec.batch = a.batch.or(spec.batch);
    spec.input_tokens = a.input_tokens.or(spec.input_tokens);
    spec.output_tokens = a.output_tokens.or(spec.output_tokens);
    spec.lora_rank = a.lora_rank.or(spec.lora_rank);
    if a.precision.is_some() {
        spec.precision = a.precision.clone();
    }
    if spec.kind.as_deref() == Some("inference") {
        // A single-configuration estimate measures one replica, not a service.
        spec.requests_per_second = None;
    }
}

fn print_estimate(o: &EstimateOutput<'_>, out: &mut impl Write) -> Result<()> {
    let e = o.estimate;
    writeln!(out, "{} {} ({}) on {} x{}", o.mode, o.model.unwrap_or("custom"), o.precision, o.gpu, o.count)?;
    writeln!(
        out,
        "  memory per GPU: {:.1} GiB of {:.1} GiB ({}; with {:.0}% headroom)",
        e.memory_per_gpu_gib,
        e.gpu_memory_gib,
        if e.fits { "fits" } else { "does NOT fit" },
        e.assumptions.memory_headroom * 100.0
    )?;
    let m = &e.memory;
    writeln!(
        out,
        "    weights {:.1}, gradients {:.1}, optimizer {:.1}, activations {:.1}, kv cache {:.1}, overhead {:.1}",
        m.weights, m.gradients, m.optimizer, m.activations, m.kv_cache, m.overhead
    )?;
    if let Some(h) = e.hours {
        writeln!(out, "  time: {:.2} h ({:.1} GPU-hours)", h, e.gpu_hours.unwrap_or(0.0))?;
    }
    if let Some(t) = e.tokens_per_second {
        writeln!(out, "  throughput: {t:.0} tokens/s")?;
    }
    if let (Some(ttft), Some(tpot)) = (e.ttft_ms, e.tpot_ms) {
        writeln!(
            out,
            "  latency: time to first token {ttft:.0} ms, {tpot:.1} ms per output token at batch {}",
            e.batch.unwrap_or(1)
        )?;
    }
    let a = &e.assumptions;
    writeln!(
        out,
        "  assumptions: MFU {:.2}, bandwidth efficiency {:.2}, prefill efficiency {:.2}, scaling {:.2}, peak {:.0} TFLOP/s, {}",
        a.mfu, a.eta_bw, a.eta_prefill, a.scaling_efficiency, a.peak_tflops, a.parallelism
    )?;
    for n in &a.notes {
        writeln!(out, "  note: {n}")?;
    }
    Ok(())
}
