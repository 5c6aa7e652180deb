use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use jiff::Timestamp;

/// The source of "now". Read once at the edge (the CLI's `main`) and passed inward, so the
/// planner, the simulator and tests are deterministic.
#[derive(Debug, Clone)]
pub enum Clock {
    /// The system clock.
    System,
    /// A fixed instant (tests, `GPUBROKER_NOW`, backtests).
    Fixed(Timestamp),
    /// A simulated clock in Unix milliseconds that its owner advances (the simulated cloud runs
    /// the real controller faster than real time).
    Simulated(Arc<AtomicI64>),
}

impl Clock {
    /// The current instant according to this clock.
    pub fn now(&self) -> Timestamp {
        match self {
            // The one sanctioned call of the system clock.
            Clock::System => Timestamp::now(),
            Clock::Fixed(at) => *at,
            Clock::Simulated(ms) => {
                Timestamp::from_millisecond(ms.load(Ordering::SeqCst)).unwrap_or(Timestamp::UNIX_EPOCH)
            }
        }
    }

    /// A simulated clock starting at `start`, and the handle that advances it.
    pub fn simulated(start: Timestamp) -> (Clock, Arc<AtomicI64>) {
        let ms = Arc::new(AtomicI64::new(start.as_millisecond()));
        (Clock::Simulated(ms.clone()), ms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn simulated_clock_moves_when_told() {
        let (clock, handle) = Clock::simulated(Timestamp::UNIX_EPOCH);
        assert_eq!(clock.now(), Timestamp::UNIX_EPOCH);
        handle.fetch_add(1500, Ordering::SeqCst);
        assert_eq!(clock.now().as_millisecond(), 1500);
    }
}
