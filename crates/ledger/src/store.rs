use std::fmt;
use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, params};

/// A database problem. Names the database file.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// SQLite failed.
    #[error("{path}: {source}")]
    Sqlite {
        /// The database file.
        path: String,
        /// The cause.
        #[source]
        source: rusqlite::Error,
    },
    /// A row holds a value this version does not know.
    #[error("{path}: corrupt row: {message}")]
    Corrupt {
        /// The database file.
        path: String,
        /// What is wrong.
        message: String,
    },
    /// No such job.
    #[error("no job with id {0}")]
    NoSuchJob(i64),
}

/// Where a job is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum JobState {
    /// Waiting to be placed.
    Pending,
    /// An attempt is being launched.
    Provisioning,
    /// An attempt is running.
    Running,
    /// The last attempt was preempted; a new placement is being chosen.
    Recovering,
    /// Finished successfully.
    Succeeded,
    /// Finished with an error, or was stopped (over budget, out of restarts).
    Failed,
    /// Cancelled by a user.
    Cancelled,
}

impl JobState {
    /// Whether the job is done for good.
    pub fn is_terminal(&self) -> bool {
        matches!(self, JobState::Succeeded | JobState::Failed | JobState::Cancelled)
    }

    /// The upper-case name used in tables.
    pub fn as_str(&self) -> &'static str {
        match self {
            JobState::Pending => "PENDING",
            JobState::Provisioning => "PROVISIONING",
            JobState::Running => "RUNNING",
            JobState::Recovering => "RECOVERING",
            JobState::Succeeded => "SUCCEEDED",
            JobState::Failed => "FAILED",
            JobState::Cancelled => "CANCELLED",
        }
    }
}

impl fmt::Display for JobState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for JobState {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(match s {
            "PENDING" => JobState::Pending,
            "PROVISIONING" => JobState::Provisioning,
            "RUNNING" => JobState::Running,
            "RECOVERING" => JobState::Recovering,
            "SUCCEEDED" => JobState::Succeeded,
            "FAILED" => JobState::Failed,
            "CANCELLED" => JobState::Cancelled,
            other => return Err(format!("unknown job state `{other}`")),
        })
    }
}

/// Where an attempt is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AttemptState {
    /// Intent written; the backend may or may not have launched it.
    Launching,
    /// Running.
    Running,
    /// Exited 0.
    Succeeded,
    /// Exited with an error.
    Failed,
    /// Reclaimed by the provider (or killed from outside).
    Preempted,
    /// Terminated by gpubroker (cancel, budget, policy switch).
    Terminated,
}

impl AttemptState {
    /// The lower-case name.
    pub fn as_str(&self) -> &'static str {
        match self {
            AttemptState::Launching => "launching",
            AttemptState::Running => "running",
            AttemptState::Succeeded => "succeeded",
            AttemptState::Failed => "failed",
            AttemptState::Preempted => "preempted",
            AttemptState::Terminated => "terminated",
        }
    }

    /// Whether the attempt has ended.
    pub fn is_over(&self) -> bool {
        !matches!(self, AttemptState::Launching | AttemptState::Running)
    }
}

impl FromStr for AttemptState {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(match s {
            "launching" => AttemptState::Launching,
            "running" => AttemptState::Running,
            "succeeded" => AttemptState::Succeeded,
            "failed" => AttemptState::Failed,
            "preempted" => AttemptState::Preempted,
            "terminated" => AttemptState::Terminated,
            other => return Err(format!("unknown attempt state `{other}`")),
        })
    }
}

/// A job row.
#[derive(Debug, Clone, PartialEq)]
pub struct Job {
    /// Id.
    pub id: i64,
    /// Name.
    pub name: String,
    /// The spec, JSON (owned by the controller).
    pub spec: String,
    /// Queue.
    pub queue: String,
    /// Higher runs first.
    pub priority: i64,
    /// State.
    pub state: JobState,
    /// A user asked to cancel it.
    pub cancel_requested: bool,
    /// Submitted, Unix ms.
    pub submitted_at_ms: i64,
    /// Last change, Unix ms.
    pub updated_at_ms: i64,
    /// Why it is in its state (last message).
    pub message: Option<String>,
}

/// An attempt row.
#[derive(Debug, Clone, PartialEq)]
pub struct Attempt {
    /// Row id.
    pub id: i64,
    /// Job.
    pub job_id: i64,
    /// 1, 2, ...
    pub attempt: i64,
    /// Idempotency key `{job}-{attempt}`.
    pub key: String,
    /// Backend name.
    pub backend: String,
    /// Where it runs (zone, GPU slots), as the backend describes it.
    pub placement: String,
    /// Pricing model.
    pub pricing: String,
    /// Price per hour of the placement, exact decimal text.
    pub hourly_price: String,
    /// Its currency.
    pub currency: String,
    /// State.
    pub state: AttemptState,
    /// When the intent was written, Unix ms.
    pub intent_at_ms: i64,
    /// When the backend reported it running, Unix ms.
    pub started_at_ms: Option<i64>,
    /// When it ended, Unix ms.
    pub ended_at_ms: Option<i64>,
    /// Exit code, if it exited.
    pub exit_code: Option<i64>,
    /// Why it ended.
    pub reason: Option<String>,
}

impl Attempt {
    /// Money spent by the attempt by `now_ms` (or its end), in its currency: its hourly price
    /// per second, whole seconds rounded up as per-second billing does.
    pub fn cost(&self, now_ms: i64) -> gpubroker_core::Decimal {
        use gpubroker_core::Decimal;
        let Some(start) = self.started_at_ms else { return Decimal::ZERO };
        let end = self.ended_at_ms.unwrap_or(now_ms).max(start);
        let price = Decimal::from_str(&self.hourly_price).unwrap_or(Decimal::ZERO);
        let seconds = (end - start + 999) / 1000;
        price * Decimal::from(seconds) / Decimal::from(3600)
    }
}

/// A logged transition.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// Job.
    pub job_id: i64,
    /// When, Unix ms.
    pub at_ms: i64,
    /// What kind (`submitted`, `launch-intent`, `running`, `preempted`, ...).
    pub kind: String,
    /// Details.
    pub detail: String,
}

/// The database.
pub struct Store {
    conn: Connection,
    path: String,
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS jobs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL,
    spec TEXT NOT NULL,
    queue TEXT NOT NULL,
    priority INTEGER NOT NULL,
    state TEXT NOT NULL,
    cancel_requested INTEGER NOT NULL DEFAULT 0,
    submitted_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    message TEXT,
    tags TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX IF NOT EXISTS jobs_state ON jobs(state);
CREATE TABLE IF NOT EXISTS attempts (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    job_id INTEGER NOT NULL REFERENCES jobs(id),
    attempt INTEGER NOT NULL,
    key TEXT NOT NULL UNIQUE,
    backend TEXT NOT NULL,
    placement TEXT NOT NULL,
    pricing TEXT NOT NULL,
    hourly_price TEXT NOT NULL,
    currency TEXT NOT NULL,
    state TEXT NOT NULL,
    intent_at INTEGER NOT NULL,
    started_at INTEGER,
    ended_at INTEGER,
    exit_code INTEGER,
    reason TEXT,
    UNIQUE (job_id, attempt)
);
CREATE TABLE IF NOT EXISTS events (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    job_id INTEGER NOT NULL,
    at INTEGER NOT NULL,
    kind TEXT NOT NULL,
    detail TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS events_job ON events(job_id);
CREATE TABLE IF NOT EXISTS charges (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
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
    start_ms INTEGER NOT NULL,
    end_ms INTEGER NOT NULL,
    billed_cost TEXT NOT NULL,
    effective_cost TEXT NOT NULL,
    list_cost TEXT NOT NULL,
    currency TEXT NOT NULL,
    tags TEXT NOT NULL,
    raw TEXT NOT NULL DEFAULT '',
    billed_u INTEGER NOT NULL DEFAULT 0,
    billed_f INTEGER NOT NULL DEFAULT 0,
    effective_u INTEGER NOT NULL DEFAULT 0,
    effective_f INTEGER NOT NULL DEFAULT 0,
    list_u INTEGER NOT NULL DEFAULT 0,
    list_f INTEGER NOT NULL DEFAULT 0,
    gpu_ms INTEGER NOT NULL DEFAULT 0,
    unused INTEGER NOT NULL DEFAULT 0,
    -- The attribution tags every report uses, as columns: grouping by them needs no JSON parsing.
    tag_team TEXT,
    tag_project TEXT,
    tag_model TEXT,
    tag_user TEXT
);
CREATE INDEX IF NOT EXISTS charges_time ON charges(start_ms);
CREATE TABLE IF NOT EXISTS gpu_samples (
    resource_id TEXT NOT NULL,
    gpu INTEGER NOT NULL,
    at_ms INTEGER NOT NULL,
    util_pct REAL NOT NULL,
    PRIMARY KEY (resource_id, gpu, at_ms)
);
CREATE TABLE IF NOT EXISTS contracts (
    name TEXT PRIMARY KEY,
    scope TEXT NOT NULL,
    kind TEXT NOT NULL,
    units TEXT NOT NULL,
    rate TEXT NOT NULL,
    overage_rate TEXT NOT NULL,
    currency TEXT NOT NULL,
    period TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS budgets (
    name TEXT PRIMARY KEY,
    scope TEXT NOT NULL,
    amount TEXT NOT NULL,
    currency TEXT NOT NULL,
    period TEXT NOT NULL,
    alerts TEXT NOT NULL,
    forecast INTEGER NOT NULL,
    webhook TEXT,
    enforce INTEGER NOT NULL,
    stop_running INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS budget_alerts (
    budget TEXT NOT NULL,
    period_start INTEGER NOT NULL,
    threshold INTEGER NOT NULL,
    kind TEXT NOT NULL,
    amount TEXT NOT NULL,
    fired_at INTEGER NOT NULL,
    PRIMARY KEY (budget, period_start, threshold, kind)
);
";

impl Store {
    /// Opens (creating if needed) the database at `path`.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        let shown = path.display().to_string();
        let wrap = |source| StoreError::Sqlite { path: shown.clone(), source };
        let conn = Connection::open(path).map_err(wrap)?;
        conn.busy_timeout(Duration::from_secs(10)).map_err(wrap)?;
        conn.pragma_update(None, "journal_mode", "WAL").map_err(wrap)?;
        // FULL: a committed transaction is on disk before commit returns (survives power loss).
        conn.pragma_update(None, "synchronous", "FULL").map_err(wrap)?;
        conn.pragma_update(None, "foreign_keys", "ON").map_err(wrap)?;
        conn.execute_batch(SCHEMA).map_err(wrap)?;
        Ok(Store { conn, path: shown })
    }

    pub(crate) fn conn(&self) -> &Connection {
        &self.conn
    }

    /// A write transaction that takes the write lock at BEGIN (IMMEDIATE). A deferred one that
    /// reads first and writes later fails at once with SQLITE_BUSY_SNAPSHOT when another process
    /// wrote in between (WAL mode does not wait then); an immediate one waits its turn instead.
    pub(crate) fn write_tx(&self) -> rusqlite::Result<rusqlite::Transaction<'_>> {
        rusqlite::Transaction::new_unchecked(&self.conn, rusqlite::TransactionBehavior::Immediate)
    }

    pub(crate) fn wrap(&self, source: rusqlite::Error) -> StoreError {
        self.err(source)
    }

    pub(crate) fn corrupt_row(&self, message: String) -> StoreError {
        self.corrupt(message)
    }

    fn err(&self, source: rusqlite::Error) -> StoreError {
        StoreError::Sqlite { path: self.path.clone(), source }
    }

    fn corrupt(&self, message: String) -> StoreError {
        StoreError::Corrupt { path: self.path.clone(), message }
    }

    /// Records a new job as PENDING and returns its id.
    pub fn submit(
        &self,
        name: &str,
        spec: &str,
        queue: &str,
        priority: i64,
        tags: &std::collections::BTreeMap<String, String>,
        now_ms: i64,
    ) -> Result<i64, StoreError> {
        let tx = self.write_tx().map_err(|e| self.err(e))?;
        let tags = serde_json::to_string(tags).unwrap_or_else(|_| "{}".into());
        tx.execute(
            "INSERT INTO jobs (name, spec, queue, priority, state, submitted_at, updated_at, tags) VALUES (?1, ?2, ?3, ?4, 'PENDING', ?5, ?5, ?6)",
            params![name, spec, queue, priority, now_ms, tags],
        )
        .map_err(|e| self.err(e))?;
        let id = tx.last_insert_rowid();
        tx.execute(
            "INSERT INTO events (job_id, at, kind, detail) VALUES (?1, ?2, 'submitted', ?3)",
            params![id, now_ms, name],
        )
        .map_err(|e| self.err(e))?;
        tx.commit().map_err(|e| self.err(e))?;
        Ok(id)
    }

    fn job_from_row(&self, row: &rusqlite::Row<'_>) -> Result<Job, StoreError> {
        let state: String = row.get(5).map_err(|e| self.err(e))?;
        Ok(Job {
            id: row.get(0).map_err(|e| self.err(e))?,
            name: row.get(1).map_err(|e| self.err(e))?,
            spec: row.get(2).map_err(|e| self.err(e))?,
            queue: row.get(3).map_err(|e| self.err(e))?,
            priority: row.get(4).map_err(|e| self.err(e))?,
            state: state.parse().map_err(|m| self.corrupt(m))?,
            cancel_requested: row.get::<_, i64>(6).map_err(|e| self.err(e))? != 0,
            submitted_at_ms: row.get(7).map_err(|e| self.err(e))?,
            updated_at_ms: row.get(8).map_err(|e| self.err(e))?,
            message: row.get(9).map_err(|e| self.err(e))?,
        })
    }

    const JOB_COLUMNS: &'static str =
        "id, name, spec, queue, priority, state, cancel_requested, submitted_at, updated_at, message";

    /// One job.
    pub fn job(&self, id: i64) -> Result<Job, StoreError> {
        let sql = format!("SELECT {} FROM jobs WHERE id = ?1", Self::JOB_COLUMNS);
        let mut stmt = self.conn.prepare(&sql).map_err(|e| self.err(e))?;
        let mut rows = stmt.query(params![id]).map_err(|e| self.err(e))?;
        match rows.next().map_err(|e| self.err(e))? {
            Some(row) => self.job_from_row(row),
            None => Err(StoreError::NoSuchJob(id)),
        }
    }

    /// Jobs, newest first; only non-terminal ones when `active_only`.
    pub fn jobs(&self, active_only: bool) -> Result<Vec<Job>, StoreError> {
        let filter = if active_only { "WHERE state NOT IN ('SUCCEEDED', 'FAILED', 'CANCELLED')" } else { "" };
        let sql = format!("SELECT {} FROM jobs {filter} ORDER BY id DESC", Self::JOB_COLUMNS);
        let mut stmt = self.conn.prepare(&sql).map_err(|e| self.err(e))?;
        let mut rows = stmt.query([]).map_err(|e| self.err(e))?;
        let mut out = Vec::new();
        while let Some(row) = rows.next().map_err(|e| self.err(e))? {
            out.push(self.job_from_row(row)?);
        }
        Ok(out)
    }

    /// Moves a job to `state` (with a message) and logs it.
    pub fn set_job_state(
        &self,
        id: i64,
        state: JobState,
        message: Option<&str>,
        now_ms: i64,
    ) -> Result<(), StoreError> {
        let tx = self.write_tx().map_err(|e| self.err(e))?;
        let n = tx
            .execute(
                "UPDATE jobs SET state = ?2, message = ?3, updated_at = ?4 WHERE id = ?1",
                params![id, state.as_str(), message, now_ms],
            )
            .map_err(|e| self.err(e))?;
        if n == 0 {
            return Err(StoreError::NoSuchJob(id));
        }
        tx.execute(
            "INSERT INTO events (job_id, at, kind, detail) VALUES (?1, ?2, ?3, ?4)",
            params![id, now_ms, state.as_str().to_ascii_lowercase(), message.unwrap_or("")],
        )
        .map_err(|e| self.err(e))?;
        tx.commit().map_err(|e| self.err(e))
    }

    /// A job's tags (`team`, `project`, ...).
    pub fn job_tags(&self, id: i64) -> Result<std::collections::BTreeMap<String, String>, StoreError> {
        let text: String = self
            .conn
            .query_row("SELECT tags FROM jobs WHERE id = ?1", params![id], |r| r.get(0))
            .map_err(|e| self.err(e))?;
        Ok(serde_json::from_str(&text).unwrap_or_default())
    }

    /// Flags a job for cancellation (the controller acts on it).
    pub fn request_cancel(&self, id: i64, now_ms: i64) -> Result<Job, StoreError> {
        let job = self.job(id)?;
        if !job.state.is_terminal() {
            self.conn
                .execute("UPDATE jobs SET cancel_requested = 1, updated_at = ?2 WHERE id = ?1", params![id, now_ms])
                .map_err(|e| self.err(e))?;
            self.log(id, now_ms, "cancel-requested", "")?;
        }
        self.job(id)
    }

    /// Appends to the event log.
    pub fn log(&self, job_id: i64, now_ms: i64, kind: &str, detail: &str) -> Result<(), StoreError> {
        self.conn
            .execute(
                "INSERT INTO events (job_id, at, kind, detail) VALUES (?1, ?2, ?3, ?4)",
                params![job_id, now_ms, kind, detail],
            )
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// Writes the intent to launch attempt `attempt` of a job, and moves the job to
    /// PROVISIONING, in one transaction. Returns the attempt. If the intent already exists (a
    /// retry after a crash), returns the existing row unchanged.
    #[allow(clippy::too_many_arguments)]
    pub fn record_launch_intent(
        &self,
        job_id: i64,
        attempt: i64,
        backend: &str,
        placement: &str,
        pricing: &str,
        hourly_price: &str,
        currency: &str,
        now_ms: i64,
    ) -> Result<Attempt, StoreError> {
        let key = format!("{job_id}-{attempt}");
        if let Some(existing) = self.attempt_by_key(&key)? {
            return Ok(existing);
        }
        let tx = self.write_tx().map_err(|e| self.err(e))?;
        tx.execute(
            "INSERT INTO attempts (job_id, attempt, key, backend, placement, pricing, hourly_price, currency, state, intent_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 'launching', ?9)",
            params![job_id, attempt, key, backend, placement, pricing, hourly_price, currency, now_ms],
        )
        .map_err(|e| self.err(e))?;
        tx.execute("UPDATE jobs SET state = 'PROVISIONING', updated_at = ?2 WHERE id = ?1", params![job_id, now_ms])
            .map_err(|e| self.err(e))?;
        tx.execute(
            "INSERT INTO events (job_id, at, kind, detail) VALUES (?1, ?2, 'launch-intent', ?3)",
            params![
                job_id,
                now_ms,
                format!("attempt {attempt} key {key} on {backend} {placement} ({pricing} {hourly_price} {currency}/h)")
            ],
        )
        .map_err(|e| self.err(e))?;
        tx.commit().map_err(|e| self.err(e))?;
        self.attempt_by_key(&key)?.ok_or_else(|| self.corrupt(format!("attempt {key} vanished after insert")))
    }

    /// Records that an attempt runs (idempotent: keeps the first start time).
    pub fn mark_running(&self, key: &str, started_at_ms: i64, now_ms: i64) -> Result<(), StoreError> {
        let tx = self.write_tx().map_err(|e| self.err(e))?;
        let job_id: Option<i64> = tx
            .query_row(
                "SELECT job_id FROM attempts WHERE key = ?1 AND state IN ('launching', 'running')",
                params![key],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| self.err(e))?;
        let Some(job_id) = job_id else { return Ok(()) };
        tx.execute(
            "UPDATE attempts SET state = 'running', started_at = COALESCE(started_at, ?2) WHERE key = ?1",
            params![key, started_at_ms],
        )
        .map_err(|e| self.err(e))?;
        let changed = tx
            .execute(
                "UPDATE jobs SET state = 'RUNNING', updated_at = ?2 WHERE id = ?1 AND state != 'RUNNING'",
                params![job_id, now_ms],
            )
            .map_err(|e| self.err(e))?;
        if changed > 0 {
            tx.execute(
                "INSERT INTO events (job_id, at, kind, detail) VALUES (?1, ?2, 'running', ?3)",
                params![job_id, now_ms, key],
            )
            .map_err(|e| self.err(e))?;
        }
        tx.commit().map_err(|e| self.err(e))
    }

    /// Records how an attempt ended (idempotent: the first end wins), and meters it into the
    /// cost ledger in the same transaction, so an ended attempt is always billed exactly once.
    pub fn end_attempt(
        &self,
        key: &str,
        state: AttemptState,
        ended_at_ms: i64,
        exit_code: Option<i64>,
        reason: &str,
    ) -> Result<bool, StoreError> {
        self.end_attempt_with_work(key, state, ended_at_ms, exit_code, reason, None)
    }

    /// [`Self::end_attempt`], recording the useful work the job reported (`tokens`, 2e9) on the
    /// attempt's charge (tags `work_unit`, `work_amount`) for cost-per-unit reports.
    pub fn end_attempt_with_work(
        &self,
        key: &str,
        state: AttemptState,
        ended_at_ms: i64,
        exit_code: Option<i64>,
        reason: &str,
        work: Option<(String, String)>,
    ) -> Result<bool, StoreError> {
        let tx = self.write_tx().map_err(|e| self.err(e))?;
        let n = tx
            .execute(
                "UPDATE attempts SET state = ?2, ended_at = ?3, exit_code = ?4, reason = ?5,
                     started_at = COALESCE(started_at, ?3)
                 WHERE key = ?1 AND state IN ('launching', 'running')",
                params![key, state.as_str(), ended_at_ms, exit_code, reason],
            )
            .map_err(|e| self.err(e))?;
        if n > 0
            && let Some(a) = self.attempt_by_key(key)?
        {
            let job = self.job(a.job_id)?;
            let billed = a.cost(ended_at_ms);
            let zone = a.placement.split_whitespace().find_map(|w| w.strip_prefix("zone=")).unwrap_or("").to_string();
            let mut tags = self.job_tags(a.job_id)?;
            tags.insert("job".to_string(), job.name.clone());
            tags.insert("queue".to_string(), job.queue.clone());
            if let Some((unit, amount)) = &work {
                tags.insert("work_unit".to_string(), unit.clone());
                tags.insert("work_amount".to_string(), amount.clone());
            }
            let currency = a.currency.parse().unwrap_or(gpubroker_core::Currency::USD);
            let charge = crate::charges::Charge {
                key: format!("job:{key}"),
                source: crate::charges::ChargeSource::Job,
                provider: a.backend.clone(),
                service: "compute".into(),
                region: zone,
                resource_id: key.to_string(),
                instance_type: a.placement.clone(),
                gpu: String::new(),
                gpu_count: 0,
                pricing: a.pricing.clone(),
                start_ms: a.started_at_ms.unwrap_or(ended_at_ms),
                end_ms: ended_at_ms,
                billed_cost: billed,
                effective_cost: billed,
                list_cost: billed,
                currency,
                tags,
                raw: Default::default(),
            };
            crate::charges::insert_charge(&tx, &charge).map_err(|e| self.err(e))?;
        }
        tx.commit().map_err(|e| self.err(e))?;
        Ok(n > 0)
    }

    fn attempt_from_row(&self, r: &rusqlite::Row<'_>) -> Result<Attempt, StoreError> {
        let state: String = r.get(9).map_err(|e| self.err(e))?;
        Ok(Attempt {
            id: r.get(0).map_err(|e| self.err(e))?,
            job_id: r.get(1).map_err(|e| self.err(e))?,
            attempt: r.get(2).map_err(|e| self.err(e))?,
            key: r.get(3).map_err(|e| self.err(e))?,
            backend: r.get(4).map_err(|e| self.err(e))?,
            placement: r.get(5).map_err(|e| self.err(e))?,
            pricing: r.get(6).map_err(|e| self.err(e))?,
            hourly_price: r.get(7).map_err(|e| self.err(e))?,
            currency: r.get(8).map_err(|e| self.err(e))?,
            state: state.parse().map_err(|m| self.corrupt(m))?,
            intent_at_ms: r.get(10).map_err(|e| self.err(e))?,
            started_at_ms: r.get(11).map_err(|e| self.err(e))?,
            ended_at_ms: r.get(12).map_err(|e| self.err(e))?,
            exit_code: r.get(13).map_err(|e| self.err(e))?,
            reason: r.get(14).map_err(|e| self.err(e))?,
        })
    }

    const ATTEMPT_COLUMNS: &'static str = "id, job_id, attempt, key, backend, placement, pricing, hourly_price, currency, state, intent_at, started_at, ended_at, exit_code, reason";

    fn attempt_by_key(&self, key: &str) -> Result<Option<Attempt>, StoreError> {
        let sql = format!("SELECT {} FROM attempts WHERE key = ?1", Self::ATTEMPT_COLUMNS);
        let mut stmt = self.conn.prepare(&sql).map_err(|e| self.err(e))?;
        let mut rows = stmt.query(params![key]).map_err(|e| self.err(e))?;
        match rows.next().map_err(|e| self.err(e))? {
            Some(r) => Ok(Some(self.attempt_from_row(r)?)),
            None => Ok(None),
        }
    }

    /// Every attempt of a job, in order.
    pub fn attempts(&self, job_id: i64) -> Result<Vec<Attempt>, StoreError> {
        let sql = format!("SELECT {} FROM attempts WHERE job_id = ?1 ORDER BY attempt", Self::ATTEMPT_COLUMNS);
        let mut stmt = self.conn.prepare(&sql).map_err(|e| self.err(e))?;
        let mut rows = stmt.query(params![job_id]).map_err(|e| self.err(e))?;
        let mut out = Vec::new();
        while let Some(r) = rows.next().map_err(|e| self.err(e))? {
            out.push(self.attempt_from_row(r)?);
        }
        Ok(out)
    }

    /// The event log of a job.
    pub fn events(&self, job_id: i64) -> Result<Vec<Event>, StoreError> {
        let mut stmt = self
            .conn
            .prepare("SELECT job_id, at, kind, detail FROM events WHERE job_id = ?1 ORDER BY id")
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map(params![job_id], |r| {
                Ok(Event { job_id: r.get(0)?, at_ms: r.get(1)?, kind: r.get(2)?, detail: r.get(3)? })
            })
            .map_err(|e| self.err(e))?;
        rows.collect::<Result<Vec<_>, _>>().map_err(|e| self.err(e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intent_is_idempotent_and_states_flow() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("ledger.db")).unwrap();
        let id = store.submit("j", "{}", "default", 0, &Default::default(), 1000).unwrap();
        assert_eq!(store.job(id).unwrap().state, JobState::Pending);
        let a = store.record_launch_intent(id, 1, "local", "slot 0", "on_demand", "0.5", "USD", 2000).unwrap();
        let again = store.record_launch_intent(id, 1, "local", "slot 1", "on_demand", "0.9", "USD", 3000).unwrap();
        assert_eq!(a, again, "a repeated intent keeps the first");
        assert_eq!(store.job(id).unwrap().state, JobState::Provisioning);
        store.mark_running(&a.key, 2500, 2600).unwrap();
        store.mark_running(&a.key, 9999, 9999).unwrap();
        assert_eq!(store.attempts(id).unwrap()[0].started_at_ms, Some(2500));
        assert!(store.end_attempt(&a.key, AttemptState::Succeeded, 5000, Some(0), "exit 0").unwrap());
        assert!(!store.end_attempt(&a.key, AttemptState::Failed, 6000, Some(1), "late").unwrap(), "first end wins");
        store.set_job_state(id, JobState::Succeeded, None, 5000).unwrap();
        let kinds: Vec<String> = store.events(id).unwrap().into_iter().map(|e| e.kind).collect();
        assert_eq!(kinds, ["submitted", "launch-intent", "running", "succeeded"]);
        // Survives reopening.
        drop(store);
        let store = Store::open(&dir.path().join("ledger.db")).unwrap();
        assert_eq!(store.job(id).unwrap().state, JobState::Succeeded);
        assert!(matches!(store.job(99), Err(StoreError::NoSuchJob(99))));
    }
}
