//! Spot availability traces.
//!
//! Two formats are read (see `../shared/data/spot-traces/README.md`):
//! * Can't Be Late JSON: `{"metadata": {"gap_seconds": N}, "data": [..]}`, where `data[i]` is the
//!   number of spot instances available at tick i (1 = available for 1-node traces);
//! * the raw probe CSV `clock,timestamp,fail`, where `fail = 1` means the launch FAILED. The
//!   polarity is opposite to the JSON files; this reader inverts it.
//!
//! A multi-node trace counts instances; a gang job of N nodes treats a tick as available only
//! when all N are (the paper's "polarization rule").

use std::path::Path;

use serde::Deserialize;

/// A trace that cannot be read.
#[derive(Debug, thiserror::Error)]
#[error("{file}: {message}")]
pub struct TraceError {
    /// The file.
    pub file: String,
    /// What is wrong.
    pub message: String,
}

/// Spot availability of one zone over time.
#[derive(Debug, Clone, PartialEq)]
pub struct SpotTrace {
    /// Name (file stem, e.g. `us-west-2a_v100_1`).
    pub name: String,
    /// Seconds per tick.
    pub gap_s: u32,
    /// Available instances per tick.
    pub counts: Vec<u32>,
}

#[derive(Deserialize)]
struct CbLFile {
    metadata: CbLMeta,
    data: Vec<f64>,
}

#[derive(Deserialize)]
struct CbLMeta {
    gap_seconds: f64,
}

impl SpotTrace {
    /// Reads a trace file, choosing the format by extension (`.json` or a CSV/text probe log).
    pub fn read(path: &Path) -> Result<SpotTrace, TraceError> {
        let file = path.display().to_string();
        let err = |message: String| TraceError { file: file.clone(), message };
        let text = std::fs::read_to_string(path).map_err(|e| err(format!("cannot read: {e}")))?;
        let name = path.file_stem().and_then(|s| s.to_str()).unwrap_or("trace").to_string();
        if path.extension().is_some_and(|e| e == "json") {
            Self::parse_json(&name, &text).map_err(err)
        } else {
            Self::parse_probe_csv(&name, &text).map_err(err)
        }
    }

    /// Parses the Can't Be Late JSON format.
    pub fn parse_json(name: &str, text: &str) -> Result<SpotTrace, String> {
        let f: CbLFile = serde_json::from_str(text).map_err(|e| format!("not a Can't Be Late trace: {e}"))?;
        if !(f.metadata.gap_seconds >= 1.0 && f.metadata.gap_seconds <= 86_400.0) {
            return Err(format!("metadata.gap_seconds {} must be between 1 and 86400", f.metadata.gap_seconds));
        }
        let mut counts = Vec::with_capacity(f.data.len());
        for (i, v) in f.data.iter().enumerate() {
            if !(v.is_finite() && *v >= 0.0 && v.fract() == 0.0) {
                return Err(format!("data[{i}] = {v}: expected a whole number of instances >= 0"));
            }
            counts.push(*v as u32);
        }
        if counts.is_empty() {
            return Err("data is empty".into());
        }
        Ok(SpotTrace { name: name.to_string(), gap_s: f.metadata.gap_seconds.round() as u32, counts })
    }

    /// Parses a raw probe log `clock,timestamp,fail` (1 = launch failed). The tick length is the
    /// median gap between timestamps.
    pub fn parse_probe_csv(name: &str, text: &str) -> Result<SpotTrace, String> {
        let mut times = Vec::new();
        let mut counts = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with("clock") {
                continue;
            }
            let cells: Vec<&str> = line.split(',').map(str::trim).collect();
            if cells.len() != 3 {
                return Err(format!("line {}: expected `clock,timestamp,fail`", i + 1));
            }
            let t = cells[1]
                .parse::<jiff::Timestamp>()
                .ok()
                .filter(|_| cells[1].ends_with('Z'))
                .map(|t| t.as_second())
                .ok_or_else(|| format!("line {}: `{}` is not a UTC timestamp", i + 1, cells[1]))?;
            let fail: u8 =
                cells[2].parse().map_err(|_| format!("line {}: fail `{}` must be 0 or 1", i + 1, cells[2]))?;
            if fail > 1 {
                return Err(format!("line {}: fail `{fail}` must be 0 or 1", i + 1));
            }
            times.push(t);
            counts.push(u32::from(fail == 0));
        }
        if counts.len() < 2 {
            return Err("fewer than two probes".into());
        }
        let mut gaps: Vec<i64> = times.windows(2).map(|w| w[1] - w[0]).filter(|g| *g > 0).collect();
        gaps.sort_unstable();
        let gap = gaps.get(gaps.len() / 2).copied().unwrap_or(600).max(1);
        Ok(SpotTrace { name: name.to_string(), gap_s: gap as u32, counts })
    }

    /// The largest count (the instance pool size the trace probed).
    pub fn capacity(&self) -> u32 {
        self.counts.iter().copied().max().unwrap_or(0)
    }

    /// Availability per tick for a gang of `nodes` instances.
    pub fn available(&self, nodes: u32) -> Vec<bool> {
        self.counts.iter().map(|c| *c >= nodes.max(1)).collect()
    }

    /// Share of ticks with at least `nodes` instances available.
    pub fn availability(&self, nodes: u32) -> f64 {
        let a = self.available(nodes);
        a.iter().filter(|x| **x).count() as f64 / a.len().max(1) as f64
    }

    /// Duration in hours.
    pub fn hours(&self) -> f64 {
        self.counts.len() as f64 * self.gap_s as f64 / 3600.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_and_raw_probe_polarity() {
        let j = SpotTrace::parse_json("z", r#"{"metadata": {"gap_seconds": 600}, "data": [1, 0, 1]}"#).unwrap();
        assert_eq!(j.available(1), vec![true, false, true]);
        let raw = SpotTrace::parse_probe_csv(
            "z",
            "0,2022-10-26T22:05:04.000Z,0\n1,2022-10-26T22:15:04.000Z,1\n2,2022-10-26T22:25:04.000Z,0\n",
        )
        .unwrap();
        assert_eq!(raw.gap_s, 600);
        assert_eq!(raw.available(1), vec![true, false, true], "fail=1 means unavailable");
    }

    #[test]
    fn gang_needs_every_node() {
        let t = SpotTrace { name: "x".into(), gap_s: 300, counts: vec![4, 3, 0, 4] };
        assert_eq!(t.available(4), vec![true, false, false, true]);
        assert_eq!(t.capacity(), 4);
    }

    #[test]
    fn bad_traces_are_rejected() {
        assert!(SpotTrace::parse_json("z", r#"{"metadata": {"gap_seconds": 0}, "data": [1]}"#).is_err());
        assert!(SpotTrace::parse_json("z", r#"{"metadata": {"gap_seconds": 60}, "data": [-1]}"#).is_err());
        assert!(SpotTrace::parse_json("z", "[1,2]").is_err());
        assert!(SpotTrace::parse_probe_csv("z", "0,yesterday,1\n1,today,0\n").is_err());
    }

    #[test]
    fn real_trace_matches_its_raw_probe_log() {
        // The published JSON is the bit-inverse of the raw log for the overlapping ticks
        // (shared/data/spot-traces/README.md); check our two readers agree.
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/spot-traces");
        let json = root.join("availability/1-node/aws-10-26-2022/us-west-2a_v100_1.json");
        let raw = root.join("raw-2022-probes/2022-10-26T22-05/us-west-2a_v100_1.txt");
        if !json.is_file() || !raw.is_file() {
            eprintln!("skipped: shared traces not present");
            return;
        }
        let a = SpotTrace::read(&json).unwrap();
        let b = SpotTrace::read(&raw).unwrap();
        assert_eq!(a.gap_s, b.gap_s);
        let n = a.counts.len().min(b.counts.len());
        assert!(n > 1000);
        assert_eq!(a.available(1)[..n], b.available(1)[..n]);
    }
}
