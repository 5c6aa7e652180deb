//! Budgets and the alerts they have fired (each threshold once per period).

use std::collections::BTreeMap;

use rusqlite::{OptionalExtension, params};

use crate::store::{Store, StoreError};

/// A budget.
#[derive(Debug, Clone, PartialEq)]
pub struct Budget {
    /// Name.
    pub name: String,
    /// Scope: every `key=value` must match a charge (tag, or `provider`).
    pub scope: BTreeMap<String, String>,
    /// Amount, exact decimal text.
    pub amount: String,
    /// Currency.
    pub currency: String,
    /// `daily`, `weekly`, `monthly`.
    pub period: String,
    /// Alert thresholds, percent.
    pub alerts: Vec<u32>,
    /// Alert on forecast too.
    pub forecast: bool,
    /// Webhook URL.
    pub webhook: Option<String>,
    /// Refuse launches over the amount.
    pub enforce: bool,
    /// Stop running jobs in the scope when spend reaches the amount.
    pub stop_running: bool,
}

impl Store {
    /// Creates or replaces a budget.
    pub fn set_budget(&self, b: &Budget) -> Result<(), StoreError> {
        self.conn()
            .execute(
                "INSERT INTO budgets (name, scope, amount, currency, period, alerts, forecast, webhook, enforce, stop_running)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)
                 ON CONFLICT(name) DO UPDATE SET scope = ?2, amount = ?3, currency = ?4, period = ?5, alerts = ?6,
                     forecast = ?7, webhook = ?8, enforce = ?9, stop_running = ?10",
                params![
                    b.name,
                    serde_json::to_string(&b.scope).unwrap_or_default(),
                    b.amount,
                    b.currency,
                    b.period,
                    serde_json::to_string(&b.alerts).unwrap_or_default(),
                    b.forecast,
                    b.webhook,
                    b.enforce,
                    b.stop_running
                ],
            )
            .map_err(|e| self.wrap(e))?;
        Ok(())
    }

    /// Every budget, by name.
    pub fn budgets(&self) -> Result<Vec<Budget>, StoreError> {
        let mut stmt = self
            .conn()
            .prepare("SELECT name, scope, amount, currency, period, alerts, forecast, webhook, enforce, stop_running FROM budgets ORDER BY name")
            .map_err(|e| self.wrap(e))?;
        let rows = stmt
            .query_map([], |r| {
                let scope: String = r.get(1)?;
                let alerts: String = r.get(5)?;
                Ok(Budget {
                    name: r.get(0)?,
                    scope: serde_json::from_str(&scope).unwrap_or_default(),
                    amount: r.get(2)?,
                    currency: r.get(3)?,
                    period: r.get(4)?,
                    alerts: serde_json::from_str(&alerts).unwrap_or_default(),
                    forecast: r.get(6)?,
                    webhook: r.get(7)?,
                    enforce: r.get(8)?,
                    stop_running: r.get(9)?,
                })
            })
            .map_err(|e| self.wrap(e))?;
        rows.collect::<Result<Vec<_>, _>>().map_err(|e| self.wrap(e))
    }

    /// Records that `budget` crossed `threshold` (`kind` = `actual` or `forecast`) in the period
    /// starting `period_start_ms`. Returns `true` only the first time, so each alert fires once.
    pub fn record_alert(
        &self,
        budget: &str,
        period_start_ms: i64,
        threshold: u32,
        kind: &str,
        amount: &str,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        let n = self
            .conn()
            .execute(
                "INSERT OR IGNORE INTO budget_alerts (budget, period_start, threshold, kind, amount, fired_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![budget, period_start_ms, threshold, kind, amount, now_ms],
            )
            .map_err(|e| self.wrap(e))?;
        Ok(n > 0)
    }

    /// Alerts fired for a budget in a period: (threshold, kind, when).
    pub fn alerts_fired(&self, budget: &str, period_start_ms: i64) -> Result<Vec<(u32, String, i64)>, StoreError> {
        let mut stmt = self
            .conn()
            .prepare("SELECT threshold, kind, fired_at FROM budget_alerts WHERE budget = ?1 AND period_start = ?2 ORDER BY fired_at, threshold")
            .map_err(|e| self.wrap(e))?;
        let rows = stmt
            .query_map(params![budget, period_start_ms], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .map_err(|e| self.wrap(e))?;
        rows.collect::<Result<Vec<_>, _>>().map_err(|e| self.wrap(e))
    }

    /// A budget by name.
    pub fn budget(&self, name: &str) -> Result<Option<Budget>, StoreError> {
        let exists: Option<String> = self
            .conn()
            .query_row("SELECT name FROM budgets WHERE name = ?1", params![name], |r| r.get(0))
            .optional()
            .map_err(|e| self.wrap(e))?;
        Ok(match exists {
            Some(_) => self.budgets()?.into_iter().find(|b| b.name == name),
            None => None,
        })
    }
}
