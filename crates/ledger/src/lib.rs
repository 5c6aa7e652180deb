//! # Brief overview
//!
//! `gpubroker-ledger` is the one place gpubroker keeps state that must survive a crash: a SQLite
//! database (WAL, `synchronous=FULL`) in the data directory. This first part holds managed jobs:
//!
//! * `jobs`: what was submitted (the spec as JSON, opaque here), its queue, priority and state;
//! * `attempts`: every placement of a job, written as an *intent* (state `launching`, with the
//!   idempotency key `{job}-{attempt}`) **before** the backend is called, then updated with what
//!   the backend reported. After a crash the controller re-issues every `launching` attempt with
//!   the same key, which the backend treats as "already launched" if it was;
//! * `events`: an append-only log of transitions, for `gpubroker jobs show`;
//! * `charges`: the cost ledger, append-only: metered usage (priced with the rate card in force
//!   at launch, never today's price), usage gpubroker did not launch (`usage add`, `usage import
//!   --csv`) and cloud bills (`usage import --focus`). Each row has an idempotency key, so a
//!   re-import or a retried batch never counts a second twice.
//!
//! # Guarantees
//! Every write is one transaction; a committed transition survives `kill -9` of the process.
#![deny(missing_docs)]
#![cfg_attr(test, allow(clippy::unwrap_used))]

mod budgets;
mod charges;
mod contracts;
mod pg;
mod samples;
mod store;

pub use budgets::Budget;
pub use charges::{Charge, ChargeSource, GroupBy, ReportRow, group_charges, stable_key};
pub use contracts::Contract;
pub use pg::{PgError, PgLedger};
pub use samples::{IdleSpan, Sample, idle_spans};
pub use store::{Attempt, AttemptState, Event, Job, JobState, Store, StoreError};
