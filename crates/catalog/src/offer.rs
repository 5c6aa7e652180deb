use std::fmt;
use std::str::FromStr;

use gpubroker_core::{Money, RateCard};
use jiff::civil::Date;
use rust_decimal::Decimal;
use serde::Serialize;

/// AWS Spot Advisor's "frequency of interruption": the share of spot instances of a type that
/// AWS reclaimed in the trailing month.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum InterruptionBucket {
    /// `<5%`
    Under5,
    /// `5-10%`
    From5To10,
    /// `10-15%`
    From10To15,
    /// `15-20%`
    From15To20,
    /// `>20%`
    Over20,
}

impl InterruptionBucket {
    /// The bucket's label as AWS writes it.
    pub fn label(&self) -> &'static str {
        match self {
            InterruptionBucket::Under5 => "<5%",
            InterruptionBucket::From5To10 => "5-10%",
            InterruptionBucket::From10To15 => "10-15%",
            InterruptionBucket::From15To20 => "15-20%",
            InterruptionBucket::Over20 => ">20%",
        }
    }

    /// A point estimate of the monthly interruption probability: the bucket's midpoint, and 30%
    /// for the open-ended top bucket (a pessimistic reading).
    pub fn monthly_probability(&self) -> f64 {
        match self {
            InterruptionBucket::Under5 => 0.025,
            InterruptionBucket::From5To10 => 0.075,
            InterruptionBucket::From10To15 => 0.125,
            InterruptionBucket::From15To20 => 0.175,
            InterruptionBucket::Over20 => 0.30,
        }
    }

    /// Interruptions per instance-hour, assuming a constant hazard over a 730-hour month.
    pub fn hourly_rate(&self) -> f64 {
        -(1.0 - self.monthly_probability()).ln() / 730.0
    }
}

impl FromStr for InterruptionBucket {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t: String = s.chars().filter(|c| !c.is_whitespace()).collect();
        Ok(match t.as_str() {
            "<5%" => InterruptionBucket::Under5,
            "5-10%" => InterruptionBucket::From5To10,
            "10-15%" => InterruptionBucket::From10To15,
            "15-20%" => InterruptionBucket::From15To20,
            ">20%" => InterruptionBucket::Over20,
            _ => return Err(format!("unknown interruption bucket `{s}`: expected <5%, 5-10%, 10-15%, 15-20% or >20%")),
        })
    }
}

impl fmt::Display for InterruptionBucket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

/// One way to rent GPUs: an instance type in a region (or zone) under one pricing model.
#[derive(Debug, Clone, PartialEq)]
pub struct Offer {
    /// Provider id (`aws`, `compshare`).
    pub provider: String,
    /// Region id, or `*` when the price is not region-specific.
    pub region: String,
    /// Zone id when the row is zone-specific.
    pub zone: Option<String>,
    /// Instance type.
    pub instance_type: String,
    /// Canonical GPU name (a key of the catalog's GPU table).
    pub gpu: String,
    /// GPUs per instance.
    pub gpu_count: u32,
    /// Host vCPUs.
    pub vcpus: Option<f64>,
    /// Host memory, GiB.
    pub memory_gib: Option<f64>,
    /// The price and how it is billed.
    pub rate: RateCard,
    /// Spot interruption frequency, where known.
    pub spot_interruption: Option<InterruptionBucket>,
    /// Where the price comes from.
    pub source: String,
    /// When it was observed.
    pub as_of: Date,
    /// Caveats.
    pub notes: String,
}

impl Offer {
    /// A stable identity for tie-breaking and de-duplication.
    pub fn key(&self) -> String {
        format!(
            "{}/{}/{}/{}/{}/{}",
            self.provider,
            self.region,
            self.zone.as_deref().unwrap_or("-"),
            self.instance_type,
            self.rate.pricing,
            self.rate.per.as_str()
        )
    }

    /// The hourly price of the whole instance in its own currency.
    pub fn hourly_price(&self) -> Money {
        // `per.hours()` is never zero, so the division cannot fail.
        self.rate.hourly_price().unwrap_or(self.rate.price)
    }
}

/// A kind of data transfer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TransferKind {
    /// Out to the internet (or another provider).
    InternetEgress,
    /// Between two regions of one provider.
    InterRegion,
    /// Between two zones of one region.
    InterZone,
    /// Into the provider.
    Ingress,
}

impl FromStr for TransferKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(match s.trim() {
            "internet_egress" => TransferKind::InternetEgress,
            "inter_region" => TransferKind::InterRegion,
            "inter_zone" => TransferKind::InterZone,
            "ingress" => TransferKind::Ingress,
            _ => {
                return Err(format!(
                    "unknown transfer kind `{s}`: expected internet_egress, inter_region, inter_zone or ingress"
                ));
            }
        })
    }
}

/// One tier of a data transfer price.
#[derive(Debug, Clone, PartialEq)]
pub struct TransferPrice {
    /// Provider id.
    pub provider: String,
    /// Region id or `*`.
    pub region: String,
    /// What kind of transfer.
    pub kind: TransferKind,
    /// Tier start, GB per month.
    pub from_gb: Decimal,
    /// Price per GB in this tier.
    pub price_per_gb: Money,
    /// Source.
    pub source: String,
    /// Date.
    pub as_of: Date,
}

/// A kind of storage.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StorageKind {
    /// A disk attached to the instance.
    Block,
    /// Object storage (buckets).
    Object,
}

impl FromStr for StorageKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim() {
            "block" => Ok(StorageKind::Block),
            "object" => Ok(StorageKind::Object),
            _ => Err(format!("unknown storage kind `{s}`: expected block or object")),
        }
    }
}

/// A storage price.
#[derive(Debug, Clone, PartialEq)]
pub struct StoragePrice {
    /// Provider id.
    pub provider: String,
    /// Region id or `*`.
    pub region: String,
    /// Block or object.
    pub kind: StorageKind,
    /// Price per GB-month (730 h).
    pub price_per_gb_month: Money,
    /// Source.
    pub source: String,
    /// Date.
    pub as_of: Date,
}
