//! Where to place the next attempt after a preemption (SkyPilot's FAILOVER and EAGER_NEXT_REGION,
//! plus deadline-aware fallback). Pure: a function of the failed placement and the candidates.

use serde::{Deserialize, Serialize};

/// A recovery strategy, chosen per task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum RecoveryStrategy {
    /// Retry the same zone first (the capacity often comes back; data stays local).
    #[default]
    SameZone,
    /// Move to the next-cheapest zone or region right away (SkyPilot EAGER_NEXT_REGION).
    NextCheapest,
    /// Fall back to on-demand for the rest of the job.
    OnDemand,
}

impl RecoveryStrategy {
    /// Parses `same_zone`, `next_cheapest`, `on_demand` (also SkyPilot's `failover`, `eager_next_region`).
    pub fn parse(s: &str) -> Option<RecoveryStrategy> {
        match s.trim().to_ascii_lowercase().replace('-', "_").as_str() {
            "same_zone" | "failover" => Some(RecoveryStrategy::SameZone),
            "next_cheapest" | "eager_next_region" => Some(RecoveryStrategy::NextCheapest),
            "on_demand" | "fallback" => Some(RecoveryStrategy::OnDemand),
            _ => None,
        }
    }
}

/// A place an attempt can run.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    /// Zone (or region) name.
    pub zone: String,
    /// Spot or on-demand.
    pub spot: bool,
    /// Price per hour.
    pub hourly_price: f64,
}

/// The next placement after `failed` was preempted, from `candidates` (cheapest first is not
/// assumed). `None` when nothing is left to try.
pub fn next_placement<'a>(
    strategy: RecoveryStrategy,
    failed: &Candidate,
    candidates: &'a [Candidate],
) -> Option<&'a Candidate> {
    let cheapest = |filter: &dyn Fn(&&Candidate) -> bool| {
        candidates
            .iter()
            .filter(filter)
            .min_by(|a, b| a.hourly_price.total_cmp(&b.hourly_price).then(a.zone.cmp(&b.zone)))
    };
    match strategy {
        RecoveryStrategy::SameZone => cheapest(&|c| c.zone == failed.zone && c.spot == failed.spot)
            .or_else(|| cheapest(&|c| c.spot == failed.spot && c.zone != failed.zone))
            .or_else(|| cheapest(&|c| !c.spot)),
        RecoveryStrategy::NextCheapest => cheapest(&|c| c.spot == failed.spot && c.zone != failed.zone)
            .or_else(|| cheapest(&|c| c.zone == failed.zone && c.spot == failed.spot))
            .or_else(|| cheapest(&|c| !c.spot)),
        RecoveryStrategy::OnDemand => cheapest(&|c| !c.spot),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(zone: &str, spot: bool, price: f64) -> Candidate {
        Candidate { zone: zone.into(), spot, hourly_price: price }
    }

    #[test]
    fn strategies_pick_as_documented() {
        let all = [c("a", true, 1.0), c("b", true, 1.2), c("c", true, 0.9), c("a", false, 3.0), c("b", false, 2.9)];
        let failed = c("a", true, 1.0);
        assert_eq!(next_placement(RecoveryStrategy::SameZone, &failed, &all), Some(&all[0]));
        assert_eq!(next_placement(RecoveryStrategy::NextCheapest, &failed, &all), Some(&all[2]));
        assert_eq!(next_placement(RecoveryStrategy::OnDemand, &failed, &all), Some(&all[4]));
        // Nothing spot left: every strategy falls back to on-demand.
        let od_only = [c("a", false, 3.0)];
        for s in [RecoveryStrategy::SameZone, RecoveryStrategy::NextCheapest] {
            assert_eq!(next_placement(s, &failed, &od_only), Some(&od_only[0]));
        }
        assert_eq!(RecoveryStrategy::parse("EAGER_NEXT_REGION"), Some(RecoveryStrategy::NextCheapest));
    }
}
