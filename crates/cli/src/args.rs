//! Command-line arguments: plain clap-derive data. The `///` docs are the `--help` text.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// gpubroker: rent GPUs wisely. Plans where to run a GPU workload and what it will really cost.
#[derive(Debug, Parser)]
#[command(name = "gpubroker", version, about, long_about = None, propagate_version = true)]
pub(crate) struct Cli {
    #[command(flatten)]
    pub(crate) global: GlobalArgs,
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Debug, Args)]
pub(crate) struct GlobalArgs {
    /// Catalog file or directory of catalog tables to use instead of the built-in offers
    /// (repeatable; `builtin` adds the built-in offers). GPU specs, transfer and storage prices,
    /// exchange rates and model presets always start from the built-in tables.
    #[arg(long, global = true, env = "GPUBROKER_CATALOG", value_delimiter = ',', value_name = "PATH")]
    pub(crate) catalog: Vec<String>,

    /// Currency to show amounts in (USD, CNY, EUR, ...); converted with the catalog's dated rates.
    #[arg(long, global = true, value_name = "CODE")]
    pub(crate) currency: Option<String>,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Rank every feasible placement of a task by total cost (compute, storage, data transfer,
    /// expected spot interruptions) and recommend one.
    Plan(PlanArgs),
    /// Estimate memory, time and throughput of one workload on one GPU configuration.
    Estimate(EstimateArgs),
    /// List GPU types with their cheapest offers, or the offers of one GPU (`A100:8`).
    Gpus(GpusArgs),
    /// Query and import catalogs of offerings.
    #[command(subcommand)]
    Catalog(CatalogCommand),
    /// Replay a job against spot availability traces under each policy, from many start offsets.
    Backtest(BacktestArgs),
    /// Submit a task as a managed job (returns at once with its id; the controller runs it).
    Launch(LaunchArgs),
    /// List managed jobs, or show, follow the logs of, or cancel one.
    Jobs(JobsArgs),
    /// Run the job controller in the foreground (the CLI starts it in the background when needed).
    #[command(hide = true)]
    Controller,
    /// Record usage gpubroker did not launch: one record, a CSV, or a FOCUS bill.
    #[command(subcommand)]
    Usage(UsageCommand),
    /// Cost reports from the ledger.
    #[command(subcommand)]
    Cost(CostCommand),
    /// Budgets per scope with threshold and forecast alerts.
    #[command(subcommand)]
    Budget(BudgetCommand),
    /// Committed contracts (hourly reservations, commitment + overage blocks): utilisation and waste.
    #[command(subcommand)]
    Contract(ContractCommand),
    /// Plan commitments (1y/3y reservations), spot and on-demand from a demand history.
    #[command(subcommand)]
    Commit(CommitCommand),
}

#[derive(Debug, Subcommand)]
pub(crate) enum CommitCommand {
    /// Recommend commitment levels per GPU type, with expected savings, utilisation and coverage.
    Plan(CommitPlanArgs),
}

#[derive(Debug, Args)]
pub(crate) struct CommitPlanArgs {
    /// Hourly demand CSV `timestamp,gpu,count[,interruptible]` (default: the ledger's metered GPU-hours).
    #[arg(long, conflicts_with = "focus")]
    pub(crate) usage: Option<PathBuf>,
    /// Demand from a FOCUS bill: GPU instance rows (GPU type from `x_GpuType` or the catalog's
    /// instance type), spread over each row's charge period.
    #[arg(long)]
    pub(crate) focus: Option<PathBuf>,
    /// Instruments to consider: 1y and 3y reservations, `committed` provider contracts
    /// (capacity blocks, reserved clusters), `month`ly subscriptions.
    #[arg(long, value_delimiter = ',', default_value = "1y,3y,committed,month", value_parser = ["1y", "3y", "committed", "month"])]
    pub(crate) term: Vec<String>,
    /// Providers to buy from (default: the usage's own provider, else the cheapest market).
    #[arg(long, value_delimiter = ',')]
    pub(crate) provider: Vec<String>,
    /// What-if: the GPU whose prices the next flags set.
    #[arg(long)]
    pub(crate) gpu: Option<String>,
    /// What-if: on-demand price per GPU-hour.
    #[arg(long)]
    pub(crate) on_demand_price: Option<f64>,
    /// What-if: commitment prices per GPU-hour, `1y=P1,3y=P3`.
    #[arg(long)]
    pub(crate) commit_price: Option<String>,
    /// What-if: a commitment + overage contract for `--gpu`, `min=GPU-HOURS,rate=P,overage=P`
    /// (the smallest monthly block, its price and the price beyond it, per GPU-hour).
    #[arg(long, requires = "gpu")]
    pub(crate) contract: Option<String>,
    /// Share of the demand that may run on spot, when the CSV has no `interruptible` column.
    #[arg(long, default_value_t = 0.0)]
    pub(crate) interruptible: f64,
    /// Largest expected unused commitment, GPU-hours over the history.
    #[arg(long)]
    pub(crate) max_unused: Option<f64>,
    /// Recent window that caps commitments (a usage drop is not locked in).
    #[arg(long, default_value = "14d")]
    pub(crate) lookback: String,
    /// Plan on the history followed by the forecast of the next N weeks (trend + hour-of-week
    /// season), so growing demand is committed for and a falling one is not.
    #[arg(long)]
    pub(crate) forecast_weeks: Option<u32>,
    /// Write a chart of hourly demand and the commitment levels to this SVG file.
    #[arg(long)]
    pub(crate) plot: Option<PathBuf>,
    /// Backtest: plan on the first N weeks, evaluate on the rest against all on-demand and hindsight.
    #[arg(long)]
    pub(crate) train_weeks: Option<u32>,
    /// Print JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Debug, Subcommand)]
pub(crate) enum ContractCommand {
    /// Create or replace a contract.
    Set(ContractSetArgs),
    /// What each contract bills this period, its utilisation, coverage and unused (wasted) commitment.
    Status(BudgetStatusArgs),
}

#[derive(Debug, Args)]
pub(crate) struct ContractSetArgs {
    /// Contract name.
    pub(crate) name: String,
    /// Usage it covers, `key=value` (tag or provider); repeatable.
    #[arg(long)]
    pub(crate) scope: Vec<String>,
    /// `hourly`: GPUs reserved every hour (use it or lose it); `block`: GPU-hours per period, excess at the overage rate.
    #[arg(long, default_value = "block")]
    pub(crate) kind: String,
    /// GPUs per hour (hourly) or GPU-hours per period (block).
    #[arg(long)]
    pub(crate) units: String,
    /// Price per committed GPU-hour (`2.00 USD`).
    #[arg(long)]
    pub(crate) rate: String,
    /// Price per GPU-hour beyond the commitment (`3.00 USD`).
    #[arg(long)]
    pub(crate) overage: String,
    /// daily, weekly or monthly.
    #[arg(long, default_value = "monthly")]
    pub(crate) period: String,
}

#[derive(Debug, Subcommand)]
pub(crate) enum BudgetCommand {
    /// Create or replace a budget.
    Set(BudgetSetArgs),
    /// Spend, forecast and alerts of every budget for the current period (fires due alerts).
    Status(BudgetStatusArgs),
}

#[derive(Debug, Args)]
pub(crate) struct BudgetSetArgs {
    /// Budget name.
    pub(crate) name: String,
    /// Scope `key=value` (a tag, or `provider=aws`); repeatable, all must match. No scope = everything.
    #[arg(long)]
    pub(crate) scope: Vec<String>,
    /// Amount, with or without currency (`5000 USD`, `5000`).
    #[arg(long, num_args = 1..=2)]
    pub(crate) amount: Vec<String>,
    /// daily, weekly or monthly (calendar periods, UTC).
    #[arg(long, default_value = "monthly")]
    pub(crate) period: String,
    /// Alert thresholds, percent of the amount.
    #[arg(long, value_delimiter = ',', default_value = "50,80,100")]
    pub(crate) alert: Vec<u32>,
    /// Also alert when the forecast for the period crosses a threshold.
    #[arg(long)]
    pub(crate) forecast: bool,
    /// POST alerts as JSON to this http:// URL.
    #[arg(long)]
    pub(crate) webhook: Option<String>,
    /// Refuse new launches in the scope once spend reaches the amount.
    #[arg(long)]
    pub(crate) enforce: bool,
    /// Also stop running jobs in the scope when spend reaches the amount (checked by `budget status`).
    #[arg(long)]
    pub(crate) stop_running: bool,
}

#[derive(Debug, Args)]
pub(crate) struct BudgetStatusArgs {
    /// Print JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Debug, Subcommand)]
pub(crate) enum UsageCommand {
    /// Add one usage record.
    Add(UsageAddArgs),
    /// Ingest GPU utilisation samples of a resource (`nvidia-smi` CSV or a DCGM exporter scrape).
    Samples(UsageSamplesArgs),
    /// Import usage records (`--csv`) or a FOCUS 1.0-1.2 cost-and-usage file (`--focus`).
    Import(UsageImportArgs),
}

#[derive(Debug, Args)]
pub(crate) struct UsageAddArgs {
    /// Resource id (instance id, node name).
    #[arg(long)]
    pub(crate) resource: String,
    /// Provider id.
    #[arg(long)]
    pub(crate) provider: String,
    /// Region.
    #[arg(long, default_value = "")]
    pub(crate) region: String,
    /// Instance type.
    #[arg(long, default_value = "")]
    pub(crate) instance_type: String,
    /// GPU type.
    #[arg(long, default_value = "")]
    pub(crate) gpu: String,
    /// GPUs.
    #[arg(long, default_value_t = 0)]
    pub(crate) gpu_count: u32,
    /// Pricing model.
    #[arg(long, default_value = "on_demand")]
    pub(crate) pricing: String,
    /// Start (RFC 3339).
    #[arg(long)]
    pub(crate) start: String,
    /// End (RFC 3339).
    #[arg(long)]
    pub(crate) end: String,
    /// Price per hour of the whole resource (`3.06 USD`); default: the catalog's price as of `--start`.
    #[arg(long)]
    pub(crate) hourly_rate: Option<String>,
    /// Minimum billed seconds per launch.
    #[arg(long, default_value_t = 0)]
    pub(crate) min_billable_seconds: u32,
    /// Tags `k=v;k=v` (or `,`).
    #[arg(long, default_value = "")]
    pub(crate) tags: String,
    /// The provider reclaimed it (spot): free if within the provider's first-hour rule.
    #[arg(long)]
    pub(crate) interrupted: bool,
}

#[derive(Debug, Args)]
pub(crate) struct UsageSamplesArgs {
    /// The resource the samples belong to (a usage `resource_id`, or a managed job's attempt key `JOB-ATTEMPT`).
    #[arg(long)]
    pub(crate) resource: String,
    /// Output of `nvidia-smi --query-gpu=timestamp,index,utilization.gpu --format=csv` (times in UTC).
    #[arg(long, conflicts_with_all = ["dcgm", "nvml"], required_unless_present_any = ["dcgm", "nvml"])]
    pub(crate) nvidia_smi: Option<PathBuf>,
    /// A DCGM exporter scrape (Prometheus text with `DCGM_FI_DEV_GPU_UTIL`).
    #[arg(long, conflicts_with = "nvml")]
    pub(crate) dcgm: Option<PathBuf>,
    /// Sample this machine's GPUs through NVML (`libnvidia-ml.so`, present where NVIDIA drivers are).
    #[arg(long)]
    pub(crate) nvml: bool,
    /// With `--nvml`: samples to take.
    #[arg(long, default_value_t = 1)]
    pub(crate) count: u32,
    /// With `--nvml`: time between samples.
    #[arg(long, default_value = "10s")]
    pub(crate) interval: String,
}

#[derive(Debug, Args)]
pub(crate) struct UsageImportArgs {
    /// A CSV with columns resource_id,provider,region,instance_type,gpu,gpu_count,pricing,start,end,hourly_rate,currency,min_billable_seconds,tags
    /// (and optionally `interrupted`: true when the provider reclaimed a spot resource).
    #[arg(long, conflicts_with = "focus", required_unless_present = "focus")]
    pub(crate) csv: Option<PathBuf>,
    /// A FOCUS cost-and-usage CSV (1.0-1.2).
    #[arg(long)]
    pub(crate) focus: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub(crate) enum CostCommand {
    /// Billed, effective (amortised) and list cost and GPU-hours, grouped.
    Report(CostReportArgs),
    /// Export the ledger as FOCUS 1.2 rows (hourly for metered usage; imported bills as they were).
    Export(CostExportArgs),
    /// Idle GPUs (utilisation under a threshold for a window) and what they cost; start/stop churn.
    Idle(CostIdleArgs),
    /// Days whose spend in a scope jumps above its rolling baseline, with the dimension that caused it.
    Anomalies(CostAnomaliesArgs),
    /// Spend this month and the next N: trend + day-of-week season of daily spend, with an 80% interval.
    Forecast(CostForecastArgs),
}

#[derive(Debug, Args)]
pub(crate) struct CostForecastArgs {
    /// Months after this one to forecast.
    #[arg(long, default_value_t = 3)]
    pub(crate) months: u32,
    /// Forecast each group separately: a tag (team, project, ...) or provider, gpu, pricing, service.
    #[arg(long)]
    pub(crate) by: Option<String>,
    /// Print JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct CostIdleArgs {
    /// Utilisation (percent) under which a GPU counts as idle.
    #[arg(long, default_value_t = 10.0)]
    pub(crate) threshold: f64,
    /// How long it must stay idle (`15m`).
    #[arg(long, default_value = "15m")]
    pub(crate) window: String,
    /// Cancel managed jobs whose attempt is idle right now.
    #[arg(long)]
    pub(crate) stop: bool,
    /// Print JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct CostAnomaliesArgs {
    /// Scope to watch: a tag (team, project, ...) or provider, gpu, pricing, service.
    #[arg(long, default_value = "team")]
    pub(crate) by: String,
    /// Days before the baseline window to look at.
    #[arg(long, default_value_t = 7)]
    pub(crate) baseline_days: u32,
    /// Spend above this multiple of the baseline is an anomaly.
    #[arg(long, default_value_t = 2.0)]
    pub(crate) factor: f64,
    /// ...and at least this much above it (in the report currency).
    #[arg(long, default_value_t = 10.0)]
    pub(crate) min: f64,
    /// Print JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct CostExportArgs {
    /// Output format.
    #[arg(long, default_value = "focus")]
    pub(crate) format: String,
    /// From (RFC 3339 or YYYY-MM-DD), inclusive.
    #[arg(long)]
    pub(crate) from: Option<String>,
    /// To (RFC 3339 or YYYY-MM-DD), exclusive.
    #[arg(long)]
    pub(crate) to: Option<String>,
    /// Output file (default: standard output).
    #[arg(long, short = 'o')]
    pub(crate) output: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub(crate) struct CostReportArgs {
    /// Group by team, project, model, user (or any tag, `tag:KEY`), provider, service, gpu, pricing, region, day, month.
    #[arg(long, default_value = "team")]
    pub(crate) by: String,
    /// From (RFC 3339 or YYYY-MM-DD), inclusive.
    #[arg(long)]
    pub(crate) from: Option<String>,
    /// To (RFC 3339 or YYYY-MM-DD), exclusive.
    #[arg(long)]
    pub(crate) to: Option<String>,
    /// Only these sources: job, usage, focus.
    #[arg(long, value_delimiter = ',')]
    pub(crate) source: Vec<String>,
    /// Also show cost per unit of useful work (`tokens`, `epochs`): jobs report it in
    /// `$GPUBROKER_CHECKPOINT_DIR/work` as `UNIT AMOUNT`; usage records in tags `work_unit`/`work_amount`.
    #[arg(long)]
    pub(crate) per: Option<String>,
    /// Print JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct LaunchArgs {
    /// Task file (its `setup`, `run`, `envs` and `workdir` are what runs).
    pub(crate) task: PathBuf,
    /// Run on spot capacity.
    #[arg(long, conflicts_with = "on_demand")]
    pub(crate) spot: bool,
    /// Run on on-demand capacity.
    #[arg(long)]
    pub(crate) on_demand: bool,
    /// Deadline: a duration from now (`48h`) or an RFC 3339 time (overrides the task's).
    #[arg(long)]
    pub(crate) deadline: Option<String>,
    /// Backend to run on.
    #[arg(long, default_value = "local")]
    pub(crate) backend: String,
    /// Queue.
    #[arg(long, default_value = "default")]
    pub(crate) queue: String,
    /// Priority within the queue (higher first).
    #[arg(long, default_value_t = 0)]
    pub(crate) priority: i64,
    /// GPUs per attempt (default: the task's accelerator count, or 0).
    #[arg(long)]
    pub(crate) gpus: Option<u32>,
    /// After a preemption: same_zone, next_cheapest or on_demand.
    #[arg(long, default_value = "same_zone")]
    pub(crate) recovery: String,
    /// Preemptions to recover from before giving up.
    #[arg(long, default_value_t = 10)]
    pub(crate) max_recoveries: u32,
    /// Failed attempts (non-zero exit) to retry.
    #[arg(long, default_value_t = 0)]
    pub(crate) max_retries: u32,
    /// Start attempts only inside this daily window (`01:00-08:00 Asia/Shanghai`) unless the deadline needs more.
    #[arg(long)]
    pub(crate) window: Option<String>,
    /// Spending limit (`5 USD`); the job is stopped when it is reached (overrides the task's).
    #[arg(long)]
    pub(crate) budget: Option<String>,
    /// Do not start the background controller (for tests and for a controller run elsewhere).
    #[arg(long, hide = true)]
    pub(crate) no_controller: bool,
    /// Spot policy: gpubroker, uniform-progress, greedy or on-demand.
    #[arg(long, default_value = "gpubroker")]
    pub(crate) policy: String,
    /// Cost-attribution tags `key=value` (team, project, model, user, ...), repeatable.
    #[arg(long)]
    pub(crate) tag: Vec<String>,
    /// `--backend sim`: spot availability traces of the zones (files or directories).
    #[arg(long, value_delimiter = ',')]
    pub(crate) trace: Vec<PathBuf>,
    /// `--backend sim`: hours of compute the simulated job needs.
    #[arg(long)]
    pub(crate) work_hours: Option<f64>,
    /// `--backend sim`: on-demand price per hour.
    #[arg(long, default_value_t = 3.06)]
    pub(crate) on_demand_price: f64,
    /// `--backend sim`: spot price per hour.
    #[arg(long, default_value_t = 0.9731)]
    pub(crate) spot_price: f64,
    /// `--backend sim`: paid time without progress at each launch, hours.
    #[arg(long, default_value_t = 0.2)]
    pub(crate) changeover_hours: f64,
    /// `--backend sim`: where in the traces the job starts, hours from their beginning.
    #[arg(long, default_value_t = 0.0)]
    pub(crate) start_offset_hours: f64,
    /// `--backend sim`: print the simulated run as JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct JobsArgs {
    #[command(subcommand)]
    pub(crate) command: Option<JobsCommand>,
    /// Include finished jobs.
    #[arg(long)]
    pub(crate) all: bool,
    /// Print JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Debug, Subcommand)]
pub(crate) enum JobsCommand {
    /// A job's attempts (placement, times, price, cost) and event history.
    Show {
        /// Job id.
        id: i64,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// A job's output, every attempt in order.
    Logs {
        /// Job id.
        id: i64,
        /// Keep printing until the job finishes.
        #[arg(long, short = 'f')]
        follow: bool,
    },
    /// Cancel a job (its running attempt is terminated).
    Cancel {
        /// Job id.
        id: i64,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ZonesMode {
    /// Each trace is its own scenario (one zone).
    Each,
    /// All traces are zones of one scenario; the policy may move between them.
    Any,
}

#[derive(Debug, Args)]
pub(crate) struct BacktestArgs {
    /// Trace files (Can't Be Late JSON or raw probe CSV) or directories of them.
    #[arg(long, value_delimiter = ',', required = true)]
    pub(crate) trace: Vec<PathBuf>,
    /// Compute the job needs, hours.
    #[arg(long)]
    pub(crate) job_hours: f64,
    /// Deadline after submission, hours.
    #[arg(long)]
    pub(crate) deadline_hours: f64,
    /// Paid time without progress each time an instance starts, hours.
    #[arg(long, default_value_t = 0.2)]
    pub(crate) changeover_hours: f64,
    /// On-demand price per hour (default: p3.2xlarge, the paper's simulator).
    #[arg(long, default_value_t = 3.06)]
    pub(crate) on_demand_price: f64,
    /// Spot price per hour.
    #[arg(long, default_value_t = 0.9731)]
    pub(crate) spot_price: f64,
    /// Random start offsets per scenario.
    #[arg(long, default_value_t = 300)]
    pub(crate) starts: usize,
    /// Seed of the start offsets.
    #[arg(long, default_value_t = 1)]
    pub(crate) seed: u64,
    /// Policies: on-demand, greedy, uniform-progress, gpubroker, omniscient.
    #[arg(long, value_delimiter = ',', default_value = "on-demand,greedy,uniform-progress,gpubroker,omniscient")]
    pub(crate) policy: Vec<String>,
    /// Nodes of a gang job (multi-node traces).
    #[arg(long, default_value_t = 1)]
    pub(crate) nodes: u32,
    /// How several traces combine.
    #[arg(long, value_enum, default_value_t = ZonesMode::Each)]
    pub(crate) zones_mode: ZonesMode,
    /// Print JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ObjectiveArg {
    /// Cheapest total cost that meets the deadline and budget.
    Cost,
    /// Shortest time within the budget.
    Time,
}

#[derive(Debug, Args)]
pub(crate) struct PlanArgs {
    /// Task file (SkyPilot task YAML with gpubroker's `workload:` and `data:` blocks).
    pub(crate) task: PathBuf,
    /// What to minimise.
    #[arg(long, value_enum, default_value_t = ObjectiveArg::Cost)]
    pub(crate) objective: ObjectiveArg,
    /// Print the plan as JSON.
    #[arg(long)]
    pub(crate) json: bool,
    /// Rows to show in the table (the JSON always has every option).
    #[arg(long, default_value_t = 10)]
    pub(crate) limit: usize,
    /// Show every option in the table.
    #[arg(long)]
    pub(crate) all: bool,
    /// Pricing models to consider (default: all but reserved and committed).
    #[arg(long, value_delimiter = ',', value_name = "MODEL")]
    pub(crate) pricing: Vec<String>,
    /// Safety margin on memory and on time against the deadline, as a fraction.
    #[arg(long, default_value_t = 0.15)]
    pub(crate) headroom: f64,
    /// Largest number of nodes to consider per option.
    #[arg(long, default_value_t = 16)]
    pub(crate) max_nodes: u32,
    /// Hours to price when the task has no `workload:` block.
    #[arg(long)]
    pub(crate) hours: Option<f64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ModeArg {
    Pretrain,
    Finetune,
    Lora,
    Qlora,
    Inference,
    #[value(name = "batch-inference")]
    BatchInference,
}

#[derive(Debug, Args)]
pub(crate) struct EstimateArgs {
    /// Task file whose `workload:` block to estimate (flags override it).
    pub(crate) task: Option<PathBuf>,
    /// Model preset (`llama-3-8b`).
    #[arg(long)]
    pub(crate) model: Option<String>,
    /// Parameters (`8e9`, `8B`).
    #[arg(long)]
    pub(crate) params: Option<String>,
    /// Parameters active per token (MoE).
    #[arg(long)]
    pub(crate) active_params: Option<String>,
    /// Layers.
    #[arg(long)]
    pub(crate) layers: Option<u32>,
    /// Hidden size.
    #[arg(long)]
    pub(crate) hidden: Option<u32>,
    /// Attention heads.
    #[arg(long)]
    pub(crate) heads: Option<u32>,
    /// KV heads (GQA).
    #[arg(long)]
    pub(crate) kv_heads: Option<u32>,
    /// Vocabulary size.
    #[arg(long)]
    pub(crate) vocab: Option<u32>,
    /// Workload kind.
    #[arg(long, value_enum)]
    pub(crate) mode: Option<ModeArg>,
    /// Tokens processed (training).
    #[arg(long)]
    pub(crate) tokens: Option<String>,
    /// Sequence length.
    #[arg(long)]
    pub(crate) seq_len: Option<u32>,
    /// Micro-batch per GPU (training) or concurrent sequences (inference).
    #[arg(long)]
    pub(crate) batch: Option<u32>,
    /// Prompt tokens per request.
    #[arg(long)]
    pub(crate) input_tokens: Option<u32>,
    /// Generated tokens per request.
    #[arg(long)]
    pub(crate) output_tokens: Option<u32>,
    /// Requests to process (batch inference).
    #[arg(long)]
    pub(crate) requests: Option<String>,
    /// Precision: fp32, bf16, fp16, fp8, int8, int4, fp4.
    #[arg(long)]
    pub(crate) precision: Option<String>,
    /// LoRA rank.
    #[arg(long)]
    pub(crate) lora_rank: Option<u32>,
    /// GPU type.
    #[arg(long)]
    pub(crate) gpu: String,
    /// GPUs in total.
    #[arg(long, default_value_t = 1)]
    pub(crate) count: u32,
    /// GPUs per node (default: min(count, 8)).
    #[arg(long)]
    pub(crate) gpus_per_node: Option<u32>,
    /// Memory headroom required, as a fraction.
    #[arg(long, default_value_t = 0.15)]
    pub(crate) headroom: f64,
    /// Print JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct GpusArgs {
    /// A GPU name, optionally with a count per instance (`A100:8`).
    pub(crate) gpu: Option<String>,
    /// Print JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Debug, Subcommand)]
pub(crate) enum CatalogCommand {
    /// List offers, cheapest per hour first.
    List(CatalogListArgs),
    /// Convert SkyPilot catalog CSVs (`DIR/<cloud>/vms.csv`) into a gpubroker offers file.
    Import(CatalogImportArgs),
    /// Summarise the catalog: providers, offers per pricing model, exchange rates.
    Info(CatalogInfoArgs),
}

#[derive(Debug, Args)]
pub(crate) struct CatalogListArgs {
    /// Provider ids.
    #[arg(long, value_delimiter = ',')]
    pub(crate) provider: Vec<String>,
    /// Regions.
    #[arg(long, value_delimiter = ',')]
    pub(crate) region: Vec<String>,
    /// GPU types (`A100-80GB` or `A100-80GB:8`).
    #[arg(long, value_delimiter = ',')]
    pub(crate) gpu: Vec<String>,
    /// Pricing models.
    #[arg(long, value_delimiter = ',')]
    pub(crate) pricing: Vec<String>,
    /// Highest price per hour of the instance (`3.5`, `3.5USD`, `20CNY`).
    #[arg(long)]
    pub(crate) max_price: Option<String>,
    /// Rows to show.
    #[arg(long, default_value_t = 50)]
    pub(crate) limit: usize,
    /// Print JSON (every matching offer).
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Debug, Args)]
pub(crate) struct CatalogImportArgs {
    /// Directory of SkyPilot catalogs (`DIR/aws/vms.csv`, `DIR/lambda/vms.csv`, ...) or one vms.csv.
    #[arg(long, value_name = "DIR")]
    pub(crate) skypilot: PathBuf,
    /// Output offers file (default: standard output).
    #[arg(long, short = 'o')]
    pub(crate) output: Option<PathBuf>,
    /// Date to record as the prices' `as_of` (default: today, UTC).
    #[arg(long)]
    pub(crate) as_of: Option<String>,
}

#[derive(Debug, Args)]
pub(crate) struct CatalogInfoArgs {
    /// Print JSON.
    #[arg(long)]
    pub(crate) json: bool,
}
