//! # Brief overview
//!
//! `gpubroker-run` runs jobs on cheap capacity and still finishes them on time.
//!
//! * [`trace`]: spot availability traces (Can't Be Late JSON, raw probe CSV) as a [`SpotTrace`].
//! * [`policy`]: when to use spot, on-demand or nothing, as pure functions of the job's state and
//!   the market ([`Policy::decide`]). The same functions drive the real controller and the backtest.
//! * [`backtest`]: replays a job against traces under each policy from many start offsets, with
//!   the omniscient optimum (a dynamic program over time × progress) as the lower bound.
#![deny(missing_docs)]
#![cfg_attr(test, allow(clippy::unwrap_used))]

pub mod backtest;
pub mod policy;
pub mod trace;

pub use policy::{Decision, JobState, MarketView, Mode, Policy};
pub use trace::{SpotTrace, TraceError};
