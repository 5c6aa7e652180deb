//! # Brief overview
//!
//! `gpubroker-estimate` answers "does this workload fit on these GPUs, and how long will it
//! take?" with pure functions of a [`Workload`], a [`Hardware`] layout and an
//! [`EfficiencyTable`]. No I/O, no clock.
//!
//! * Memory ([`memory`]): weights, gradients, optimizer states, activations (with activation
//!   recomputation when it is needed to fit), fully sharded data parallelism across GPUs,
//!   LoRA/QLoRA adapters, and the KV cache for inference. Formulas and sources are in
//!   `../shared/reference/perf-model.md` §2, summarised at each function.
//! * Time ([`timing`]): training from FLOPs per token (the 6ND rule with an attention term) at a
//!   calibrated model-FLOPs utilisation per GPU architecture and precision; inference from a
//!   roofline (prefill compute-bound, decode bandwidth-bound), with tensor-parallel and
//!   multi-node scaling by interconnect.
//! * Efficiency factors are data (`data/efficiency.csv`), calibrated against published
//!   measurements; `docs/estimator.md` reports the error on each case.
#![deny(missing_docs)]
#![cfg_attr(test, allow(clippy::unwrap_used))]

mod efficiency;
mod estimate;
pub mod memory;
pub mod timing;
mod workload;

pub use efficiency::{Efficiency, EfficiencyTable};
pub use estimate::{Assumptions, Estimate, Hardware, MemoryBreakdown, estimate, smallest_fit};
pub use workload::{CustomWork, Model, Serving, Workload, WorkloadError, WorkloadKind};
