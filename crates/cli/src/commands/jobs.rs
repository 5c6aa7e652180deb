//! Managed jobs: `launch`, `jobs`, and the background `controller`.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::str::FromStr;
use std::time::Duration;

use anyhow::{Context as _, Result, anyhow, bail};
use comfy_table::Cell;
use gpubroker_core::units::{format_hours, parse_duration_s};
use gpubroker_core::{Clock, Currency, Decimal, Money};
use gpubroker_ledger::{JobState, Store};
use gpubroker_run::controller::{attempt_cost, job_cost};
use gpubroker_run::{Backend, BackendConfig, Controller, ControllerConfig, JobSpec, RecoveryStrategy};
use serde::Serialize;

use crate::ExitStatus;
use crate::args::{JobsArgs, JobsCommand, LaunchArgs};
use crate::context::{Context, env_vars};
use crate::output::{align_right, table, write_json};

pub(crate) fn home() -> Result<PathBuf> {
    let dir = match std::env::var_os(env_vars::GPUBROKER_HOME) {
        Some(d) => PathBuf::from(d),
        None => {
            let h =
                std::env::var_os("HOME").ok_or_else(|| anyhow!("set GPUBROKER_HOME or HOME for the data directory"))?;
            PathBuf::from(h).join(".gpubroker")
        }
    };
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create the data directory {}", dir.display()))?;
    Ok(dir)
}

pub(crate) fn open_store(home: &Path) -> Result<Store> {
    Ok(Store::open(&home.join("ledger.db"))?)
}

fn local_slots() -> u32 {
    if let Ok(v) = std::env::var(env_vars::GPUBROKER_LOCAL_SLOTS)
        && let Ok(n) = v.trim().parse()
    {
        return n;
    }
    // Real GPUs when present.
    Command::new("nvidia-smi")
        .arg("-L")
        .stderr(Stdio::null())
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).lines().filter(|l| l.starts_with("GPU ")).count() as u32)
        .unwrap_or(0)
}

fn backend(home: &Path, name: &str) -> Result<Backend> {
    match name {
        "local" => Ok(Backend::build(&BackendConfig::Local { root: home.join("local"), slots: local_slots() })?),
        other => bail!("unknown backend `{other}`: this version has `local` (sim runs through `gpubroker backtest`)"),
    }
}

fn local_price() -> Result<Money> {
    let text = std::env::var(env_vars::GPUBROKER_LOCAL_GPU_HOUR_PRICE).unwrap_or_else(|_| "0 USD".into());
    Money::from_str(&text).map_err(|e| anyhow!("{}=`{text}`: {e}", env_vars::GPUBROKER_LOCAL_GPU_HOUR_PRICE))
}

fn now_ms(clock: &Clock) -> i64 {
    clock.now().as_millisecond()
}

/// Starts the controller in the background unless one holds the lock.
fn ensure_controller(home: &Path) -> Result<()> {
    let lock_path = home.join("controller.lock");
    let lock = File::options().create(true).truncate(false).write(true).open(&lock_path)?;
    if lock.try_lock().is_err() {
        return Ok(()); // running
    }
    drop(lock);
    let log = File::options().create(true).append(true).open(home.join("controller.log"))?;
    let exe = std::env::current_exe()?;
    Command::new("setsid")
        .arg(exe)
        .arg("controller")
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .spawn()
        .context("cannot start the controller")?;
    Ok(())
}

/// `gpubroker controller`: the long-lived reconcile loop (one per data directory).
pub(crate) fn controller() -> Result<ExitStatus> {
    let home = home()?;
    let lock = File::options().create(true).truncate(false).write(true).open(home.join("controller.lock"))?;
    if lock.try_lock().is_err() {
        eprintln!("gpubroker controller: another controller is running for {}", home.display());
        return Ok(ExitStatus::Success);
    }
    let store = open_store(&home)?;
    let backend = backend(&home, "local")?;
    backend.check()?;
    let env_u64 = |name: &str, default: u64| std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default);
    let config = ControllerConfig {
        poll_interval: Duration::from_millis(env_u64(env_vars::GPUBROKER_POLL_MS, 500)),
        max_running_per_queue: 0,
        queue_limits: gpubroker_run::controller::parse_queue_limits(
            &std::env::var(env_vars::GPUBROKER_QUEUE_LIMITS).unwrap_or_default(),
        )
        .map_err(|e| anyhow!("{}: {e}", env_vars::GPUBROKER_QUEUE_LIMITS))?,
        idle_exit: Some(Duration::from_secs(env_u64(env_vars::GPUBROKER_CONTROLLER_IDLE_S, 60))),
        checkpoint_root: home.join("checkpoints"),
    };
    let controller = Controller::new(store, backend, Clock::System, config);
    controller.run(&|| false)?;
    drop(lock);
    Ok(ExitStatus::Success)
}

pub(crate) fn launch(ctx: &Context, args: &LaunchArgs, out: &mut impl Write) -> Result<ExitStatus> {
    let task = super::load_task(ctx, &args.task)?;
    let Some(run) = task.run.clone().filter(|r| !r.trim().is_empty()) else {
        bail!("{}: the task has no `run` commands to launch", args.task.display());
    };
    if args.backend == "sim" {
        return simulate(ctx, args, &task, run, out);
    }
    let home = home()?;
    let backend = backend(&home, &args.backend)?;
    let now = now_ms(&ctx.clock);
    let deadline_at_ms = match &args.deadline {
        Some(text) => Some(match jiff::Timestamp::from_str(text) {
            Ok(t) => t.as_millisecond(),
            Err(_) => now + parse_duration_s(text).map_err(|e| anyhow!("`--deadline`: {e}"))? as i64 * 1000,
        }),
        None => task.deadline_s.map(|s| now + s as i64 * 1000),
    };
    let price = local_price()?;
    let budget = match &args.budget {
        Some(b) => Some(Money::from_str(b).map_err(|e| anyhow!("`--budget`: {e}"))?),
        None => task.budget,
    };
    let budget = match budget {
        Some(b) => Some(ctx.catalog.fx().convert(b, price.currency)?.amount),
        None => None,
    };
    let recovery = RecoveryStrategy::parse(&args.recovery)
        .ok_or_else(|| anyhow!("`--recovery {}`: expected same_zone, next_cheapest or on_demand", args.recovery))?;
    if let Some(w) = &args.window {
        gpubroker_core::OffPeakWindow::parse(w).map_err(|e| anyhow!("`--window`: {e}"))?;
    }
    let gpus = args
        .gpus
        .unwrap_or_else(|| task.choices.first().and_then(|c| c.gpus.first()).and_then(|(_, n)| *n).unwrap_or(0));
    let workdir = match task.envs.get("GPUBROKER_WORKDIR") {
        Some(w) => PathBuf::from(w),
        None => args
            .task
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from(".")),
    };
    let workdir = workdir.canonicalize().with_context(|| format!("working directory {}", workdir.display()))?;
    let store = open_store(&home)?;
    let spec = JobSpec {
        name: task.name.clone(),
        setup: task.setup.clone(),
        run,
        envs: task.envs.clone(),
        workdir,
        gpus,
        backend: backend.name().to_string(),
        pricing: if args.spot { "spot" } else { "on_demand" }.to_string(),
        gpu_hour_price: price.amount.normalize().to_string(),
        currency: price.currency.to_string(),
        deadline_at_ms,
        budget: budget.map(|b| b.normalize().to_string()),
        recovery,
        max_recoveries: args.max_recoveries,
        max_retries: args.max_retries,
        checkpoint_dir: None,
        window: args.window.clone(),
        expected_runtime_s: 0,
        spot_hour_price: None,
        policy: args.policy.clone(),
    };
    let mut tags = super::usage::parse_tags(&args.tag.join(";")).map_err(|e| anyhow!("`--tag`: {e}"))?;
    tags.entry("job".into()).or_insert_with(|| task.name.clone());
    tags.entry("queue".into()).or_insert_with(|| args.queue.clone());
    super::budget::enforce(&store, &ctx.catalog, &tags, now)?;
    let id = store.submit(&task.name, &serde_json::to_string(&spec)?, &args.queue, args.priority, &tags, now)?;
    if !args.no_controller {
        ensure_controller(&home)?;
    }
    writeln!(out, "{id}")?;
    let mut err = std::io::stderr().lock();
    writeln!(
        err,
        "submitted job {id} `{}` to queue `{}` on {}; follow it with `gpubroker jobs logs {id} --follow`",
        task.name,
        args.queue,
        backend.name()
    )?;
    Ok(ExitStatus::Success)
}

#[derive(Serialize)]
struct SimRun {
    policy: String,
    job_hours: f64,
    deadline_hours: f64,
    finished_hours: f64,
    met_deadline: bool,
    state: String,
    cost: Decimal,
    on_demand_only_cost: Decimal,
    spot_hours: f64,
    on_demand_hours: f64,
    attempts: Vec<AttemptRow>,
}

/// `gpubroker launch --backend sim`: the real controller, on the simulated cloud and a
/// simulated clock, in this process; prints what happened.
fn simulate(
    ctx: &Context,
    args: &LaunchArgs,
    task: &gpubroker_plan::Task,
    run: String,
    out: &mut impl Write,
) -> Result<ExitStatus> {
    use gpubroker_run::backend::SimZone;
    if args.trace.is_empty() {
        bail!("`--backend sim` needs `--trace FILE[,FILE...]` (spot availability of each zone)");
    }
    let work_h = args
        .work_hours
        .ok_or_else(|| anyhow!("`--backend sim` needs `--work-hours H` (the simulated job's compute)"))?;
    if !(work_h > 0.0 && work_h < 24.0 * 365.0) {
        bail!("`--work-hours {work_h}` must be between 0 and 8760");
    }
    let policy = gpubroker_run::Policy::parse(&args.policy).ok_or_else(|| {
        anyhow!("unknown policy `{}`: expected gpubroker, uniform-progress, greedy or on-demand", args.policy)
    })?;
    let traces = super::backtest::read_traces(&args.trace)?;
    let tick_s = traces[0].gap_s;
    if let Some(t) = traces.iter().find(|t| t.gap_s != tick_s) {
        bail!(
            "all traces must share one tick length: {} has {} s, {} has {} s",
            traces[0].name,
            tick_s,
            t.name,
            t.gap_s
        );
    }
    let start = ctx.clock.now();
    let start_ms = start.as_millisecond();
    let trace_start_ms = start_ms - (args.start_offset_hours * 3_600_000.0) as i64;
    let zones: Vec<SimZone> =
        traces.iter().map(|t| SimZone { name: t.name.clone(), available: t.available(1) }).collect();
    let backend = Backend::build(&BackendConfig::Sim {
        zones,
        tick_s,
        start_ms: trace_start_ms,
        changeover_s: args.changeover_hours * 3600.0,
    })?;
    let deadline_s = match &args.deadline {
        Some(text) => parse_duration_s(text).map_err(|e| anyhow!("`--deadline`: {e}"))?,
        None => task.deadline_s.unwrap_or((work_h * 2.0 * 3600.0) as u64),
    };
    let dir = tempfile_dir()?;
    let store = Store::open(&dir.join("sim.db"))?;
    let spec = JobSpec {
        name: task.name.clone(),
        setup: None,
        run,
        envs: Default::default(),
        workdir: dir.clone(),
        gpus: 0,
        backend: "sim".into(),
        pricing: if args.on_demand { "on_demand" } else { "spot" }.into(),
        gpu_hour_price: args.on_demand_price.to_string(),
        currency: "USD".into(),
        deadline_at_ms: Some(start_ms + deadline_s as i64 * 1000),
        budget: None,
        recovery: RecoveryStrategy::parse(&args.recovery)
            .ok_or_else(|| anyhow!("`--recovery {}`: expected same_zone, next_cheapest or on_demand", args.recovery))?,
        max_recoveries: u32::MAX,
        max_retries: 0,
        checkpoint_dir: Some(dir.join("checkpoint")),
        window: None,
        expected_runtime_s: (work_h * 3600.0).round() as u64,
        spot_hour_price: Some(args.spot_price.to_string()),
        policy: policy.name().into(),
    };
    let id = store.submit(&task.name, &serde_json::to_string(&spec)?, "sim", 0, &Default::default(), start_ms)?;
    let (clock, time) = Clock::simulated(start);
    let config = ControllerConfig {
        poll_interval: Duration::ZERO,
        max_running_per_queue: 0,
        queue_limits: Default::default(),
        idle_exit: None,
        checkpoint_root: dir.join("checkpoints"),
    };
    let controller = Controller::new(store, backend, clock, config);
    let tick_ms = i64::from(tick_s) * 1000;
    let limit_ms = start_ms + (deadline_s as i64 + (work_h * 7200.0) as i64) * 1000 + 10 * tick_ms;
    loop {
        controller.step()?;
        let job = controller.store().job(id)?;
        if job.state.is_terminal() || time.load(std::sync::atomic::Ordering::SeqCst) > limit_ms {
            break;
        }
        time.fetch_add(tick_ms, std::sync::atomic::Ordering::SeqCst);
    }
    let store = controller.store();
    let job = store.job(id)?;
    let end_ms = time.load(std::sync::atomic::Ordering::SeqCst);
    let attempts = store.attempts(id)?;
    let hours_on = |pricing: &str| {
        attempts
            .iter()
            .filter(|a| a.pricing == pricing)
            .map(|a| (a.ended_at_ms.unwrap_or(end_ms) - a.started_at_ms.unwrap_or(a.intent_at_ms)) as f64 / 3_600_000.0)
            .sum::<f64>()
    };
    let finished_ms = attempts.iter().filter_map(|a| a.ended_at_ms).max().unwrap_or(end_ms);
    let finished_hours = (finished_ms - start_ms) as f64 / 3_600_000.0;
    let report = SimRun {
        policy: policy.name().into(),
        job_hours: work_h,
        deadline_hours: deadline_s as f64 / 3600.0,
        finished_hours,
        met_deadline: job.state == JobState::Succeeded && finished_hours <= deadline_s as f64 / 3600.0 + 1e-9,
        state: job.state.to_string(),
        cost: job_cost(&attempts, end_ms).round_dp(6),
        on_demand_only_cost: (Decimal::try_from(args.on_demand_price).unwrap_or_default()
            * Decimal::try_from(work_h + args.changeover_hours).unwrap_or_default())
        .round_dp(6),
        spot_hours: hours_on("spot"),
        on_demand_hours: hours_on("on_demand"),
        attempts: attempts.iter().map(|a| AttemptRow::new(a, end_ms)).collect(),
    };
    let _ = std::fs::remove_dir_all(&dir);
    if args.json {
        write_json(out, &report)?;
    } else {
        writeln!(
            out,
            "simulated `{}` with policy {}: {} after {:.1} h (deadline {:.1} h); cost {:.2} USD vs {:.2} USD all on-demand; {:.1} h spot, {:.1} h on-demand, {} attempts",
            task.name,
            report.policy,
            report.state,
            report.finished_hours,
            report.deadline_hours,
            report.cost,
            report.on_demand_only_cost,
            report.spot_hours.max(0.0),
            report.on_demand_hours.max(0.0),
            report.attempts.len()
        )?;
        let mut t = table(&["attempt", "placement", "state", "started", "ended", "reason", "cost"]);
        for a in &report.attempts {
            t.add_row(vec![
                Cell::new(a.attempt),
                Cell::new(&a.placement),
                Cell::new(&a.state),
                Cell::new(a.started_at.as_deref().unwrap_or("-")),
                Cell::new(a.ended_at.as_deref().unwrap_or("-")),
                Cell::new(a.reason.as_deref().unwrap_or("")),
                Cell::new(format!("{:.4}", a.cost)),
            ]);
        }
        writeln!(out, "{t}")?;
    }
    Ok(if report.met_deadline { ExitStatus::Success } else { ExitStatus::Failure })
}

fn tempfile_dir() -> Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!(
        "gpubroker-sim-{}-{}",
        std::process::id(),
        Clock::System.now().as_nanosecond()
    ));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

#[derive(Serialize)]
struct JobRow {
    id: i64,
    name: String,
    queue: String,
    priority: i64,
    state: String,
    placement: Option<String>,
    attempts: usize,
    elapsed_s: i64,
    cost: Decimal,
    currency: String,
    message: Option<String>,
}

#[derive(Serialize)]
struct AttemptRow {
    attempt: i64,
    key: String,
    backend: String,
    placement: String,
    pricing: String,
    hourly_price: String,
    currency: String,
    state: String,
    launched_at: String,
    started_at: Option<String>,
    ended_at: Option<String>,
    exit_code: Option<i64>,
    reason: Option<String>,
    cost: Decimal,
}

impl AttemptRow {
    fn new(a: &gpubroker_ledger::Attempt, now_ms: i64) -> AttemptRow {
        AttemptRow {
            attempt: a.attempt,
            key: a.key.clone(),
            backend: a.backend.clone(),
            placement: a.placement.clone(),
            pricing: a.pricing.clone(),
            hourly_price: a.hourly_price.clone(),
            currency: a.currency.clone(),
            state: a.state.as_str().to_string(),
            launched_at: time_text(a.intent_at_ms),
            started_at: a.started_at_ms.map(time_text),
            ended_at: a.ended_at_ms.map(time_text),
            exit_code: a.exit_code,
            reason: a.reason.clone(),
            cost: attempt_cost(a, now_ms).round_dp(6),
        }
    }
}

fn time_text(ms: i64) -> String {
    jiff::Timestamp::from_millisecond(ms).map(|t| t.to_string()).unwrap_or_else(|_| ms.to_string())
}

pub(crate) fn jobs(ctx: &Context, args: &JobsArgs, out: &mut impl Write) -> Result<ExitStatus> {
    let home = home()?;
    let store = open_store(&home)?;
    let now = now_ms(&ctx.clock);
    match &args.command {
        None => {
            let mut rows = Vec::new();
            for j in store.jobs(!args.all)? {
                let attempts = store.attempts(j.id)?;
                let spec: Option<JobSpec> = serde_json::from_str(&j.spec).ok();
                let end = if j.state.is_terminal() { j.updated_at_ms } else { now };
                rows.push(JobRow {
                    id: j.id,
                    name: j.name.clone(),
                    queue: j.queue.clone(),
                    priority: j.priority,
                    state: j.state.to_string(),
                    placement: attempts.last().map(|a| a.placement.clone()),
                    attempts: attempts.len(),
                    elapsed_s: (end - j.submitted_at_ms) / 1000,
                    cost: job_cost(&attempts, now).round_dp(6),
                    currency: spec.map(|s| s.currency).unwrap_or_else(|| "USD".into()),
                    message: j.message.clone(),
                });
            }
            if args.json {
                write_json(out, &rows)?;
                return Ok(ExitStatus::Success);
            }
            let mut t =
                table(&["id", "name", "queue", "state", "placement", "attempts", "elapsed", "cost so far", "message"]);
            for r in &rows {
                t.add_row(vec![
                    Cell::new(r.id),
                    Cell::new(&r.name),
                    Cell::new(&r.queue),
                    Cell::new(&r.state),
                    Cell::new(r.placement.as_deref().unwrap_or("-")),
                    Cell::new(r.attempts),
                    Cell::new(format_hours(r.elapsed_s as f64 / 3600.0)),
                    Cell::new(format!("{:.4} {}", r.cost, r.currency)),
                    Cell::new(r.message.as_deref().unwrap_or("")),
                ]);
            }
            align_right(&mut t, &[0, 5, 6, 7]);
            writeln!(out, "{t}")?;
            Ok(ExitStatus::Success)
        }
        Some(JobsCommand::Show { id, json }) => {
            let job = store.job(*id)?;
            let attempts: Vec<AttemptRow> = store.attempts(*id)?.iter().map(|a| AttemptRow::new(a, now)).collect();
            if *json {
                #[derive(Serialize)]
                struct Show<'a> {
                    id: i64,
                    name: &'a str,
                    state: String,
                    message: Option<&'a str>,
                    attempts: &'a [AttemptRow],
                    events: Vec<(String, String, String)>,
                }
                let events = store.events(*id)?.into_iter().map(|e| (time_text(e.at_ms), e.kind, e.detail)).collect();
                write_json(
                    out,
                    &Show {
                        id: job.id,
                        name: &job.name,
                        state: job.state.to_string(),
                        message: job.message.as_deref(),
                        attempts: &attempts,
                        events,
                    },
                )?;
                return Ok(ExitStatus::Success);
            }
            writeln!(
                out,
                "job {} `{}`: {}{}",
                job.id,
                job.name,
                job.state,
                job.message.as_deref().map(|m| format!(" ({m})")).unwrap_or_default()
            )?;
            let mut t =
                table(&["attempt", "placement", "pricing", "per hour", "state", "started", "ended", "exit", "cost"]);
            for a in &attempts {
                t.add_row(vec![
                    Cell::new(a.attempt),
                    Cell::new(&a.placement),
                    Cell::new(&a.pricing),
                    Cell::new(format!("{} {}", a.hourly_price, a.currency)),
                    Cell::new(&a.state),
                    Cell::new(a.started_at.as_deref().unwrap_or("-")),
                    Cell::new(a.ended_at.as_deref().unwrap_or("-")),
                    Cell::new(a.exit_code.map(|c| c.to_string()).unwrap_or_default()),
                    Cell::new(format!("{:.6}", a.cost)),
                ]);
            }
            writeln!(out, "{t}")?;
            writeln!(out, "events:")?;
            for e in store.events(*id)? {
                writeln!(out, "  {} {} {}", time_text(e.at_ms), e.kind, e.detail)?;
            }
            Ok(ExitStatus::Success)
        }
        Some(JobsCommand::Cancel { id }) => {
            let job = store.request_cancel(*id, now)?;
            if job.state.is_terminal() {
                writeln!(out, "job {id} already {}", job.state)?;
                return Ok(ExitStatus::Failure);
            }
            ensure_controller(&home)?;
            writeln!(out, "job {id}: cancel requested")?;
            Ok(ExitStatus::Success)
        }
        Some(JobsCommand::Logs { id, follow }) => logs(&store, &home, *id, *follow, out),
    }
}

/// Prints every attempt's log; with `follow`, keeps printing new output until the job ends.
fn logs(store: &Store, home: &Path, id: i64, follow: bool, out: &mut impl Write) -> Result<ExitStatus> {
    use std::io::IsTerminal;
    let mut offsets: std::collections::BTreeMap<String, u64> = Default::default();
    let backend = backend(home, "local")?;
    // While following on a terminal, a status line on stderr shows the job is alive between
    // bursts of output (never in a pipe, so logs stay clean).
    let show_progress = follow && std::io::stderr().is_terminal();
    let spinner = ['|', '/', '-', '\\'];
    let mut spins = 0usize;
    let mut status_shown = false;
    loop {
        let job = store.job(id)?;
        for a in store.attempts(id)? {
            let Some(path) = backend.log_path(&a.key) else { continue };
            let Ok(mut f) = File::open(&path) else { continue };
            let offset = offsets.entry(a.key.clone()).or_insert_with(|| u64::MAX);
            if *offset == u64::MAX {
                if status_shown {
                    eprint!("\r\x1b[2K");
                    status_shown = false;
                }
                writeln!(out, "==> attempt {} ({}) <==", a.attempt, a.placement)?;
                *offset = 0;
            }
            f.seek(SeekFrom::Start(*offset))?;
            let mut buf = Vec::new();
            f.read_to_end(&mut buf)?;
            *offset += buf.len() as u64;
            if !buf.is_empty() && status_shown {
                eprint!("\r\x1b[2K");
                status_shown = false;
            }
            out.write_all(&buf)?;
        }
        out.flush()?;
        if show_progress && !job.state.is_terminal() {
            let attempts = store.attempts(id)?;
            let elapsed = (Clock::System.now().as_millisecond() - job.submitted_at_ms).max(0) / 1000;
            eprint!(
                "\r\x1b[2K{} job {id} {} (attempt {}), {:02}:{:02}:{:02} elapsed",
                spinner[spins % spinner.len()],
                job.state,
                attempts.len(),
                elapsed / 3600,
                elapsed / 60 % 60,
                elapsed % 60
            );
            spins += 1;
            status_shown = true;
        }
        if !follow || job.state.is_terminal() {
            if status_shown {
                eprintln!();
            }
            return Ok(if job.state == JobState::Failed { ExitStatus::Failure } else { ExitStatus::Success });
        }
        std::thread::sleep(Duration::from_millis(300));
    }
}

#[allow(dead_code)]
fn currency_of(spec: &JobSpec) -> Currency {
    spec.currency.parse().unwrap_or(Currency::USD)
}
