//! # Brief overview
//!
//! `gpubroker-core` holds the pure domain types every other crate shares:
//!
//! * [`Money`]: an exact decimal amount with its [`Currency`]. Real cloud bills carry 10-11 decimal
//!   places, so amounts are `rust_decimal::Decimal` (28 significant digits), never `f64`.
//! * [`FxTable`]: dated exchange rates that convert money for comparison, recording the rate used.
//! * [`RateCard`] and [`PricingModel`]: what one offer costs and how the provider bills it
//!   (granularity, minimum charge, subscription periods, off-peak windows). The planner, the ledger
//!   and the backtest all price time through [`RateCard::cost_of_run`], so they can never disagree.
//! * [`units`]: parsing of sizes (`200GB`) and durations (`48h`) with explicit units.
//! * [`Clock`]: the only way code reads the current time, so tests and simulations can fix it.
//! * [`volume`]: storage (byte-seconds over the calendar month) and tiered, two-sided transfer.
//! * [`commitment`]: what committed contracts (hourly reservations, block + overage) bill and waste.
//! * [`forecast`]: trend + seasonal forecasts of demand and spend, with an interval.
//!
//! Nothing here performs I/O.
#![deny(missing_docs)]
#![cfg_attr(test, allow(clippy::unwrap_used))]

mod clock;
pub mod commitment;
pub mod forecast;
mod fx;
mod money;
mod pricing;
pub mod units;
pub mod volume;

pub use clock::Clock;
pub use fx::{FxError, FxRate, FxTable};
pub use money::{Currency, CurrencyError, Money, MoneyError};
pub use pricing::{Billing, OffPeakWindow, PricePer, PricingModel, RateCard, RateCardError, SECONDS_PER_HOUR};
pub use rust_decimal::{Decimal, RoundingStrategy};
