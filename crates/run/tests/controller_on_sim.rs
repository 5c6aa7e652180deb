//! The real job controller, driving the simulated cloud on a simulated clock, reaches the same
//! costs as the backtest engine for the same policy, trace and start: one policy code path
//! serves both.

#![allow(clippy::unwrap_used)]

use std::sync::atomic::Ordering;
use std::time::Duration;

use gpubroker_core::Clock;
use gpubroker_ledger::Store;
use gpubroker_run::backend::SimZone;
use gpubroker_run::backtest::{BacktestConfig, Scenario, simulate};
use gpubroker_run::controller::job_cost;
use gpubroker_run::{Backend, BackendConfig, Controller, ControllerConfig, JobSpec, Policy, RecoveryStrategy};

fn trace() -> Vec<bool> {
    // A deterministic pattern with outages of varying length (600 s ticks).
    let mut rng = fastrand::Rng::with_seed(3);
    let mut v = Vec::new();
    while v.len() < 2000 {
        let up = rng.usize(2..40);
        let down = rng.usize(1..25);
        v.extend(std::iter::repeat_n(true, up));
        v.extend(std::iter::repeat_n(false, down));
    }
    v
}

fn controller_cost(policy: Policy, avail: &[bool], start_tick: usize, cfg: &BacktestConfig) -> (f64, bool) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("sim.db")).unwrap();
    let t0 = jiff::Timestamp::from_second(1_700_000_000).unwrap();
    let start_ms = t0.as_millisecond();
    let tick_ms = 600_000i64;
    let backend = Backend::build(&BackendConfig::Sim {
        zones: vec![SimZone { name: "z".into(), available: avail.to_vec() }],
        tick_s: 600,
        start_ms: start_ms - start_tick as i64 * tick_ms,
        changeover_s: cfg.changeover_hours * 3600.0,
    })
    .unwrap();
    let spec = JobSpec {
        name: "sim".into(),
        setup: None,
        run: "true".into(),
        envs: Default::default(),
        workdir: dir.path().to_path_buf(),
        gpus: 0,
        backend: "sim".into(),
        pricing: "spot".into(),
        gpu_hour_price: cfg.on_demand_price.to_string(),
        currency: "USD".into(),
        deadline_at_ms: Some(start_ms + (cfg.deadline_hours * 3_600_000.0) as i64),
        budget: None,
        recovery: RecoveryStrategy::SameZone,
        max_recoveries: u32::MAX,
        max_retries: 0,
        checkpoint_dir: None,
        window: None,
        expected_runtime_s: (cfg.job_hours * 3600.0) as u64,
        spot_hour_price: Some(cfg.spot_price.to_string()),
        policy: policy.name().into(),
    };
    let id =
        store.submit("sim", &serde_json::to_string(&spec).unwrap(), "q", 0, &Default::default(), start_ms).unwrap();
    let (clock, time) = Clock::simulated(t0);
    let config = ControllerConfig {
        poll_interval: Duration::ZERO,
        max_running_per_queue: 0,
        queue_limits: Default::default(),
        idle_exit: None,
        checkpoint_root: dir.path().into(),
    };
    let controller = Controller::new(store, backend, clock, config);
    for _ in 0..5000 {
        controller.step().unwrap();
        if controller.store().job(id).unwrap().state.is_terminal() {
            break;
        }
        time.fetch_add(tick_ms, Ordering::SeqCst);
    }
    let job = controller.store().job(id).unwrap();
    let attempts = controller.store().attempts(id).unwrap();
    let end = attempts.iter().filter_map(|a| a.ended_at_ms).max().unwrap();
    let finished_h = (end - start_ms) as f64 / 3_600_000.0;
    let cost: f64 = job_cost(&attempts, end).to_string().parse().unwrap();
    (cost, job.state == gpubroker_ledger::JobState::Succeeded && finished_h <= cfg.deadline_hours + 1e-6)
}

#[test]
fn controller_on_the_simulated_cloud_matches_the_backtest() {
    let avail = trace();
    let scenario = Scenario { name: "z".into(), tick_s: 600.0, zones: vec![avail.clone()] };
    let cfg = BacktestConfig {
        job_hours: 24.0,
        deadline_hours: 30.0,
        changeover_hours: 0.2,
        on_demand_price: 3.06,
        spot_price: 0.9731,
        starts: 1,
        seed: 1,
        nodes: 1,
    };
    for policy in [Policy::OnDemand, Policy::Greedy, Policy::UniformProgress, Policy::GPUBROKER] {
        for start in [0usize, 137, 555, 901] {
            let expected = simulate(&policy, &scenario, start, &cfg);
            let (cost, on_time) = controller_cost(policy, &avail, start, &cfg);
            assert!(on_time, "{} from tick {start}: missed the deadline on the controller", policy.name());
            assert!(!expected.missed);
            // Per-second billing of whole seconds on the controller side; the engine bills exactly.
            assert!(
                (cost - expected.cost).abs() <= expected.cost * 0.01 + 0.01,
                "{} from tick {start}: controller {cost:.4} vs backtest {:.4}",
                policy.name(),
                expected.cost
            );
        }
    }
}
