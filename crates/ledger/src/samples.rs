//! GPU utilisation samples (from `nvidia-smi`, DCGM or NVML) and the idle periods they show.

use rusqlite::params;

use crate::store::{Store, StoreError};

/// One utilisation sample.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample {
    /// When, Unix ms.
    pub at_ms: i64,
    /// GPU index on the resource.
    pub gpu: u32,
    /// Utilisation, percent.
    pub util_pct: f64,
}

/// A stretch of time during which every GPU of a resource stayed under the threshold.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct IdleSpan {
    /// Start, Unix ms.
    pub start_ms: i64,
    /// End, Unix ms.
    pub end_ms: i64,
}

impl Store {
    /// Stores samples of a resource (idempotent per resource, GPU and time). Returns how many were new.
    pub fn add_samples(&self, resource_id: &str, samples: &[Sample]) -> Result<usize, StoreError> {
        let tx = self.write_tx().map_err(|e| self.wrap(e))?;
        let mut added = 0;
        {
            let mut stmt = tx
                .prepare_cached(
                    "INSERT OR IGNORE INTO gpu_samples (resource_id, gpu, at_ms, util_pct) VALUES (?1, ?2, ?3, ?4)",
                )
                .map_err(|e| self.wrap(e))?;
            for s in samples {
                added += stmt.execute(params![resource_id, s.gpu, s.at_ms, s.util_pct]).map_err(|e| self.wrap(e))?;
            }
        }
        tx.commit().map_err(|e| self.wrap(e))?;
        Ok(added)
    }

    /// Resources with samples.
    pub fn sampled_resources(&self) -> Result<Vec<String>, StoreError> {
        let mut stmt = self
            .conn()
            .prepare("SELECT DISTINCT resource_id FROM gpu_samples ORDER BY resource_id")
            .map_err(|e| self.wrap(e))?;
        let rows = stmt.query_map([], |r| r.get(0)).map_err(|e| self.wrap(e))?;
        rows.collect::<Result<Vec<String>, _>>().map_err(|e| self.wrap(e))
    }

    /// A resource's samples in time order.
    pub fn samples(&self, resource_id: &str) -> Result<Vec<Sample>, StoreError> {
        let mut stmt = self
            .conn()
            .prepare("SELECT at_ms, gpu, util_pct FROM gpu_samples WHERE resource_id = ?1 ORDER BY at_ms, gpu")
            .map_err(|e| self.wrap(e))?;
        let rows = stmt
            .query_map(params![resource_id], |r| Ok(Sample { at_ms: r.get(0)?, gpu: r.get(1)?, util_pct: r.get(2)? }))
            .map_err(|e| self.wrap(e))?;
        rows.collect::<Result<Vec<_>, _>>().map_err(|e| self.wrap(e))
    }
}

/// Spans of at least `min_ms` in which the busiest GPU at every sample time stayed under
/// `threshold_pct`. A gap between samples longer than `max_gap_ms` breaks a span (no evidence).
pub fn idle_spans(samples: &[Sample], threshold_pct: f64, min_ms: i64, max_gap_ms: i64) -> Vec<IdleSpan> {
    // Busiest GPU per sample time.
    let mut points: Vec<(i64, f64)> = Vec::new();
    for s in samples {
        match points.last_mut() {
            Some((t, u)) if *t == s.at_ms => *u = u.max(s.util_pct),
            _ => points.push((s.at_ms, s.util_pct)),
        }
    }
    let mut spans = Vec::new();
    let mut open: Option<(i64, i64)> = None; // (start, last idle sample)
    for (t, u) in points {
        let idle = u < threshold_pct;
        match (open, idle) {
            (Some((start, last)), true) if t - last <= max_gap_ms => open = Some((start, t)),
            (Some((start, last)), _) => {
                if last - start >= min_ms {
                    spans.push(IdleSpan { start_ms: start, end_ms: last });
                }
                open = if idle { Some((t, t)) } else { None };
            }
            (None, true) => open = Some((t, t)),
            (None, false) => {}
        }
    }
    if let Some((start, last)) = open
        && last - start >= min_ms
    {
        spans.push(IdleSpan { start_ms: start, end_ms: last });
    }
    spans
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(min: i64, gpu: u32, util: f64) -> Sample {
        Sample { at_ms: min * 60_000, gpu, util_pct: util }
    }

    #[test]
    fn idle_needs_every_gpu_quiet_for_the_whole_window() {
        let mut v = Vec::new();
        for m in 0..60 {
            v.push(s(m, 0, if (10..40).contains(&m) { 2.0 } else { 90.0 }));
            // GPU 1 is busy for a moment at minute 25: the machine is not idle then.
            v.push(s(m, 1, if m == 25 { 50.0 } else { 1.0 }));
        }
        let spans = idle_spans(&v, 10.0, 10 * 60_000, 5 * 60_000);
        assert_eq!(
            spans,
            vec![
                IdleSpan { start_ms: 10 * 60_000, end_ms: 24 * 60_000 },
                IdleSpan { start_ms: 26 * 60_000, end_ms: 39 * 60_000 }
            ]
        );
        assert!(idle_spans(&v, 10.0, 20 * 60_000, 5 * 60_000).is_empty());
    }

    #[test]
    fn a_gap_in_samples_breaks_a_span() {
        let v = vec![s(0, 0, 0.0), s(5, 0, 0.0), s(60, 0, 0.0), s(70, 0, 0.0)];
        assert_eq!(
            idle_spans(&v, 10.0, 4 * 60_000, 10 * 60_000),
            vec![IdleSpan { start_ms: 0, end_ms: 5 * 60_000 }, IdleSpan { start_ms: 60 * 60_000, end_ms: 70 * 60_000 }]
        );
    }
}
