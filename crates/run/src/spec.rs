use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::recovery::RecoveryStrategy;

/// What a managed job runs, as stored (JSON) in the ledger's `jobs.spec`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobSpec {
    /// Name.
    pub name: String,
    /// Commands run before `run` in every attempt.
    pub setup: Option<String>,
    /// The job's commands.
    pub run: String,
    /// Environment variables.
    pub envs: BTreeMap<String, String>,
    /// Working directory.
    pub workdir: PathBuf,
    /// GPUs per attempt.
    pub gpus: u32,
    /// Backend name (`local`).
    pub backend: String,
    /// Pricing model asked for (`on_demand`, `spot`).
    pub pricing: String,
    /// Price per GPU-hour of the placement, exact decimal text.
    pub gpu_hour_price: String,
    /// Its currency.
    pub currency: String,
    /// Deadline, Unix ms.
    pub deadline_at_ms: Option<i64>,
    /// Spending limit in `currency`, exact decimal text; the job is stopped when it is reached.
    pub budget: Option<String>,
    /// How to place the next attempt after a preemption.
    pub recovery: RecoveryStrategy,
    /// Preemptions to recover from before giving up.
    pub max_recoveries: u32,
    /// Failed attempts (non-zero exit) to retry.
    pub max_retries: u32,
    /// Checkpoint directory, kept across attempts (default: `<checkpoint root>/<job id>`).
    pub checkpoint_dir: Option<PathBuf>,
    /// Off-peak window (`01:00-08:00 Asia/Shanghai`): start attempts only inside it, unless the
    /// deadline needs more time.
    pub window: Option<String>,
    /// Estimated run time in seconds (the window's deadline check; the work of a simulated job).
    pub expected_runtime_s: u64,
    /// Spot price per hour of the whole placement, where the backend has a spot market.
    #[serde(default)]
    pub spot_hour_price: Option<String>,
    /// Spot policy (`gpubroker`, `uniform-progress`, `greedy`, `on-demand`) for spot jobs on
    /// backends with a spot market.
    #[serde(default = "default_policy")]
    pub policy: String,
}

fn default_policy() -> String {
    "gpubroker".to_string()
}
