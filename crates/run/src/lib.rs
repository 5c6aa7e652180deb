//! # Brief overview
//!
//! `gpubroker-run` runs jobs on cheap capacity and still finishes them on time.
//!
//! * [`trace`]: spot availability traces (Can't Be Late JSON, raw probe CSV) as a [`SpotTrace`].
//! * [`policy`]: when to use spot, on-demand or nothing, as pure functions of the job's state and
//!   the market ([`Policy::decide`]). The same functions drive the real controller and the backtest.
//! * [`backtest`]: replays a job against traces under each policy from many start offsets, with
//!   the omniscient optimum (a dynamic program over time × progress) as the lower bound.
//! * [`backend`]: where jobs run, behind one closed enum ([`Backend`]): launch idempotently by a
//!   key, poll in batches, terminate, health check.
//! * [`controller`]: the persisted job state machine that drives backends, recovers preempted
//!   attempts from their checkpoints and survives `kill -9`.
#![deny(missing_docs)]
#![cfg_attr(test, allow(clippy::unwrap_used))]

pub mod backend;
pub mod backtest;
pub mod controller;
pub mod policy;
pub mod recovery;
mod spec;
pub mod trace;

pub use backend::{Backend, BackendConfig, BackendError, Handle, LaunchRequest, Observed};
pub use controller::{Controller, ControllerConfig};
pub use policy::{Decision, JobState, MarketView, Mode, Policy};
pub use recovery::RecoveryStrategy;
pub use spec::JobSpec;
pub use trace::{SpotTrace, TraceError};
