//! Committed contracts: hourly reservations and block (commitment + overage) contracts.

use std::collections::BTreeMap;

use rusqlite::params;

use crate::store::{Store, StoreError};

/// A contract.
#[derive(Debug, Clone, PartialEq)]
pub struct Contract {
    /// Name.
    pub name: String,
    /// Usage it covers: every `key=value` must match a charge (tag, or `provider`).
    pub scope: BTreeMap<String, String>,
    /// `hourly` (GPUs reserved every hour) or `block` (GPU-hours per period).
    pub kind: String,
    /// GPUs per hour (`hourly`) or GPU-hours per period (`block`).
    pub units: String,
    /// Price per committed GPU-hour, exact decimal text.
    pub rate: String,
    /// Price per GPU-hour beyond the commitment.
    pub overage_rate: String,
    /// Currency of the rates.
    pub currency: String,
    /// `daily`, `weekly`, `monthly`.
    pub period: String,
}

impl Store {
    /// Creates or replaces a contract.
    pub fn set_contract(&self, c: &Contract) -> Result<(), StoreError> {
        self.conn()
            .execute(
                "INSERT INTO contracts (name, scope, kind, units, rate, overage_rate, currency, period) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
                 ON CONFLICT(name) DO UPDATE SET scope = ?2, kind = ?3, units = ?4, rate = ?5, overage_rate = ?6, currency = ?7, period = ?8",
                params![c.name, serde_json::to_string(&c.scope).unwrap_or_default(), c.kind, c.units, c.rate, c.overage_rate, c.currency, c.period],
            )
            .map_err(|e| self.wrap(e))?;
        Ok(())
    }

    /// Every contract, by name.
    pub fn contracts(&self) -> Result<Vec<Contract>, StoreError> {
        let mut stmt = self
            .conn()
            .prepare(
                "SELECT name, scope, kind, units, rate, overage_rate, currency, period FROM contracts ORDER BY name",
            )
            .map_err(|e| self.wrap(e))?;
        let rows = stmt
            .query_map([], |r| {
                let scope: String = r.get(1)?;
                Ok(Contract {
                    name: r.get(0)?,
                    scope: serde_json::from_str(&scope).unwrap_or_default(),
                    kind: r.get(2)?,
                    units: r.get(3)?,
                    rate: r.get(4)?,
                    overage_rate: r.get(5)?,
                    currency: r.get(6)?,
                    period: r.get(7)?,
                })
            })
            .map_err(|e| self.wrap(e))?;
        rows.collect::<Result<Vec<_>, _>>().map_err(|e| self.wrap(e))
    }
}
