//! Commitments: what a committed contract bills, what its usage effectively costs, and how much
//! of it is wasted. Pure arithmetic on exact decimals, shared by the ledger's contract status
//! and (later) the commitment planner.

use rust_decimal::Decimal;
use serde::Serialize;

/// The outcome of a commitment over a period.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct CommitmentBill {
    /// The commitment fee, paid whether used or not.
    pub commitment: Decimal,
    /// Usage beyond the commitment, at the overage (or on-demand) rate.
    pub overage: Decimal,
    /// `commitment + overage`: what is invoiced.
    pub billed: Decimal,
    /// Usage units the commitment covered.
    pub covered_units: Decimal,
    /// Usage units beyond it.
    pub overage_units: Decimal,
    /// The share of the commitment fee that paid for nothing.
    pub unused: Decimal,
}

impl CommitmentBill {
    /// Share of the commitment that was used, 0..=1 (1 when nothing was committed).
    pub fn utilization(&self, committed_units: Decimal) -> Decimal {
        if committed_units.is_zero() { Decimal::ONE } else { self.covered_units / committed_units }
    }

    /// Share of the usage the commitment covered, 0..=1 (1 when nothing was used).
    pub fn coverage(&self) -> Decimal {
        let used = self.covered_units + self.overage_units;
        if used.is_zero() { Decimal::ONE } else { self.covered_units / used }
    }
}

/// A block contract (commitment + overage): `block_units` per period at `block_rate` each, paid
/// in full; usage beyond the block at `overage_rate`.
pub fn block_commitment(
    used_units: Decimal,
    block_units: Decimal,
    block_rate: Decimal,
    overage_rate: Decimal,
) -> CommitmentBill {
    let used = used_units.max(Decimal::ZERO);
    let covered = used.min(block_units);
    let over = used - covered;
    let commitment = block_units * block_rate;
    let overage = over * overage_rate;
    CommitmentBill {
        commitment,
        overage,
        billed: commitment + overage,
        covered_units: covered,
        overage_units: over,
        unused: (block_units - covered) * block_rate,
    }
}

/// An hourly use-it-or-lose-it commitment (reserved instances, savings plans): each hour,
/// `committed_per_hour` units are paid at `commit_rate` whether used or not; usage above them
/// in that hour pays `on_demand_rate`. An hour's unused commitment cannot move to another hour.
pub fn hourly_commitment(
    usage_per_hour: &[Decimal],
    committed_per_hour: Decimal,
    commit_rate: Decimal,
    on_demand_rate: Decimal,
) -> CommitmentBill {
    let mut bill = CommitmentBill {
        commitment: Decimal::ZERO,
        overage: Decimal::ZERO,
        billed: Decimal::ZERO,
        covered_units: Decimal::ZERO,
        overage_units: Decimal::ZERO,
        unused: Decimal::ZERO,
    };
    for &used in usage_per_hour {
        let hour = block_commitment(used, committed_per_hour, commit_rate, on_demand_rate);
        bill.commitment += hour.commitment;
        bill.overage += hour.overage;
        bill.billed += hour.billed;
        bill.covered_units += hour.covered_units;
        bill.overage_units += hour.overage_units;
        bill.unused += hour.unused;
    }
    bill
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn d(cents: i64) -> Decimal {
        Decimal::new(cents, 2)
    }

    #[test]
    fn block_contract_with_overage() {
        // 720 GPU-hours at 2.00 committed; 800 used: 80 at 3.00 overage.
        let b = block_commitment(Decimal::from(800), Decimal::from(720), d(200), d(300));
        assert_eq!(
            (b.commitment, b.overage, b.billed, b.unused),
            (Decimal::from(1440), Decimal::from(240), Decimal::from(1680), Decimal::ZERO)
        );
        // 600 used: 120 committed hours wasted.
        let b = block_commitment(Decimal::from(600), Decimal::from(720), d(200), d(300));
        assert_eq!((b.billed, b.unused), (Decimal::from(1440), Decimal::from(240)));
        assert_eq!(b.utilization(Decimal::from(720)), Decimal::from(600) / Decimal::from(720));
    }

    #[test]
    fn hourly_commitment_is_use_it_or_lose_it() {
        // 2 GPUs committed per hour; an hour with 0 and an hour with 4 do not cancel out.
        let b = hourly_commitment(&[Decimal::ZERO, Decimal::from(4)], Decimal::from(2), d(100), d(300));
        assert_eq!(b.commitment, Decimal::from(4));
        assert_eq!(b.overage, Decimal::from(6));
        assert_eq!(b.unused, Decimal::from(2));
    }

    proptest! {
        /// Against a straightforward unit-by-unit count: every used unit is either covered or
        /// overage, the fee splits exactly into used and unused, nothing is lost.
        #[test]
        fn hourly_commitment_matches_a_unit_count(hours in proptest::collection::vec(0u32..20, 1..100), committed in 0u32..10, commit_cents in 1i64..1000, od_cents in 1i64..5000) {
            let usage: Vec<Decimal> = hours.iter().map(|h| Decimal::from(*h)).collect();
            let b = hourly_commitment(&usage, Decimal::from(committed), d(commit_cents), d(od_cents));
            let (mut covered, mut over, mut idle) = (0u64, 0u64, 0u64);
            for h in &hours {
                for unit in 0..(*h).max(committed) {
                    match (unit < committed, unit < *h) {
                        (true, true) => covered += 1,
                        (true, false) => idle += 1,
                        (false, true) => over += 1,
                        (false, false) => {}
                    }
                }
            }
            prop_assert_eq!(b.covered_units, Decimal::from(covered));
            prop_assert_eq!(b.overage_units, Decimal::from(over));
            prop_assert_eq!(b.unused, Decimal::from(idle) * d(commit_cents));
            prop_assert_eq!(b.billed, b.commitment + b.overage);
            prop_assert_eq!(b.commitment, Decimal::from(covered + idle) * d(commit_cents));
        }
    }
}
