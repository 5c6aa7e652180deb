//! # Brief overview
//!
//! `gpubroker-plan` turns a task file into a ranked list of placements.
//!
//! * [`TaskFile`] reads SkyPilot task YAML plus gpubroker's `workload:` and `data:` blocks;
//!   [`TaskFile::validate`] resolves it against a catalog into a [`Task`], with errors that
//!   name the file, line and field.
//! * [`plan`] prices every feasible (provider, region/zone, instance type, node count, pricing
//!   model) for the task: compute under the offer's billing rules, storage for the run, data
//!   transfer in and out, and for spot the expected cost of interruptions, all converted to one
//!   currency. It ranks by cost or time, checks the deadline (with headroom) and the budget,
//!   and explains why the best option wins and why others were excluded.
//!
//! * [`commit`] plans commitments (1y/3y reservations, spot share, on-demand) from a demand
//!   history: exact for one instrument, a linear program for several.
//!
//! The planner is a pure function: the catalog, the task and "now" come in as values.
#![deny(missing_docs)]
#![cfg_attr(test, allow(clippy::unwrap_used))]

pub mod commit;
mod planner;
mod task;
mod yaml_location;

pub use planner::{CostBreakdown, Exclusion, Objective, Plan, PlanOption, PlanSettings, plan};
pub use task::{
    Count, DEFAULT_RESTART_OVERHEAD_H, DataSpec, ResourceChoice, Size, Task, TaskError, TaskFile, WorkloadSpec,
    parse_count,
};
