//! The cost ledger on PostgreSQL, for a team server (`GPUBROKER_LEDGER_URL=postgres://...`).
//!
//! Same charges, same idempotency keys, same reports as the SQLite ledger. Amounts are
//! `NUMERIC(38, 11)`, so PostgreSQL adds them exactly by itself; they cross the wire as text.
//! Jobs and budgets stay in the local SQLite database for now.

use std::collections::BTreeMap;
use std::str::FromStr;

use gpubroker_core::{Currency, Decimal};
use postgres::{Client, NoTls};

use crate::charges::{Charge, ChargeSource, GroupBy, ReportRow, STANDARD_TAGS, group_key_sql, source_filter_sql};

/// A PostgreSQL problem.
#[derive(Debug, thiserror::Error)]
#[error("postgres: {0}")]
pub struct PgError(String);

impl From<postgres::Error> for PgError {
    fn from(e: postgres::Error) -> Self {
        PgError(e.to_string())
    }
}

/// The cost ledger in PostgreSQL.
pub struct PgLedger {
    client: Client,
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS charges (
    id BIGSERIAL PRIMARY KEY,
    key TEXT NOT NULL UNIQUE,
    source TEXT NOT NULL,
    provider TEXT NOT NULL,
    service TEXT NOT NULL,
    region TEXT NOT NULL,
    resource_id TEXT NOT NULL,
    instance_type TEXT NOT NULL,
    gpu TEXT NOT NULL,
    gpu_count INTEGER NOT NULL,
    pricing TEXT NOT NULL,
    start_ms BIGINT NOT NULL,
    end_ms BIGINT NOT NULL,
    billed_cost NUMERIC(38, 11) NOT NULL,
    effective_cost NUMERIC(38, 11) NOT NULL,
    list_cost NUMERIC(38, 11) NOT NULL,
    currency TEXT NOT NULL,
    tags JSONB NOT NULL,
    raw JSONB NOT NULL,
    unused BOOLEAN NOT NULL,
    tag_team TEXT,
    tag_project TEXT,
    tag_model TEXT,
    tag_user TEXT
);
CREATE INDEX IF NOT EXISTS charges_time ON charges (start_ms);
";

impl PgLedger {
    /// Connects and creates the tables if needed.
    pub fn connect(url: &str) -> Result<PgLedger, PgError> {
        let mut client = Client::connect(url, NoTls)?;
        client.batch_execute(SCHEMA)?;
        Ok(PgLedger { client })
    }

    /// Appends charges in one transaction, skipping known keys. Returns how many were new.
    pub fn add_charges(&mut self, charges: &[Charge]) -> Result<usize, PgError> {
        let mut tx = self.client.transaction()?;
        let stmt = tx.prepare(
            "INSERT INTO charges (key, source, provider, service, region, resource_id, instance_type, gpu, gpu_count, pricing,
             start_ms, end_ms, billed_cost, effective_cost, list_cost, currency, tags, raw, unused, tag_team, tag_project, tag_model, tag_user)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13::text::numeric, $14::text::numeric, $15::text::numeric, $16,
                     $17::text::jsonb, $18::text::jsonb, $19, $20, $21, $22, $23)
             ON CONFLICT (key) DO NOTHING",
        )?;
        let mut added = 0;
        for c in charges {
            let unused = c.raw.get("CommitmentDiscountStatus").is_some_and(|s| s.eq_ignore_ascii_case("unused"));
            let tags = serde_json::to_string(&c.tags).unwrap_or_else(|_| "{}".into());
            let raw = serde_json::to_string(&c.raw).unwrap_or_else(|_| "{}".into());
            let gpu_count = c.gpu_count as i32;
            added += tx.execute(
                &stmt,
                &[
                    &c.key,
                    &c.source.as_str(),
                    &c.provider,
                    &c.service,
                    &c.region,
                    &c.resource_id,
                    &c.instance_type,
                    &c.gpu,
                    &gpu_count,
                    &c.pricing,
                    &c.start_ms,
                    &c.end_ms,
                    &c.billed_cost.to_string(),
                    &c.effective_cost.to_string(),
                    &c.list_cost.to_string(),
                    &c.currency.as_str(),
                    &tags,
                    &raw,
                    &unused,
                    &c.tags.get("team"),
                    &c.tags.get("project"),
                    &c.tags.get("model"),
                    &c.tags.get("user"),
                ],
            )? as usize;
        }
        tx.commit()?;
        Ok(added)
    }

    /// Charges that overlap `[from, to)`, from the given sources (all when empty).
    pub fn charges(
        &mut self,
        from_ms: Option<i64>,
        to_ms: Option<i64>,
        sources: &[ChargeSource],
    ) -> Result<Vec<Charge>, PgError> {
        let rows = self.client.query(
            "SELECT key, source, provider, service, region, resource_id, instance_type, gpu, gpu_count, pricing, start_ms, end_ms,
                    billed_cost::text, effective_cost::text, list_cost::text, currency, tags::text, raw::text
             FROM charges WHERE end_ms > $1 AND start_ms < $2 ORDER BY id",
            &[&from_ms.unwrap_or(i64::MIN), &to_ms.unwrap_or(i64::MAX)],
        )?;
        let mut out = Vec::with_capacity(rows.len());
        for r in rows {
            let source =
                ChargeSource::parse(r.get::<_, &str>(1)).ok_or_else(|| PgError("unknown charge source".into()))?;
            if !sources.is_empty() && !sources.contains(&source) {
                continue;
            }
            let dec = |i: usize| Decimal::from_str(r.get::<_, &str>(i)).map_err(|_| PgError("bad amount".into()));
            out.push(Charge {
                key: r.get(0),
                source,
                provider: r.get(2),
                service: r.get(3),
                region: r.get(4),
                resource_id: r.get(5),
                instance_type: r.get(6),
                gpu: r.get(7),
                gpu_count: r.get::<_, i32>(8) as u32,
                pricing: r.get(9),
                start_ms: r.get(10),
                end_ms: r.get(11),
                billed_cost: dec(12)?.normalize(),
                effective_cost: dec(13)?.normalize(),
                list_cost: dec(14)?.normalize(),
                currency: r.get::<_, &str>(15).parse().map_err(|_| PgError("bad currency".into()))?,
                tags: serde_json::from_str(r.get::<_, &str>(16)).unwrap_or_default(),
                raw: serde_json::from_str::<BTreeMap<String, String>>(r.get::<_, &str>(17)).unwrap_or_default(),
            });
        }
        Ok(out)
    }

    /// A grouped report, summed exactly by PostgreSQL's NUMERIC.
    pub fn report(
        &mut self,
        by: &GroupBy,
        from_ms: Option<i64>,
        to_ms: Option<i64>,
        sources: &[ChargeSource],
    ) -> Result<Vec<(ReportRow, Currency)>, PgError> {
        let key_sql = group_key_sql(by).unwrap_or_else(|| match by {
            GroupBy::Day => "to_char(to_timestamp(start_ms / 1000) AT TIME ZONE 'UTC', 'YYYY-MM-DD')".into(),
            GroupBy::Month => "to_char(to_timestamp(start_ms / 1000) AT TIME ZONE 'UTC', 'YYYY-MM')".into(),
            _ => "COALESCE(tags->>$3, '(untagged)')".into(),
        });
        let source_sql = source_filter_sql(sources);
        let sql = format!(
            "SELECT {key_sql} AS k, currency, SUM(billed_cost)::text, SUM(effective_cost)::text, SUM(list_cost)::text,
                    SUM(gpu_count::bigint * GREATEST(end_ms - start_ms, 0))::text, COUNT(*), COALESCE(SUM(effective_cost) FILTER (WHERE unused), 0)::text
             FROM charges WHERE end_ms > $1 AND start_ms < $2{source_sql} GROUP BY k, currency"
        );
        let from = from_ms.unwrap_or(i64::MIN);
        let to = to_ms.unwrap_or(i64::MAX);
        let rows = match by {
            GroupBy::Tag(k) if !STANDARD_TAGS.contains(&k.as_str()) => self.client.query(&sql, &[&from, &to, k])?,
            _ => self.client.query(&sql, &[&from, &to])?,
        };
        let mut out = Vec::with_capacity(rows.len());
        for r in rows {
            let dec = |i: usize| {
                Decimal::from_str(r.get::<_, &str>(i)).map(|d| d.normalize()).map_err(|_| PgError("bad sum".into()))
            };
            let currency: Currency = r.get::<_, &str>(1).parse().map_err(|_| PgError("bad currency".into()))?;
            out.push((
                ReportRow {
                    key: r.get(0),
                    billed_cost: dec(2)?,
                    effective_cost: dec(3)?,
                    list_cost: dec(4)?,
                    gpu_hours: dec(5)? / Decimal::from(3_600_000),
                    charges: r.get::<_, i64>(6) as usize,
                    unused_commitment: dec(7)?,
                },
                currency,
            ));
        }
        Ok(out)
    }
}
