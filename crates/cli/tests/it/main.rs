//! End-to-end tests of the `gpubroker` binary: one test harness (uv 715f28fd39), one module per
//! command. Output is snapshotted with insta; `GPUBROKER_NOW` fixes the clock.

mod backtest;
mod budget;
mod catalog;
mod commit;
mod commit_traces;
mod common;
mod errors;
mod estimate;
mod forecast;
mod jobs;
mod plan;
mod usage;
