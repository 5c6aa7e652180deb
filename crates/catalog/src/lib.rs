//! # Brief overview
//!
//! `gpubroker-catalog` is gpubroker's view of the GPU market: what each accelerator can do
//! ([`GpuSpec`]), what can be rented where and at what price ([`Offer`], each with a
//! [`gpubroker_core::RateCard`]), what moving and keeping data costs ([`TransferPrice`],
//! [`StoragePrice`]), exchange rates, and architecture presets of open models ([`ModelPreset`]).
//!
//! A [`Catalog`] is built from tables: the built-in ones compiled into the binary (`data/*.csv`,
//! every price with its source and date), files given with `--catalog`, and SkyPilot catalogs
//! converted by [`skypilot::import`]. Loading is strict (a bad row is an error naming its file,
//! line and field); importing foreign data is lenient (bad rows are reported and skipped).
//!
//! Nothing here touches the network or the clock.
#![deny(missing_docs)]
#![cfg_attr(test, allow(clippy::unwrap_used))]

mod catalog;
mod error;
mod gpu;
mod model;
mod offer;
mod rows;
pub mod skypilot;
mod tables;

pub use catalog::{Catalog, CatalogSource, OfferFilter};
pub use error::{CatalogError, Warning};
pub use gpu::{GpuSpec, Precision, normalize_name};
pub use model::ModelPreset;
pub use offer::{InterruptionBucket, Offer, StorageKind, StoragePrice, TransferKind, TransferPrice};
pub use tables::write_offers_csv;
