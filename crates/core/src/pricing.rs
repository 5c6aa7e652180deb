//! How one offer is billed: the price, the pricing model, the granularity and minimum charge,
//! subscription periods and off-peak windows.
//!
//! Every cost of compute time in gpubroker goes through [`RateCard::cost_of_run`] or
//! [`RateCard::cost_of_run_from`]: the planner prices a forecast with it, the ledger prices metered
//! seconds with it, and the backtest prices simulated attempts with it.

use std::fmt;
use std::str::FromStr;

use jiff::tz::TimeZone;
use jiff::{Timestamp, ToSpan};
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};

use crate::money::{Money, MoneyError};

/// Seconds in an hour.
pub const SECONDS_PER_HOUR: u64 = 3600;

/// How a price is contracted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PricingModel {
    /// Pay as you go, no commitment.
    OnDemand,
    /// Interruptible capacity (spot, preemptible, bid); may be reclaimed at any time.
    Spot,
    /// A one-year reservation or committed-use discount, billed whether used or not.
    #[serde(rename = "reserved_1y")]
    Reserved1y,
    /// A three-year reservation or committed-use discount, billed whether used or not.
    #[serde(rename = "reserved_3y")]
    Reserved3y,
    /// Any other commitment (capacity blocks, prepaid contracts).
    Committed,
    /// A prepaid daily plan (包日): whole days are paid.
    SubscriptionDay,
    /// A prepaid weekly plan (包周).
    SubscriptionWeek,
    /// A prepaid monthly plan (包月).
    SubscriptionMonth,
    /// A discounted price inside a daily time window (night discount); the on-demand price applies
    /// outside it.
    OffPeak,
}

impl PricingModel {
    /// Every model, in display order.
    pub const ALL: [PricingModel; 9] = [
        PricingModel::OnDemand,
        PricingModel::Spot,
        PricingModel::OffPeak,
        PricingModel::SubscriptionDay,
        PricingModel::SubscriptionWeek,
        PricingModel::SubscriptionMonth,
        PricingModel::Reserved1y,
        PricingModel::Reserved3y,
        PricingModel::Committed,
    ];

    /// The snake_case name used in files and JSON.
    pub fn as_str(&self) -> &'static str {
        match self {
            PricingModel::OnDemand => "on_demand",
            PricingModel::Spot => "spot",
            PricingModel::Reserved1y => "reserved_1y",
            PricingModel::Reserved3y => "reserved_3y",
            PricingModel::Committed => "committed",
            PricingModel::SubscriptionDay => "subscription_day",
            PricingModel::SubscriptionWeek => "subscription_week",
            PricingModel::SubscriptionMonth => "subscription_month",
            PricingModel::OffPeak => "off_peak",
        }
    }

    /// Long-term commitments: priced per hour, but only sensible for someone who holds (or will
    /// buy) the commitment, so the planner leaves them out unless asked.
    pub fn is_commitment(&self) -> bool {
        matches!(self, PricingModel::Reserved1y | PricingModel::Reserved3y | PricingModel::Committed)
    }

    /// Capacity the provider may reclaim.
    pub fn is_interruptible(&self) -> bool {
        matches!(self, PricingModel::Spot)
    }

    /// The period a subscription buys, if this is one.
    pub fn subscription_period(&self) -> Option<PricePer> {
        match self {
            PricingModel::SubscriptionDay => Some(PricePer::Day),
            PricingModel::SubscriptionWeek => Some(PricePer::Week),
            PricingModel::SubscriptionMonth => Some(PricePer::Month),
            _ => None,
        }
    }
}

impl fmt::Display for PricingModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for PricingModel {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let key: String = s.trim().to_ascii_lowercase().replace(['-', ' '], "_");
        Ok(match key.as_str() {
            "on_demand" | "ondemand" | "od" | "pay_as_you_go" => PricingModel::OnDemand,
            "spot" | "preemptible" | "interruptible" => PricingModel::Spot,
            "reserved_1y" | "reserved1y" | "1y" => PricingModel::Reserved1y,
            "reserved_3y" | "reserved3y" | "3y" => PricingModel::Reserved3y,
            "committed" | "commitment" => PricingModel::Committed,
            "subscription_day" | "daily" => PricingModel::SubscriptionDay,
            "subscription_week" | "weekly" => PricingModel::SubscriptionWeek,
            "subscription_month" | "monthly" => PricingModel::SubscriptionMonth,
            "off_peak" | "offpeak" | "night" => PricingModel::OffPeak,
            _ => {
                return Err(format!(
                    "unknown pricing model `{s}`: expected one of on_demand, spot, off_peak, \
                     subscription_day, subscription_week, subscription_month, reserved_1y, reserved_3y, committed"
                ));
            }
        })
    }
}

/// The unit a price is quoted per.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PricePer {
    /// Per hour.
    Hour,
    /// Per day (24 h).
    Day,
    /// Per week (168 h).
    Week,
    /// Per month, counted as 730 h (the convention AWS, GCP and Azure price sheets use).
    Month,
}

impl PricePer {
    /// Hours in one unit.
    pub fn hours(&self) -> u64 {
        match self {
            PricePer::Hour => 1,
            PricePer::Day => 24,
            PricePer::Week => 168,
            PricePer::Month => 730,
        }
    }

    /// Seconds in one unit.
    pub fn seconds(&self) -> u64 {
        self.hours() * SECONDS_PER_HOUR
    }

    /// The lowercase name.
    pub fn as_str(&self) -> &'static str {
        match self {
            PricePer::Hour => "hour",
            PricePer::Day => "day",
            PricePer::Week => "week",
            PricePer::Month => "month",
        }
    }
}

impl FromStr for PricePer {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "hour" | "h" | "hr" => Ok(PricePer::Hour),
            "day" | "d" => Ok(PricePer::Day),
            "week" | "w" => Ok(PricePer::Week),
            "month" | "mo" => Ok(PricePer::Month),
            _ => Err(format!("unknown price unit `{s}`: expected hour, day, week or month")),
        }
    }
}

/// Billing granularity and minimum charge of one launch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Billing {
    /// Time is rounded up to a multiple of this many seconds (1 = per second, 3600 = hourly).
    pub increment_s: u32,
    /// Every launch is billed at least this many seconds (AWS Linux: 60).
    pub minimum_s: u32,
}

impl Billing {
    /// Per-second billing with no minimum.
    pub const PER_SECOND: Billing = Billing { increment_s: 1, minimum_s: 0 };

    /// The seconds billed for a launch that ran `run_s` seconds.
    pub fn billed_seconds(&self, run_s: u64) -> u64 {
        let inc = u64::from(self.increment_s.max(1));
        let rounded = run_s.div_ceil(inc) * inc;
        rounded.max(u64::from(self.minimum_s))
    }
}

impl Default for Billing {
    fn default() -> Self {
        Billing::PER_SECOND
    }
}

/// A daily window in local time (`01:00-08:00 Asia/Shanghai`) during which an off-peak price
/// applies. A window whose end is before its start wraps past midnight.
#[derive(Debug, Clone, PartialEq)]
pub struct OffPeakWindow {
    /// Minutes after local midnight at which the window opens.
    pub start_minute: u16,
    /// Minutes after local midnight at which it closes.
    pub end_minute: u16,
    /// The IANA time zone the window is in.
    pub time_zone: TimeZone,
    /// The text it was parsed from, for display.
    pub text: String,
}

impl OffPeakWindow {
    /// Parses `HH:MM-HH:MM Area/City`.
    pub fn parse(text: &str) -> Result<Self, String> {
        let err = || format!("invalid off-peak window `{text}`: expected `HH:MM-HH:MM Area/City`");
        let (range, zone) = text.trim().split_once(' ').ok_or_else(err)?;
        let (a, b) = range.split_once('-').ok_or_else(err)?;
        let minute = |s: &str| -> Option<u16> {
            let (h, m) = s.split_once(':')?;
            let (h, m): (u16, u16) = (h.parse().ok()?, m.parse().ok()?);
            (h <= 24 && m < 60 && h * 60 + m <= 1440).then_some(h * 60 + m)
        };
        let start_minute = minute(a).ok_or_else(err)?;
        let end_minute = minute(b).ok_or_else(err)?;
        let time_zone = TimeZone::get(zone.trim()).map_err(|e| format!("{}: {e}", err()))?;
        if start_minute == end_minute {
            return Err(err());
        }
        Ok(OffPeakWindow { start_minute, end_minute, time_zone, text: text.trim().to_string() })
    }

    fn contains_minute(&self, minute_of_day: u16) -> bool {
        if self.start_minute < self.end_minute {
            (self.start_minute..self.end_minute).contains(&minute_of_day)
        } else {
            minute_of_day >= self.start_minute || minute_of_day < self.end_minute
        }
    }

    /// Seconds of `[start, start + run_s)` that fall inside the window.
    ///
    /// Walks the interval in pieces that end at the next local minute boundary where the
    /// window could open or close, so the answer is exact to the second across DST changes.
    pub fn seconds_inside(&self, start: Timestamp, run_s: u64) -> u64 {
        let mut inside = 0u64;
        let mut t = start;
        let end_s = start.as_second().saturating_add(run_s as i64);
        while t.as_second() < end_s {
            let zoned = t.to_zoned_datetime(self.time_zone.clone());
            let minute_of_day = (zoned.hour() as u16) * 60 + zoned.minute() as u16;
            let in_window = self.contains_minute(minute_of_day);
            // Next boundary: the next window edge in local time, found by stepping to the next
            // whole local minute that is an edge (at most a day ahead).
            let next_edge_minute = if in_window { self.end_minute } else { self.start_minute };
            let mut minutes_ahead = (i32::from(next_edge_minute) - i32::from(minute_of_day)).rem_euclid(1440);
            if minutes_ahead == 0 {
                minutes_ahead = 1440;
            }
            let seconds_into_minute = i64::from(zoned.second());
            let step = zoned
                .checked_add((minutes_ahead as i64).minutes())
                .map(|z| z.timestamp().as_second() - seconds_into_minute)
                .unwrap_or(end_s);
            let piece_end = step.clamp(t.as_second() + 1, end_s);
            if in_window {
                inside += (piece_end - t.as_second()) as u64;
            }
            t = match Timestamp::from_second(piece_end) {
                Ok(ts) => ts,
                Err(_) => break,
            };
        }
        inside
    }
}

/// What one offer costs, and how the provider bills it.
#[derive(Debug, Clone, PartialEq)]
pub struct RateCard {
    /// The contract.
    pub pricing: PricingModel,
    /// Price of the whole instance per `per`.
    pub price: Money,
    /// The unit `price` is quoted per.
    pub per: PricePer,
    /// Granularity and minimum charge.
    pub billing: Billing,
    /// For [`PricingModel::OffPeak`]: when the price applies.
    pub window: Option<OffPeakWindow>,
    /// For [`PricingModel::OffPeak`]: the hourly price outside the window (the on-demand price).
    pub outside_window_hourly: Option<Money>,
    /// Spot capacity the provider reclaims within this many seconds of launch is not charged
    /// (AWS: "interrupted by Amazon EC2 in the first instance hour"; Compshare's 1-hour
    /// protection). 0 = no such rule.
    pub free_if_preempted_within_s: u32,
}

/// A rate card that cannot price a run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RateCardError {
    /// Arithmetic failed.
    #[error(transparent)]
    Money(#[from] MoneyError),
    /// An off-peak rate card lacks its window or its outside price.
    #[error("off-peak price without a window or an on-demand price for the other hours")]
    IncompleteOffPeak,
}

impl RateCard {
    /// A plain hourly rate card.
    pub fn hourly(pricing: PricingModel, price: Money, billing: Billing) -> Self {
        RateCard {
            pricing,
            price,
            per: PricePer::Hour,
            billing,
            window: None,
            outside_window_hourly: None,
            free_if_preempted_within_s: 0,
        }
    }

    /// The equivalent price per hour (subscriptions and monthly prices spread evenly).
    pub fn hourly_price(&self) -> Result<Money, MoneyError> {
        self.price.checked_div(Decimal::from(self.per.hours()))
    }

    /// The cost of one launch that runs `run_s` seconds, for models whose price does not depend
    /// on the time of day. Subscriptions buy whole periods; everything else is billed by the
    /// second after rounding to the billing increment and minimum.
    pub fn cost_of_run(&self, run_s: u64) -> Result<Money, RateCardError> {
        if let Some(period) = self.pricing.subscription_period() {
            let periods = run_s.div_ceil(period.seconds()).max(1);
            // The price is quoted per `self.per`; scale it to the plan's period first.
            let per_period =
                self.price.checked_mul(Decimal::from(period.hours()))?.checked_div(Decimal::from(self.per.hours()))?;
            return Ok(per_period.checked_mul(Decimal::from(periods))?);
        }
        let billed = self.billing.billed_seconds(run_s);
        // Multiply before dividing so that exact prices stay exact.
        Ok(self.price.checked_mul(Decimal::from(billed))?.checked_div(Decimal::from(self.per.seconds()))?)
    }

    /// The cost of one launch that ran `run_s` seconds and ended because the provider reclaimed
    /// it (`preempted`): free when the card's first-hour rule covers it, else [`Self::cost_of_run`].
    pub fn cost_of_ended_run(&self, run_s: u64, preempted: bool) -> Result<Money, RateCardError> {
        if preempted
            && self.pricing.is_interruptible()
            && self.free_if_preempted_within_s > 0
            && run_s < u64::from(self.free_if_preempted_within_s)
        {
            return Ok(Money::zero(self.price.currency));
        }
        self.cost_of_run(run_s)
    }

    /// The cost of one launch that starts at `start` and runs `run_s` seconds. Off-peak rate
    /// cards charge their price inside the window and the on-demand price outside it; rounding
    /// to the billing increment is charged at the price in force at the end of the run.
    pub fn cost_of_run_from(&self, start: Timestamp, run_s: u64) -> Result<Money, RateCardError> {
        if self.pricing != PricingModel::OffPeak {
            return self.cost_of_run(run_s);
        }
        let (window, outside) = match (&self.window, self.outside_window_hourly) {
            (Some(w), Some(o)) => (w, o),
            _ => return Err(RateCardError::IncompleteOffPeak),
        };
        let billed = self.billing.billed_seconds(run_s);
        let inside = window.seconds_inside(start, run_s);
        let outside_s = billed - inside;
        let inside_hourly = self.hourly_price()?;
        let hour = Decimal::from(SECONDS_PER_HOUR);
        let a = inside_hourly.checked_mul(Decimal::from(inside))?.checked_div(hour)?;
        let b = outside.checked_mul(Decimal::from(outside_s))?.checked_div(hour)?;
        Ok(a.checked_add(b)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::money::Currency;
    use proptest::prelude::*;

    fn usd(s: &str) -> Money {
        Money::new(Decimal::from_str(s).unwrap(), Currency::USD)
    }

    #[test]
    fn aws_per_second_with_minute_minimum() {
        let card = RateCard::hourly(PricingModel::OnDemand, usd("3.6"), Billing { increment_s: 1, minimum_s: 60 });
        assert_eq!(card.cost_of_run(10).unwrap(), usd("0.06"));
        assert_eq!(card.cost_of_run(61).unwrap(), usd("0.061"));
        assert_eq!(card.cost_of_run(3600).unwrap(), usd("3.6"));
    }

    #[test]
    fn hourly_settlement_rounds_up() {
        let card = RateCard::hourly(PricingModel::OnDemand, usd("2"), Billing { increment_s: 3600, minimum_s: 0 });
        assert_eq!(card.cost_of_run(3601).unwrap(), usd("4"));
    }

    #[test]
    fn subscription_buys_whole_periods() {
        let card = RateCard {
            pricing: PricingModel::SubscriptionDay,
            price: Money::new(Decimal::from(40), Currency::CNY),
            per: PricePer::Day,
            billing: Billing::PER_SECOND,
            window: None,
            outside_window_hourly: None,
            free_if_preempted_within_s: 0,
        };
        let cost = card.cost_of_run(25 * 3600).unwrap();
        assert_eq!(cost, Money::new(Decimal::from(80), Currency::CNY));
        assert_eq!(card.cost_of_run(1).unwrap(), Money::new(Decimal::from(40), Currency::CNY));
    }

    #[test]
    fn off_peak_window_splits_the_run() {
        // 01:00-08:00 Shanghai = 17:00-00:00 UTC. A run from 16:00 UTC for 10 h has 7 h inside.
        let window = OffPeakWindow::parse("01:00-08:00 Asia/Shanghai").unwrap();
        let start: Timestamp = "2026-11-29T16:00:00Z".parse().unwrap();
        assert_eq!(window.seconds_inside(start, 10 * 3600), 7 * 3600);
        let card = RateCard {
            pricing: PricingModel::OffPeak,
            price: Money::new(Decimal::from_str("0.9").unwrap(), Currency::CNY),
            per: PricePer::Hour,
            billing: Billing::PER_SECOND,
            window: Some(window),
            outside_window_hourly: Some(Money::new(Decimal::ONE, Currency::CNY)),
            free_if_preempted_within_s: 0,
        };
        let cost = card.cost_of_run_from(start, 10 * 3600).unwrap();
        assert_eq!(cost, Money::new(Decimal::from_str("9.3").unwrap(), Currency::CNY));
    }

    #[test]
    fn wrapping_window() {
        let window = OffPeakWindow::parse("22:00-06:00 UTC").unwrap();
        let start: Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
        assert_eq!(window.seconds_inside(start, 24 * 3600), 8 * 3600);
        assert_eq!(window.seconds_inside(start, 3 * 24 * 3600), 24 * 3600);
    }

    #[test]
    fn spot_reclaimed_in_the_first_hour_is_free() {
        let mut card = RateCard::hourly(PricingModel::Spot, usd("3.6"), Billing { increment_s: 1, minimum_s: 60 });
        card.free_if_preempted_within_s = 3600;
        assert_eq!(card.cost_of_ended_run(3599, true).unwrap(), usd("0"));
        assert_eq!(card.cost_of_ended_run(3599, false).unwrap(), usd("3.599"), "ended by the user: billed");
        assert_eq!(card.cost_of_ended_run(3600, true).unwrap(), usd("3.6"), "reclaimed after the first hour: billed");
        card.free_if_preempted_within_s = 0;
        assert_eq!(card.cost_of_ended_run(100, true).unwrap(), usd("0.1"));
    }

    #[test]
    fn bad_window_is_rejected() {
        assert!(OffPeakWindow::parse("25:00-08:00 UTC").is_err());
        assert!(OffPeakWindow::parse("01:00-08:00 Mars/Olympus").is_err());
        assert!(OffPeakWindow::parse("01:00").is_err());
    }

    fn billing() -> impl Strategy<Value = Billing> {
        (prop_oneof![Just(1u32), Just(60), Just(3600)], prop_oneof![Just(0u32), Just(60), Just(3600)])
            .prop_map(|(increment_s, minimum_s)| Billing { increment_s, minimum_s })
    }

    proptest! {
        #[test]
        fn billed_seconds_are_never_less_than_used(b in billing(), run in 0u64..10_000_000) {
            let billed = b.billed_seconds(run);
            prop_assert!(billed >= run);
            prop_assert!(billed >= u64::from(b.minimum_s));
            prop_assert!(billed < run.max(u64::from(b.minimum_s)) + u64::from(b.increment_s));
        }

        #[test]
        fn cost_never_decreases_with_duration(b in billing(), cents in 1i64..100_000, a in 0u64..5_000_000, extra in 0u64..5_000_000) {
            let card = RateCard::hourly(PricingModel::OnDemand, Money::new(Decimal::new(cents, 2), Currency::USD), b);
            prop_assert!(card.cost_of_run(a).unwrap().amount <= card.cost_of_run(a + extra).unwrap().amount);
        }

        #[test]
        fn per_second_cost_matches_straightforward_formula(micro in 1i64..100_000_000, run in 61u64..10_000_000) {
            // Independent computation in integer micro-units times seconds.
            let price = Money::new(Decimal::new(micro, 6), Currency::USD);
            let card = RateCard::hourly(PricingModel::OnDemand, price, Billing { increment_s: 1, minimum_s: 60 });
            let expected = Decimal::from(i128::from(micro) * i128::from(run)) / Decimal::from(3_600_000_000i64);
            prop_assert_eq!(card.cost_of_run(run).unwrap().amount, expected);
        }

        /// Any billing rule (increment, minimum, per-hour or per-second) against a straightforward
        /// integer computation: price in micro-units × billed seconds ÷ 3600, exactly.
        #[test]
        fn billed_cost_matches_integer_arithmetic(b in billing(), micro in 1i64..1_000_000_000, run in 0u64..50_000_000) {
            let card = RateCard::hourly(PricingModel::OnDemand, Money::new(Decimal::new(micro, 6), Currency::USD), b);
            let inc = u64::from(b.increment_s);
            let billed = (run.div_ceil(inc) * inc).max(u64::from(b.minimum_s));
            let expected = Decimal::from_i128_with_scale(i128::from(micro) * i128::from(billed), 6) / Decimal::from(3600);
            prop_assert_eq!(card.cost_of_run(run).unwrap().amount, expected);
        }

        #[test]
        fn window_seconds_never_exceed_run(start in 1_700_000_000i64..1_900_000_000, run in 0u64..1_000_000) {
            let w = OffPeakWindow::parse("01:00-08:00 Asia/Shanghai").unwrap();
            let inside = w.seconds_inside(Timestamp::from_second(start).unwrap(), run);
            prop_assert!(inside <= run);
            // 7 of every 24 hours, give or take one partial window at each end.
            let days = run as f64 / 86_400.0;
            prop_assert!((inside as f64) <= (days * 7.0 + 7.0) * 3600.0);
        }
    }
}
