use jiff::Timestamp;

/// The source of "now". Read once at the edge (the CLI's `main`) and passed inward, so the
/// planner, the simulator and tests are deterministic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Clock {
    /// The system clock.
    System,
    /// A fixed instant (tests, `GPUBROKER_NOW`, backtests).
    Fixed(Timestamp),
}

impl Clock {
    /// The current instant according to this clock.
    pub fn now(&self) -> Timestamp {
        match self {
            // The one sanctioned call of the system clock.
            Clock::System => Timestamp::now(),
            Clock::Fixed(at) => *at,
        }
    }
}
