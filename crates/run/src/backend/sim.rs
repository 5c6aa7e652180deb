//! The simulated cloud: spot capacity per zone follows real availability traces, on-demand is
//! always there, every launch costs a changeover, and time is a simulated clock that the caller
//! advances (so a 48-hour job replays in well under a second). Jobs are simulated progress: an
//! attempt advances its job by the time it runs after its changeover, and keeps that progress
//! when preempted (a checkpoint at the moment of preemption, as in Can't Be Late's model).
//!
//! This is the what-if and backtest engine behind the same controller as the real backends; it
//! is never a stand-in for testing one. Its state lives in memory.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::{BackendError, Handle, LaunchRequest, Observed};

/// One zone's spot availability.
#[derive(Debug, Clone, PartialEq)]
pub struct SimZone {
    /// Zone name.
    pub name: String,
    /// Availability per tick.
    pub available: Vec<bool>,
}

#[derive(Debug, Clone)]
struct SimAttempt {
    job_id: i64,
    zone: Option<usize>,
    launched_ms: i64,
    remaining_ms: i64,
    ended: bool,
}

#[derive(Debug, Default)]
struct SimState {
    attempts: HashMap<String, SimAttempt>,
    progress_ms: HashMap<i64, i64>,
}

/// The simulated cloud.
#[derive(Debug, Clone)]
pub struct SimBackend {
    zones: Vec<SimZone>,
    tick_ms: i64,
    start_ms: i64,
    changeover_ms: i64,
    state: Arc<Mutex<SimState>>,
}

impl SimBackend {
    pub(super) fn new(
        zones: Vec<SimZone>,
        tick_s: u32,
        start_ms: i64,
        changeover_s: f64,
    ) -> Result<Self, BackendError> {
        if zones.is_empty() || zones.iter().any(|z| z.available.is_empty()) {
            return Err(BackendError::Rejected("the simulated cloud needs at least one non-empty trace".into()));
        }
        if tick_s == 0 {
            return Err(BackendError::Rejected("trace tick must be at least 1 s".into()));
        }
        Ok(SimBackend {
            zones,
            tick_ms: i64::from(tick_s) * 1000,
            start_ms,
            changeover_ms: (changeover_s * 1000.0).round() as i64,
            state: Default::default(),
        })
    }

    fn state(&self) -> std::sync::MutexGuard<'_, SimState> {
        // A panic while holding the lock would be a bug in this module; keep going with its data.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Zone names.
    pub(super) fn zone_names(&self) -> Vec<String> {
        self.zones.iter().map(|z| z.name.clone()).collect()
    }

    pub(super) fn tick_s(&self) -> f64 {
        self.tick_ms as f64 / 1000.0
    }

    pub(super) fn changeover_s(&self) -> f64 {
        self.changeover_ms as f64 / 1000.0
    }

    fn available(&self, zone: usize, at_ms: i64) -> bool {
        let z = &self.zones[zone];
        let tick = ((at_ms - self.start_ms).max(0) / self.tick_ms) as usize % z.available.len();
        z.available[tick]
    }

    /// Spot availability of every zone at `now_ms`.
    pub(super) fn market(&self, now_ms: i64) -> Vec<bool> {
        (0..self.zones.len()).map(|z| self.available(z, now_ms)).collect()
    }

    /// Work done by a job so far, seconds (ended attempts plus the live one).
    pub(super) fn progress_s(&self, job_id: i64, now_ms: i64) -> f64 {
        let st = self.state();
        let mut ms = st.progress_ms.get(&job_id).copied().unwrap_or(0);
        for a in st.attempts.values().filter(|a| a.job_id == job_id && !a.ended) {
            let (end, _) = self.run_end(a, now_ms);
            ms += (end - a.launched_ms - self.changeover_ms).clamp(0, a.remaining_ms);
        }
        ms as f64 / 1000.0
    }

    /// Until when the attempt has run by `now_ms`, and whether it was preempted then.
    fn run_end(&self, a: &SimAttempt, now_ms: i64) -> (i64, bool) {
        let Some(zone) = a.zone else { return (now_ms, false) };
        // Walk tick boundaries from the launch; the first unavailable tick ends the attempt.
        // The tick that starts at `now_ms` counts: a zone that is unavailable now has reclaimed
        // its instances now.
        let mut t = a.launched_ms;
        while t <= now_ms {
            if !self.available(zone, t) {
                return (t.max(a.launched_ms), true);
            }
            let next_boundary = self.start_ms + ((t - self.start_ms).div_euclid(self.tick_ms) + 1) * self.tick_ms;
            t = next_boundary;
        }
        (now_ms, false)
    }

    pub(super) fn launch(&self, req: &LaunchRequest<'_>, now_ms: i64) -> Result<Handle, BackendError> {
        let handle = Handle { key: req.key.to_string() };
        let mut st = self.state();
        if st.attempts.contains_key(req.key) {
            return Ok(handle);
        }
        let zone = match req.placement.split_whitespace().find_map(|w| w.strip_prefix("zone=")) {
            Some(name) => Some(
                self.zones
                    .iter()
                    .position(|z| z.name == name)
                    .ok_or_else(|| BackendError::Rejected(format!("unknown zone `{name}`")))?,
            ),
            None => None,
        };
        if let Some(z) = zone
            && !self.available(z, now_ms)
        {
            return Err(BackendError::NoCapacity(format!("no spot capacity in {}", self.zones[z].name)));
        }
        let done = st.progress_ms.get(&req.job_id).copied().unwrap_or(0);
        let total = (req.spec.expected_runtime_s as i64) * 1000;
        st.attempts.insert(
            req.key.to_string(),
            SimAttempt {
                job_id: req.job_id,
                zone,
                launched_ms: now_ms,
                remaining_ms: (total - done).max(0),
                ended: false,
            },
        );
        Ok(handle)
    }

    pub(super) fn observe(&self, handle: &Handle, now_ms: i64) -> Observed {
        let mut st = self.state();
        let Some(a) = st.attempts.get(&handle.key).cloned() else { return Observed::Gone };
        if a.ended {
            return Observed::Gone;
        }
        let finish_at = a.launched_ms + self.changeover_ms + a.remaining_ms;
        let (end, preempted) = self.run_end(&a, now_ms.min(finish_at));
        let outcome = if !preempted && now_ms >= finish_at {
            Some((a.remaining_ms, Observed::Exited { code: 0, at_ms: finish_at }))
        } else if preempted {
            let done = (end - a.launched_ms - self.changeover_ms).clamp(0, a.remaining_ms);
            Some((done, Observed::Preempted { at_ms: end }))
        } else {
            None
        };
        match outcome {
            Some((done, observed)) => {
                *st.progress_ms.entry(a.job_id).or_default() += done;
                if let Some(x) = st.attempts.get_mut(&handle.key) {
                    x.ended = true;
                }
                observed
            }
            None => Observed::Running { since_ms: a.launched_ms },
        }
    }

    pub(super) fn terminate(&self, handle: &Handle, now_ms: i64) {
        let mut st = self.state();
        let Some(a) = st.attempts.get(&handle.key).cloned() else { return };
        if a.ended {
            return;
        }
        let (end, _) = self.run_end(&a, now_ms);
        let done = (end - a.launched_ms - self.changeover_ms).clamp(0, a.remaining_ms);
        *st.progress_ms.entry(a.job_id).or_default() += done;
        if let Some(x) = st.attempts.get_mut(&handle.key) {
            x.ended = true;
        }
    }
}
