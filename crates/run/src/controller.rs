//! The job controller: a level-triggered reconcile loop over the jobs in the ledger.
//!
//! Each pass reads every unfinished job, polls all running attempts in one backend call, and
//! moves each job one step: launch (writing the intent *before* calling the backend), observe,
//! recover a preempted attempt from its checkpoint, stop a job over its budget, cancel.
//!
//! # Guarantees
//! * A job's attempt `n` is launched at most once: its intent (key `{job}-{n}`) is committed
//!   before the launch call, and the backend's launch is idempotent on that key. A controller
//!   killed at any point re-issues the same key on restart and gets the same attempt back.
//! * Attempt `n + 1` exists only after attempt `n` has ended (preempted, failed with retries
//!   left), so a job never runs twice at once.
//! * Every transition is one committed transaction (see `gpubroker-ledger`).
//!
//! # Assumptions
//! * One controller runs per data directory (the CLI holds a lock for it).
//! * Attempts write their progress to `GPUBROKER_CHECKPOINT_DIR` (kept across attempts) and
//!   resume from it; the attempt number is in `GPUBROKER_ATTEMPT`.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::str::FromStr;
use std::time::Duration;

use gpubroker_core::{Clock, Decimal, OffPeakWindow};
use gpubroker_ledger::{Attempt, AttemptState, Job, JobState, Store, StoreError};

use crate::backend::{Backend, BackendError, Handle, LaunchRequest, Observed};
use crate::policy::{JobState as PolicyJob, MarketView, Mode, Policy, ZoneStats};
use crate::recovery::RecoveryStrategy;
use crate::spec::JobSpec;

/// Controller settings.
#[derive(Debug, Clone)]
pub struct ControllerConfig {
    /// Time between passes.
    pub poll_interval: Duration,
    /// Attempts running at once per queue, for queues not in `queue_limits` (0 = no limit).
    pub max_running_per_queue: u32,
    /// Attempts running at once in named queues.
    pub queue_limits: BTreeMap<String, u32>,
    /// Exit after this long with nothing to do (`None` = never).
    pub idle_exit: Option<Duration>,
    /// Where jobs without their own checkpoint directory keep one (`<root>/<job id>`).
    pub checkpoint_root: std::path::PathBuf,
}

impl Default for ControllerConfig {
    fn default() -> Self {
        ControllerConfig {
            poll_interval: Duration::from_millis(500),
            max_running_per_queue: 0,
            queue_limits: BTreeMap::new(),
            idle_exit: Some(Duration::from_secs(60)),
            checkpoint_root: std::env::temp_dir().join("gpubroker-checkpoints"),
        }
    }
}

/// Why a pass failed.
#[derive(Debug, thiserror::Error)]
pub enum ControllerError {
    /// The ledger failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The backend failed.
    #[error(transparent)]
    Backend(#[from] BackendError),
}

/// Drives jobs through their life.
pub struct Controller {
    store: Store,
    backend: Backend,
    clock: Clock,
    config: ControllerConfig,
    /// What the controller has learned about each spot zone (for the policies).
    zone_stats: std::cell::RefCell<HashMap<String, ZoneStats>>,
}

/// Money spent by an attempt so far, in its currency (per-second billing).
pub fn attempt_cost(a: &Attempt, now_ms: i64) -> Decimal {
    a.cost(now_ms)
}

/// Money spent by all attempts of a job.
pub fn job_cost(attempts: &[Attempt], now_ms: i64) -> Decimal {
    attempts.iter().map(|a| attempt_cost(a, now_ms)).sum()
}

fn slots_of(placement: &str) -> Vec<u32> {
    placement
        .split_whitespace()
        .find_map(|w| w.strip_prefix("slots="))
        .map(|s| s.split(',').filter_map(|x| x.parse().ok()).collect())
        .unwrap_or_default()
}

impl Controller {
    /// A controller over `store` and `backend`.
    pub fn new(store: Store, backend: Backend, clock: Clock, config: ControllerConfig) -> Self {
        Controller { store, backend, clock, config, zone_stats: Default::default() }
    }

    fn now_ms(&self) -> i64 {
        self.clock.now().as_millisecond()
    }

    /// Runs passes until `stop()` says so or, with `idle_exit`, nothing has been active for that long.
    pub fn run(&self, stop: &dyn Fn() -> bool) -> Result<(), ControllerError> {
        let mut idle_since = std::time::Instant::now();
        let mut failures = 0u32;
        while !stop() {
            let active = match self.step() {
                Ok(n) => {
                    failures = 0;
                    n
                }
                Err(e) => {
                    // A pass that failed (a busy database, a backend hiccup) is retried: every
                    // pass is idempotent, so the next one picks up where this one stopped.
                    failures += 1;
                    eprintln!("gpubroker controller: pass failed ({failures} in a row): {e}");
                    if failures >= 100 {
                        return Err(e);
                    }
                    std::thread::sleep(self.config.poll_interval.max(Duration::from_millis(100)) * failures.min(10));
                    1
                }
            };
            if active > 0 {
                idle_since = std::time::Instant::now();
            } else if self.config.idle_exit.is_some_and(|d| idle_since.elapsed() >= d) {
                return Ok(());
            }
            std::thread::sleep(self.config.poll_interval);
        }
        Ok(())
    }

    /// One reconcile pass. Returns the number of unfinished jobs.
    pub fn step(&self) -> Result<usize, ControllerError> {
        let now = self.now_ms();
        let mut jobs = self.store.jobs(true)?;
        // Higher priority first, then first come first served.
        jobs.sort_by(|a, b| b.priority.cmp(&a.priority).then(a.id.cmp(&b.id)));
        let mut attempts: HashMap<i64, Vec<Attempt>> = HashMap::new();
        for j in &jobs {
            attempts.insert(j.id, self.store.attempts(j.id)?);
        }
        // Poll every live attempt in one call.
        let live: Vec<Handle> = attempts
            .values()
            .filter_map(|a| a.last())
            .filter(|a| !a.state.is_over())
            .map(|a| Handle { key: a.key.clone() })
            .collect();
        let observed: HashMap<String, Observed> =
            live.iter().map(|h| h.key.clone()).zip(self.backend.poll(&live, now)?).collect();
        let mut used_slots: BTreeSet<u32> = BTreeSet::new();
        let mut running_per_queue: BTreeMap<String, u32> = BTreeMap::new();
        for j in &jobs {
            if let Some(a) = attempts[&j.id].last().filter(|a| !a.state.is_over()) {
                used_slots.extend(slots_of(&a.placement));
                *running_per_queue.entry(j.queue.clone()).or_default() += 1;
            }
        }
        let market = self.backend.market(now);
        if let Some((names, available)) = &market {
            let mut stats = self.zone_stats.borrow_mut();
            for (name, a) in names.iter().zip(available) {
                stats.entry(name.clone()).or_default().observe(*a);
            }
        }
        for job in &jobs {
            let history = &attempts[&job.id];
            let spec: JobSpec = match serde_json::from_str(&job.spec) {
                Ok(s) => s,
                Err(e) => {
                    self.store.set_job_state(job.id, JobState::Failed, Some(&format!("unreadable spec: {e}")), now)?;
                    continue;
                }
            };
            let last = history.last();
            if job.cancel_requested {
                if let Some(a) = last.filter(|a| !a.state.is_over()) {
                    self.backend.terminate(&Handle { key: a.key.clone() }, now)?;
                    self.store.end_attempt(&a.key, AttemptState::Terminated, now, None, "cancelled")?;
                }
                self.store.set_job_state(job.id, JobState::Cancelled, Some("cancelled by user"), now)?;
                continue;
            }
            if let Some(a) = last.filter(|a| !a.state.is_over()) {
                let obs = observed.get(&a.key).cloned().unwrap_or(Observed::Gone);
                self.follow(job, &spec, a, history, obs, now)?;
            }
            let job_now = self.store.job(job.id)?;
            if job_now.state.is_terminal() {
                continue;
            }
            let history = self.store.attempts(job.id)?;
            match (&market, spec.pricing == "spot") {
                (Some((names, available)), true) => {
                    self.drive_spot(&job_now, &spec, &history, names, available, now)?
                }
                _ if history.last().is_none_or(|a| a.state.is_over()) => {
                    self.maybe_launch(&job_now, &spec, &history, &mut used_slots, &mut running_per_queue, now)?;
                }
                _ => {}
            }
        }
        Ok(self.store.jobs(true)?.len())
    }

    /// Moves a job whose last attempt is live according to what the backend saw.
    fn follow(
        &self,
        job: &Job,
        spec: &JobSpec,
        a: &Attempt,
        history: &[Attempt],
        obs: Observed,
        now: i64,
    ) -> Result<(), ControllerError> {
        match obs {
            Observed::Pending => {
                if a.state == AttemptState::Launching {
                    // The intent is committed; launching again with the same key is safe and
                    // covers a controller that died before (or during) the first call.
                    self.launch_attempt(job, spec, a)?;
                }
            }
            Observed::Gone if a.state == AttemptState::Launching => {
                self.launch_attempt(job, spec, a)?;
            }
            Observed::Running { since_ms } => {
                self.store.mark_running(&a.key, since_ms, now)?;
                if let Some(budget) = spec.budget.as_deref().and_then(|b| Decimal::from_str(b).ok()) {
                    let mut current = history.to_vec();
                    if let Some(last) = current.last_mut() {
                        last.started_at_ms = last.started_at_ms.or(Some(since_ms));
                    }
                    let spent = job_cost(&current, now);
                    if spent >= budget {
                        self.backend.terminate(&Handle { key: a.key.clone() }, now)?;
                        self.store.end_attempt(&a.key, AttemptState::Terminated, now, None, "over budget")?;
                        let msg = format!(
                            "stopped: spent {} {} of a {} {} budget",
                            spent.round_dp(4),
                            spec.currency,
                            budget,
                            spec.currency
                        );
                        self.store.set_job_state(job.id, JobState::Failed, Some(&msg), now)?;
                    }
                }
            }
            Observed::Exited { code, at_ms } => {
                if code == 0 {
                    let work = self.reported_work(job, spec);
                    self.store.end_attempt_with_work(
                        &a.key,
                        AttemptState::Succeeded,
                        at_ms,
                        Some(0),
                        "exit 0",
                        work,
                    )?;
                    self.store.set_job_state(job.id, JobState::Succeeded, None, now)?;
                } else {
                    self.store.end_attempt(&a.key, AttemptState::Failed, at_ms, Some(code), &format!("exit {code}"))?;
                    let failures = history.iter().filter(|x| x.state == AttemptState::Failed).count() as u32 + 1;
                    let retry = (JobState::Pending, format!("attempt {} exited {code}; retrying", a.attempt));
                    self.retry_or_fail(
                        job,
                        failures,
                        spec.max_retries,
                        retry,
                        format!("exited with code {code}"),
                        now,
                    )?;
                }
            }
            Observed::Preempted { .. } | Observed::Gone if a.state == AttemptState::Running => {
                let at_ms = if let Observed::Preempted { at_ms } = obs { at_ms } else { now };
                self.store.end_attempt(&a.key, AttemptState::Preempted, at_ms, None, "preempted")?;
                let recoveries = history.iter().filter(|x| x.state == AttemptState::Preempted).count() as u32 + 1;
                let recover = (
                    JobState::Recovering,
                    format!("attempt {} preempted; recovering from the last checkpoint", a.attempt),
                );
                self.retry_or_fail(
                    job,
                    recoveries,
                    spec.max_recoveries,
                    recover,
                    format!("preempted {recoveries} times; giving up"),
                    now,
                )?;
            }
            Observed::Preempted { .. } | Observed::Gone => {
                // A launching attempt whose process vanished before we saw it run: it did run
                // (it wrote a pid), so it counts as preempted too.
                self.store.end_attempt(&a.key, AttemptState::Preempted, now, None, "lost while starting")?;
                self.store.set_job_state(
                    job.id,
                    JobState::Recovering,
                    Some(&format!("attempt {} lost while starting", a.attempt)),
                    now,
                )?;
            }
        }
        Ok(())
    }

    /// The useful work a finished job reported in `$GPUBROKER_CHECKPOINT_DIR/work` (one line,
    /// `UNIT AMOUNT`, such as `tokens 2000000000`), for cost per unit of work.
    fn reported_work(&self, job: &Job, spec: &JobSpec) -> Option<(String, String)> {
        let dir = spec.checkpoint_dir.clone().unwrap_or_else(|| self.config.checkpoint_root.join(job.id.to_string()));
        let text = std::fs::read_to_string(dir.join("work")).ok()?;
        let mut parts = text.split_whitespace();
        let unit = parts.next()?.to_string();
        let amount = parts.next()?;
        let value = Decimal::from_str(amount).or_else(|_| Decimal::from_scientific(amount)).ok()?;
        (value > Decimal::ZERO).then(|| (unit, value.normalize().to_string()))
    }

    /// Moves a job to `again` while `count` is within `limit`, else to FAILED with `give_up`.
    fn retry_or_fail(
        &self,
        job: &Job,
        count: u32,
        limit: u32,
        again: (JobState, String),
        give_up: String,
        now: i64,
    ) -> Result<(), ControllerError> {
        if count <= limit {
            self.store.set_job_state(job.id, again.0, Some(&again.1), now)?;
        } else {
            self.store.set_job_state(job.id, JobState::Failed, Some(&give_up), now)?;
        }
        Ok(())
    }

    fn maybe_launch(
        &self,
        job: &Job,
        spec: &JobSpec,
        history: &[Attempt],
        used_slots: &mut BTreeSet<u32>,
        running_per_queue: &mut BTreeMap<String, u32>,
        now: i64,
    ) -> Result<(), ControllerError> {
        if let Some(last) = history.last()
            && last.state == AttemptState::Succeeded
        {
            self.store.set_job_state(job.id, JobState::Succeeded, None, now)?;
            return Ok(());
        }
        if let Some(budget) = spec.budget.as_deref().and_then(|b| Decimal::from_str(b).ok())
            && job_cost(history, now) >= budget
        {
            self.store.set_job_state(job.id, JobState::Failed, Some("stopped: budget spent"), now)?;
            return Ok(());
        }
        let limit = self.config.queue_limits.get(&job.queue).copied().unwrap_or(self.config.max_running_per_queue);
        if limit > 0 && running_per_queue.get(&job.queue).copied().unwrap_or(0) >= limit {
            return Ok(());
        }
        if !window_allows(spec, now) {
            return Ok(());
        }
        // GPU slots: the lowest free ones.
        let total = self.backend.slots();
        let slots: Vec<u32> = if total == 0 || spec.gpus == 0 {
            Vec::new()
        } else {
            let free: Vec<u32> = (0..total).filter(|s| !used_slots.contains(s)).take(spec.gpus as usize).collect();
            if free.len() < spec.gpus as usize {
                return Ok(()); // wait for capacity
            }
            free
        };
        let attempt_no = history.last().map(|a| a.attempt + 1).unwrap_or(1);
        let placement = if slots.is_empty() {
            self.backend.name().to_string()
        } else {
            format!("{} slots={}", self.backend.name(), slots.iter().map(u32::to_string).collect::<Vec<_>>().join(","))
        };
        let price = Decimal::from_str(&spec.gpu_hour_price).unwrap_or(Decimal::ZERO) * Decimal::from(spec.gpus.max(1));
        let intent = self.store.record_launch_intent(
            job.id,
            attempt_no,
            self.backend.name(),
            &placement,
            &spec.pricing,
            &price.normalize().to_string(),
            &spec.currency,
            now,
        )?;
        used_slots.extend(slots);
        *running_per_queue.entry(job.queue.clone()).or_default() += 1;
        self.launch_attempt(job, spec, &intent)
    }

    /// Spot jobs on a backend with a spot market: the policy decides every pass between spot in
    /// some zone, on-demand and waiting, with the deadline-aware fallback built into every policy.
    fn drive_spot(
        &self,
        job: &Job,
        spec: &JobSpec,
        history: &[Attempt],
        zones: &[String],
        available: &[bool],
        now: i64,
    ) -> Result<(), ControllerError> {
        let live = history.last().filter(|a| !a.state.is_over());
        let mode = match live {
            None => Mode::Idle,
            Some(a) if a.pricing == "spot" => a
                .placement
                .split_whitespace()
                .find_map(|w| w.strip_prefix("zone="))
                .and_then(|z| zones.iter().position(|n| n == z))
                .map(Mode::Spot)
                .unwrap_or(Mode::Idle),
            Some(_) => Mode::OnDemand,
        };
        let work_s = spec.expected_runtime_s as f64;
        let elapsed_s = (now - job.submitted_at_ms) as f64 / 1000.0;
        // Without a deadline, allow the job twice its length.
        let deadline_s = spec.deadline_at_ms.map(|d| (d - job.submitted_at_ms) as f64 / 1000.0).unwrap_or(2.0 * work_s);
        let done_s = self.backend.progress_s(job.id, now).unwrap_or(0.0);
        let (tick_s, changeover_s) = self.backend.timing();
        let stats: Vec<ZoneStats> = {
            let all = self.zone_stats.borrow();
            zones.iter().map(|z| all.get(z).copied().unwrap_or_default()).collect()
        };
        let od_price = Decimal::from_str(&spec.gpu_hour_price).unwrap_or(Decimal::ONE);
        let spot_price = spec.spot_hour_price.as_deref().and_then(|p| Decimal::from_str(p).ok()).unwrap_or(od_price);
        let ratio =
            if spot_price > Decimal::ZERO { (od_price / spot_price).to_string().parse().unwrap_or(3.0) } else { 3.0 };
        let policy = Policy::parse(&spec.policy).unwrap_or(Policy::GPUBROKER);
        let state = PolicyJob { work_s, done_s, elapsed_s, deadline_s, changeover_s, mode };
        let market = MarketView { available, stats: &stats, price_ratio: ratio, tick_s };
        let mut decision = policy.decide(&state, &market);
        decision = apply_recovery(spec.recovery, history, zones, available, mode, decision);
        if let Mode::Spot(z) = decision
            && !available.get(z).copied().unwrap_or(false)
        {
            decision = Mode::Idle;
        }
        if decision == mode {
            return Ok(());
        }
        let describe = |m: Mode| match m {
            Mode::Idle => "wait".to_string(),
            Mode::OnDemand => "on-demand".to_string(),
            Mode::Spot(z) => format!("spot in {}", zones[z]),
        };
        if let Some(a) = live {
            self.backend.terminate(&Handle { key: a.key.clone() }, now)?;
            self.store.end_attempt(
                &a.key,
                AttemptState::Terminated,
                now,
                None,
                &format!("policy {}: {}", policy.name(), describe(decision)),
            )?;
        }
        let (placement, pricing, price) = match decision {
            Mode::Idle => {
                self.store.set_job_state(
                    job.id,
                    JobState::Recovering,
                    Some(&format!("policy {}: waiting for spot", policy.name())),
                    now,
                )?;
                return Ok(());
            }
            Mode::OnDemand => (format!("{} on_demand", self.backend.name()), "on_demand", od_price),
            Mode::Spot(z) => (format!("{} zone={} spot", self.backend.name(), zones[z]), "spot", spot_price),
        };
        let attempt_no = history.last().map(|a| a.attempt + 1).unwrap_or(1);
        let intent = self.store.record_launch_intent(
            job.id,
            attempt_no,
            self.backend.name(),
            &placement,
            pricing,
            &price.normalize().to_string(),
            &spec.currency,
            now,
        )?;
        self.store.log(
            job.id,
            now,
            "policy",
            &format!("{}: {} (slack {:.2} h)", policy.name(), describe(decision), state.slack_s() / 3600.0),
        )?;
        self.launch_attempt(job, spec, &intent)
    }

    fn launch_attempt(&self, job: &Job, spec: &JobSpec, a: &Attempt) -> Result<(), ControllerError> {
        let mut env = BTreeMap::new();
        let checkpoint_dir =
            spec.checkpoint_dir.clone().unwrap_or_else(|| self.config.checkpoint_root.join(job.id.to_string()));
        env.insert("GPUBROKER_CHECKPOINT_DIR".to_string(), checkpoint_dir.display().to_string());
        env.insert("GPUBROKER_ATTEMPT".to_string(), a.attempt.to_string());
        env.insert("GPUBROKER_JOB_ID".to_string(), job.id.to_string());
        env.insert("GPUBROKER_JOB_NAME".to_string(), job.name.clone());
        let slots = slots_of(&a.placement);
        let req = LaunchRequest {
            key: &a.key,
            job_id: job.id,
            attempt: a.attempt,
            spec,
            slots: &slots,
            placement: &a.placement,
            now_ms: self.now_ms(),
            env,
        };
        match self.backend.launch(&req) {
            Ok(_) => Ok(()),
            Err(BackendError::Rejected(m)) => {
                let now = self.now_ms();
                self.store.end_attempt(&a.key, AttemptState::Failed, now, None, &m)?;
                self.store.set_job_state(
                    job.id,
                    JobState::Failed,
                    Some(&format!("rejected by the backend: {m}")),
                    now,
                )?;
                Ok(())
            }
            // No capacity / transient: the intent stays; the next pass tries the same key again.
            Err(_) => Ok(()),
        }
    }

    /// The store (for the CLI's read-only views).
    pub fn store(&self) -> &Store {
        &self.store
    }
}

/// Whether an attempt may start now: inside the job's off-peak window, or outside it when
/// waiting for the next window would miss the deadline.
pub fn window_allows(spec: &JobSpec, now_ms: i64) -> bool {
    let Some(text) = &spec.window else { return true };
    let Ok(window) = OffPeakWindow::parse(text) else { return true };
    let Ok(now) = jiff::Timestamp::from_millisecond(now_ms) else { return true };
    if window.seconds_inside(now, 1) == 1 {
        return true;
    }
    match spec.deadline_at_ms {
        Some(deadline) => {
            // Seconds until the window opens, found by scanning forward a minute at a time.
            let mut wait_s = 0u64;
            while wait_s < 86_400 && window.seconds_inside(now, wait_s + 60) == 0 {
                wait_s += 60;
            }
            let needed_ms = (wait_s + spec.expected_runtime_s * 115 / 100) as i64 * 1000;
            now_ms + needed_ms > deadline
        }
        None => false,
    }
}

/// Applies the task's recovery strategy to a policy's decision right after a preemption (no
/// live attempt, the last one preempted): `same_zone` returns to the zone that was lost when it
/// is back, `next_cheapest` moves to another zone (or on-demand if none has capacity), and
/// `on_demand` stays on on-demand for the rest of the job.
pub fn apply_recovery(
    strategy: RecoveryStrategy,
    history: &[Attempt],
    zones: &[String],
    available: &[bool],
    mode: Mode,
    decision: Mode,
) -> Mode {
    let preempted_zone = history.iter().rev().find(|a| a.state == AttemptState::Preempted).and_then(|a| {
        a.placement
            .split_whitespace()
            .find_map(|w| w.strip_prefix("zone="))
            .and_then(|z| zones.iter().position(|n| n == z))
    });
    let Some(lost) = preempted_zone else { return decision };
    if strategy == RecoveryStrategy::OnDemand {
        return Mode::OnDemand;
    }
    let just_lost = history.last().is_some_and(|a| a.state == AttemptState::Preempted) && mode == Mode::Idle;
    match (strategy, decision) {
        (RecoveryStrategy::SameZone, Mode::Spot(_)) if just_lost && available.get(lost).copied().unwrap_or(false) => {
            Mode::Spot(lost)
        }
        (RecoveryStrategy::NextCheapest, Mode::Spot(z)) if just_lost && z == lost => {
            match available.iter().enumerate().find(|(i, a)| **a && *i != lost) {
                Some((other, _)) => Mode::Spot(other),
                None => Mode::OnDemand,
            }
        }
        _ => decision,
    }
}

/// Parses queue limits written `default=2,batch=1`.
pub fn parse_queue_limits(text: &str) -> Result<BTreeMap<String, u32>, String> {
    let mut out = BTreeMap::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (q, n) = part.split_once('=').ok_or_else(|| format!("`{part}`: expected QUEUE=LIMIT"))?;
        let n: u32 = n.trim().parse().map_err(|_| format!("`{part}`: the limit must be a whole number"))?;
        out.insert(q.trim().to_string(), n);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(window: Option<&str>, deadline_at_ms: Option<i64>, runtime_s: u64) -> JobSpec {
        JobSpec {
            name: "w".into(),
            setup: None,
            run: "true".into(),
            envs: Default::default(),
            workdir: ".".into(),
            gpus: 0,
            backend: "local".into(),
            pricing: "on_demand".into(),
            gpu_hour_price: "1".into(),
            currency: "USD".into(),
            deadline_at_ms,
            budget: None,
            recovery: RecoveryStrategy::SameZone,
            max_recoveries: 0,
            max_retries: 0,
            checkpoint_dir: None,
            window: window.map(String::from),
            expected_runtime_s: runtime_s,
            spot_hour_price: None,
            policy: "gpubroker".into(),
        }
    }

    fn at(s: &str) -> i64 {
        s.parse::<jiff::Timestamp>().unwrap().as_millisecond()
    }

    #[test]
    fn off_peak_window_waits_unless_the_deadline_needs_more() {
        let window = Some("01:00-08:00 UTC");
        // Inside the window: start.
        assert!(window_allows(&spec(window, None, 3600), at("2026-11-29T02:00:00Z")));
        // Outside, no deadline: wait for the window.
        assert!(!window_allows(&spec(window, None, 3600), at("2026-11-29T12:00:00Z")));
        // Outside, deadline far away: wait.
        assert!(!window_allows(&spec(window, Some(at("2026-12-01T00:00:00Z")), 3600), at("2026-11-29T12:00:00Z")));
        // Outside, but waiting 13 h for the window plus 10 h of work would miss a deadline 20 h away: start now.
        assert!(window_allows(&spec(window, Some(at("2026-11-30T08:00:00Z")), 36_000), at("2026-11-29T12:00:00Z")));
    }

    fn attempt(n: i64, placement: &str, state: AttemptState) -> Attempt {
        Attempt {
            id: n,
            job_id: 1,
            attempt: n,
            key: format!("1-{n}"),
            backend: "sim".into(),
            placement: placement.into(),
            pricing: "spot".into(),
            hourly_price: "1".into(),
            currency: "USD".into(),
            state,
            intent_at_ms: 0,
            started_at_ms: Some(0),
            ended_at_ms: Some(1),
            exit_code: None,
            reason: None,
        }
    }

    #[test]
    fn recovery_strategies_steer_the_relaunch() {
        let zones = vec!["a".to_string(), "b".to_string(), "c".to_string()];
        let history = [attempt(1, "sim zone=a spot", AttemptState::Preempted)];
        let all = [true, true, true];
        // The policy wants zone b; same_zone goes back to a, next_cheapest keeps b, on_demand overrides.
        assert_eq!(
            apply_recovery(RecoveryStrategy::SameZone, &history, &zones, &all, Mode::Idle, Mode::Spot(1)),
            Mode::Spot(0)
        );
        assert_eq!(
            apply_recovery(RecoveryStrategy::NextCheapest, &history, &zones, &all, Mode::Idle, Mode::Spot(1)),
            Mode::Spot(1)
        );
        assert_eq!(
            apply_recovery(RecoveryStrategy::OnDemand, &history, &zones, &all, Mode::Idle, Mode::Spot(1)),
            Mode::OnDemand
        );
        // The policy wants a again: next_cheapest moves elsewhere.
        assert_eq!(
            apply_recovery(RecoveryStrategy::NextCheapest, &history, &zones, &all, Mode::Idle, Mode::Spot(0)),
            Mode::Spot(1)
        );
        assert_eq!(
            apply_recovery(
                RecoveryStrategy::NextCheapest,
                &history,
                &zones,
                &[true, false, false],
                Mode::Idle,
                Mode::Spot(0)
            ),
            Mode::OnDemand
        );
        // Same zone not back yet: the policy's choice stands.
        assert_eq!(
            apply_recovery(
                RecoveryStrategy::SameZone,
                &history,
                &zones,
                &[false, true, true],
                Mode::Idle,
                Mode::Spot(1)
            ),
            Mode::Spot(1)
        );
        // No preemption yet: nothing changes.
        assert_eq!(
            apply_recovery(RecoveryStrategy::OnDemand, &[], &zones, &all, Mode::Idle, Mode::Spot(1)),
            Mode::Spot(1)
        );
    }

    #[test]
    fn queue_limits_parse() {
        let l = parse_queue_limits("default=2, batch=1").unwrap();
        assert_eq!(l.get("batch"), Some(&1));
        assert!(parse_queue_limits("batch").is_err());
        assert!(parse_queue_limits("batch=x").is_err());
    }
}
