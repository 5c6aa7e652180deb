//! Where jobs run. Every backend implements the same four operations, each a `match` over the
//! closed [`Backend`] enum (adding a backend makes the compiler point at every site):
//!
//! * `launch(req)`: start attempt `req.key`; **idempotent**: launching a key that was already
//!   launched returns the existing handle and starts nothing;
//! * `poll(handles)`: observe many attempts in one call;
//! * `terminate(handle)`: stop an attempt; stopping one that is gone is not an error;
//! * `check()`: a health check that exercises what launch needs.
//!
//! The key `{job}-{attempt}` is what a cloud backend passes as its idempotency token (EC2
//! `ClientToken`) and a Slurm backend as the job name, so a restarted controller finds its
//! attempts again.

mod local;
mod sim;

use std::collections::BTreeMap;
use std::path::PathBuf;

pub use local::LocalBackend;
pub use sim::{SimBackend, SimZone};

use crate::spec::JobSpec;

/// Backend settings, validated once.
#[derive(Debug, Clone, PartialEq)]
pub enum BackendConfig {
    /// This machine.
    Local {
        /// Directory for attempt state and logs.
        root: PathBuf,
        /// GPU slots (real GPUs, or declared virtual ones).
        slots: u32,
    },
    /// The simulated cloud (trace-driven spot capacity, simulated time).
    Sim {
        /// Zones and their availability per tick.
        zones: Vec<SimZone>,
        /// Seconds per trace tick.
        tick_s: u32,
        /// Simulated time of tick 0, Unix ms.
        start_ms: i64,
        /// Paid time without progress at each launch, seconds.
        changeover_s: f64,
    },
}

/// A backend problem. Callers branch on the kind.
#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    /// The request can never succeed (bad spec).
    #[error("rejected: {0}")]
    Rejected(String),
    /// No capacity now; try elsewhere or later.
    #[error("no capacity: {0}")]
    NoCapacity(String),
    /// A transient failure; retry with backoff.
    #[error("transient: {0}")]
    Transient(String),
}

/// One attempt to launch.
#[derive(Debug, Clone)]
pub struct LaunchRequest<'a> {
    /// Idempotency key `{job}-{attempt}`.
    pub key: &'a str,
    /// Job id.
    pub job_id: i64,
    /// Attempt number (1-based).
    pub attempt: i64,
    /// What to run.
    pub spec: &'a JobSpec,
    /// GPU slots assigned (local backend).
    pub slots: &'a [u32],
    /// The placement recorded in the intent (`sim zone=us-west-2a spot`, `local slots=0`).
    pub placement: &'a str,
    /// The controller's clock, Unix ms (the simulated cloud runs on it).
    pub now_ms: i64,
    /// Extra environment for this attempt.
    pub env: BTreeMap<String, String>,
}

/// A launched attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Handle {
    /// Idempotency key.
    pub key: String,
}

/// What a backend sees of an attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Observed {
    /// Accepted, not started yet.
    Pending,
    /// Running since this Unix ms.
    Running {
        /// Start time, Unix ms.
        since_ms: i64,
    },
    /// Exited with this code.
    Exited {
        /// Exit code.
        code: i64,
        /// When, Unix ms.
        at_ms: i64,
    },
    /// Reclaimed or killed from outside: its progress is in the last checkpoint.
    Preempted {
        /// When it was noticed, Unix ms.
        at_ms: i64,
    },
    /// The backend has no record of it.
    Gone,
}

/// A backend, built from a validated [`BackendConfig`].
#[derive(Debug, Clone)]
pub enum Backend {
    /// This machine.
    Local(LocalBackend),
    /// The simulated cloud.
    Sim(SimBackend),
}

impl Backend {
    /// Builds the backend (creates directories; no processes started).
    pub fn build(config: &BackendConfig) -> Result<Backend, BackendError> {
        match config {
            BackendConfig::Local { root, slots } => Ok(Backend::Local(LocalBackend::new(root.clone(), *slots)?)),
            BackendConfig::Sim { zones, tick_s, start_ms, changeover_s } => {
                Ok(Backend::Sim(SimBackend::new(zones.clone(), *tick_s, *start_ms, *changeover_s)?))
            }
        }
    }

    /// The backend's name.
    pub fn name(&self) -> &'static str {
        match self {
            Backend::Local(_) => "local",
            Backend::Sim(_) => "sim",
        }
    }

    /// GPU slots it offers (0 = unlimited).
    pub fn slots(&self) -> u32 {
        match self {
            Backend::Local(b) => b.slots(),
            Backend::Sim(_) => 0,
        }
    }

    /// Starts an attempt (idempotent on `req.key`).
    pub fn launch(&self, req: &LaunchRequest<'_>) -> Result<Handle, BackendError> {
        match self {
            Backend::Local(b) => b.launch(req),
            Backend::Sim(b) => b.launch(req, req.now_ms),
        }
    }

    /// Observes attempts, one result per handle, in order.
    pub fn poll(&self, handles: &[Handle], now_ms: i64) -> Result<Vec<Observed>, BackendError> {
        match self {
            Backend::Local(b) => Ok(handles.iter().map(|h| b.observe(h, now_ms)).collect()),
            Backend::Sim(b) => Ok(handles.iter().map(|h| b.observe(h, now_ms)).collect()),
        }
    }

    /// Stops an attempt; a gone attempt is fine.
    pub fn terminate(&self, handle: &Handle, now_ms: i64) -> Result<(), BackendError> {
        match self {
            Backend::Local(b) => b.terminate(handle),
            Backend::Sim(b) => {
                b.terminate(handle, now_ms);
                Ok(())
            }
        }
    }

    /// Checks the backend can launch.
    pub fn check(&self) -> Result<(), BackendError> {
        match self {
            Backend::Local(b) => b.check(),
            Backend::Sim(_) => Ok(()),
        }
    }

    /// Where an attempt's log is, if the backend keeps one locally.
    pub fn log_path(&self, key: &str) -> Option<PathBuf> {
        match self {
            Backend::Local(b) => Some(b.dir(key).join("log")),
            Backend::Sim(_) => None,
        }
    }

    /// The process id of a running attempt (local backend; used by tests to simulate a preemption).
    pub fn pid(&self, key: &str) -> Option<u32> {
        match self {
            Backend::Local(b) => b.pid(key),
            Backend::Sim(_) => None,
        }
    }

    /// Spot zones and their availability now, for backends with a spot market.
    pub fn market(&self, now_ms: i64) -> Option<(Vec<String>, Vec<bool>)> {
        match self {
            Backend::Local(_) => None,
            Backend::Sim(b) => Some((b.zone_names(), b.market(now_ms))),
        }
    }

    /// Work a job has done, seconds, where the backend can tell (simulated jobs).
    pub fn progress_s(&self, job_id: i64, now_ms: i64) -> Option<f64> {
        match self {
            Backend::Local(_) => None,
            Backend::Sim(b) => Some(b.progress_s(job_id, now_ms)),
        }
    }

    /// Seconds between market observations, and the changeover of a launch.
    pub fn timing(&self) -> (f64, f64) {
        match self {
            Backend::Local(_) => (1.0, 0.0),
            Backend::Sim(b) => (b.tick_s(), b.changeover_s()),
        }
    }
}
