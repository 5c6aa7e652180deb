//! Storage and data transfer, priced the way providers bill them.
//!
//! * Storage is byte-seconds over the calendar month: a GB kept for the whole of a month costs
//!   one GB-month; kept for part of it, the share of that month's seconds (February's hours are
//!   fewer than March's, so an hour of February storage costs more).
//! * Data transfer is tiered by the volume already moved that month, and a transfer between two
//!   zones is charged on both sides (AWS: $0.01/GB "in/out/between EC2 AZs", each direction).

use jiff::Timestamp;
use jiff::ToSpan;
use jiff::civil::Date;
use jiff::tz::TimeZone;
use rust_decimal::Decimal;

/// The cost of keeping `gb` gigabytes from `start` to `end` at `price_per_gb_month` (UTC months).
pub fn storage_cost(gb: Decimal, start: Timestamp, end: Timestamp, price_per_gb_month: Decimal) -> Decimal {
    if end <= start || gb.is_zero() {
        return Decimal::ZERO;
    }
    let mut total = Decimal::ZERO;
    let mut month: Date = start.to_zoned_datetime(TimeZone::UTC).date().first_of_month();
    loop {
        let next = month.checked_add(1.month()).unwrap_or(month);
        let (Ok(m0), Ok(m1)) = (month.to_zoned_datetime(TimeZone::UTC), next.to_zoned_datetime(TimeZone::UTC)) else {
            break;
        };
        let (m0, m1) = (m0.timestamp().as_second(), m1.timestamp().as_second());
        if m0 >= end.as_second() || m1 <= m0 {
            break;
        }
        let overlap = end.as_second().min(m1) - start.as_second().max(m0);
        if overlap > 0 {
            total += gb * price_per_gb_month * Decimal::from(overlap) / Decimal::from(m1 - m0);
        }
        month = next;
    }
    total
}

/// The cost of moving `gb` more gigabytes in a month that has already moved `month_to_date_gb`,
/// under `tiers` (tier start in GB per month, price per GB), sorted or not.
pub fn tiered_transfer_cost(tiers: &[(Decimal, Decimal)], month_to_date_gb: Decimal, gb: Decimal) -> Decimal {
    let mut tiers = tiers.to_vec();
    tiers.sort_by_key(|t| t.0);
    let (from, to) = (month_to_date_gb.max(Decimal::ZERO), month_to_date_gb.max(Decimal::ZERO) + gb.max(Decimal::ZERO));
    let mut total = Decimal::ZERO;
    for (i, (start, price)) in tiers.iter().enumerate() {
        let end = tiers.get(i + 1).map(|t| t.0).unwrap_or(Decimal::MAX);
        let overlap = to.min(end) - from.max(*start);
        if overlap > Decimal::ZERO {
            total += overlap * price;
        }
    }
    total
}

/// Transfer between two zones: charged going out of one and coming into the other.
pub fn inter_zone_cost(gb: Decimal, price_per_gb_each_direction: Decimal) -> Decimal {
    gb * price_per_gb_each_direction * Decimal::TWO
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::str::FromStr;

    fn t(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    #[test]
    fn a_whole_month_is_one_gb_month_and_short_months_cost_more_per_hour() {
        let p = Decimal::from_str("0.10").unwrap();
        assert_eq!(
            storage_cost(Decimal::from(100), t("2026-02-01T00:00:00Z"), t("2026-03-01T00:00:00Z"), p),
            Decimal::from(10)
        );
        assert_eq!(
            storage_cost(Decimal::from(100), t("2026-03-01T00:00:00Z"), t("2026-04-01T00:00:00Z"), p),
            Decimal::from(10)
        );
        let feb_hour = storage_cost(Decimal::from(100), t("2026-02-10T00:00:00Z"), t("2026-02-10T01:00:00Z"), p);
        let mar_hour = storage_cost(Decimal::from(100), t("2026-03-10T00:00:00Z"), t("2026-03-10T01:00:00Z"), p);
        assert!(feb_hour > mar_hour);
        assert_eq!(feb_hour, Decimal::from(10) / Decimal::from(672));
    }

    #[test]
    fn tiers_follow_the_month_to_date_volume() {
        let tiers = [
            (Decimal::ZERO, Decimal::from_str("0.09").unwrap()),
            (Decimal::from(10_240), Decimal::from_str("0.085").unwrap()),
        ];
        // 1,000 GB after 10,000 already this month: 240 at 0.09, 760 at 0.085.
        let cost = tiered_transfer_cost(&tiers, Decimal::from(10_000), Decimal::from(1_000));
        assert_eq!(cost, Decimal::from_str("21.6").unwrap() + Decimal::from_str("64.6").unwrap());
        assert_eq!(inter_zone_cost(Decimal::from(100), Decimal::from_str("0.01").unwrap()), Decimal::from(2));
    }

    proptest! {
        /// Storage is additive: splitting the interval anywhere changes nothing.
        #[test]
        fn storage_is_additive(start in 1_700_000_000i64..1_800_000_000, a in 1i64..10_000_000, b in 1i64..10_000_000, gb in 1i64..100_000) {
            let p = Decimal::from_str("0.023").unwrap();
            let s = Timestamp::from_second(start).unwrap();
            let m = Timestamp::from_second(start + a).unwrap();
            let e = Timestamp::from_second(start + a + b).unwrap();
            let g = Decimal::from(gb);
            let whole = storage_cost(g, s, e, p);
            let parts = storage_cost(g, s, m, p) + storage_cost(g, m, e, p);
            prop_assert!((whole - parts).abs() < Decimal::new(1, 18), "{} vs {}", whole, parts);
        }

        /// Tiered transfer is additive over a month's transfers in any split.
        #[test]
        fn transfer_tiers_are_additive(first in 0i64..100_000, second in 0i64..100_000) {
            let tiers = [(Decimal::ZERO, Decimal::from_str("0.09").unwrap()), (Decimal::from(10_240), Decimal::from_str("0.085").unwrap()), (Decimal::from(51_200), Decimal::from_str("0.07").unwrap())];
            let (a, b) = (Decimal::from(first), Decimal::from(second));
            let together = tiered_transfer_cost(&tiers, Decimal::ZERO, a + b);
            let apart = tiered_transfer_cost(&tiers, Decimal::ZERO, a) + tiered_transfer_cost(&tiers, a, b);
            prop_assert_eq!(together, apart);
        }
    }
}
