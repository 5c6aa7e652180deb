//! Managed jobs on the local backend: real processes, a real SQLite ledger.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rust_decimal::Decimal;

use crate::common::{dec, gpubroker, json, run};

/// A data directory and a task that counts to `steps`, checkpointing every step, and records
/// each start and finish in `journal`.
struct Fixture {
    dir: tempfile::TempDir,
}

impl Fixture {
    fn new() -> Fixture {
        Fixture { dir: tempfile::tempdir().expect("tempdir") }
    }

    fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    fn journal(&self) -> PathBuf {
        self.dir.path().join("journal")
    }

    fn task(&self, name: &str, steps: u32, step_s: &str) -> PathBuf {
        let path = self.dir.path().join(format!("{name}.yaml"));
        let text = format!(
            r#"name: {name}
envs:
  JOURNAL: {journal}
run: |
  ckpt="$GPUBROKER_CHECKPOINT_DIR/step"
  echo "start {name} $GPUBROKER_ATTEMPT" >> "$JOURNAL"
  step=0
  if [ -f "$ckpt" ]; then step=$(cat "$ckpt"); echo "resumed from step $step"; fi
  while [ "$step" -lt {steps} ]; do
    step=$((step + 1)); echo "$step" > "$ckpt.tmp" && mv "$ckpt.tmp" "$ckpt"; sleep {step_s}
  done
  echo "done at step $step"
  echo "done {name}" >> "$JOURNAL"
"#,
            journal = self.journal().display()
        );
        std::fs::write(&path, text).expect("write task");
        path
    }

    fn cmd(&self) -> Command {
        let mut c = gpubroker();
        c.env_remove("GPUBROKER_NOW")
            .env("GPUBROKER_HOME", self.home())
            .env("GPUBROKER_POLL_MS", "50")
            .env("GPUBROKER_CONTROLLER_IDLE_S", "2")
            .env("GPUBROKER_LOCAL_GPU_HOUR_PRICE", "3.6 USD")
            .env("GPUBROKER_LOCAL_SLOTS", "0");
        c
    }

    fn launch(&self, task: &Path, extra: &[&str]) -> i64 {
        let out = run(self.cmd().arg("launch").arg(task).args(extra));
        assert_eq!(out.code, 0, "{}", out.stderr);
        out.stdout.trim().parse().expect("job id")
    }

    fn job(&self, id: i64) -> serde_json::Value {
        json(self.cmd().args(["jobs", "show", &id.to_string(), "--json"]))
    }

    fn wait_state(&self, id: i64, states: &[&str], timeout: Duration) -> serde_json::Value {
        let started = Instant::now();
        loop {
            let j = self.job(id);
            if states.iter().any(|s| j["state"] == *s) {
                return j;
            }
            if started.elapsed() >= timeout {
                let log = std::fs::read_to_string(self.home().join("controller.log")).unwrap_or_default();
                panic!("job {id} stuck: {j}\ncontroller.log:\n{log}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn pid_of(&self, key: &str) -> Option<u32> {
        std::fs::read_to_string(self.home().join("local").join(key).join("pid")).ok()?.trim().parse().ok()
    }

    fn journal_lines(&self) -> Vec<String> {
        std::fs::read_to_string(self.journal()).unwrap_or_default().lines().map(String::from).collect()
    }
}

#[test]
fn preempted_job_resumes_from_its_checkpoint() {
    let f = Fixture::new();
    let task = f.task("counter", 30, "0.1");
    let id = f.launch(&task, &[]);
    // Wait until attempt 1 is running and has made progress, then preempt it from outside.
    let started = Instant::now();
    let pid = loop {
        let step: u32 = std::fs::read_to_string(f.home().join(format!("checkpoints/{id}/step")))
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(0);
        if step >= 5
            && let Some(pid) = f.pid_of(&format!("{id}-1"))
        {
            break pid;
        }
        assert!(started.elapsed() < Duration::from_secs(20), "attempt 1 never progressed");
        std::thread::sleep(Duration::from_millis(50));
    };
    let killed = Command::new("kill").args(["-TERM", "--", &format!("-{pid}")]).status().expect("kill");
    assert!(killed.success());
    let job = f.wait_state(id, &["SUCCEEDED", "FAILED"], Duration::from_secs(30));
    assert_eq!(job["state"], "SUCCEEDED", "{job}");
    let attempts = job["attempts"].as_array().expect("attempts");
    assert_eq!(attempts.len(), 2, "{job}");
    assert_eq!(attempts[0]["state"], "preempted");
    assert_eq!(attempts[1]["state"], "succeeded");
    // Every attempt's time was metered and priced; the job's cost is their sum.
    let costs: Vec<Decimal> = attempts.iter().map(|a| dec(&a["cost"])).collect();
    assert!(costs.iter().all(|c| *c > Decimal::ZERO), "{costs:?}");
    let listed = json(f.cmd().args(["jobs", "--all", "--json"]));
    assert_eq!(dec(&listed[0]["cost"]), costs.iter().copied().sum::<Decimal>());
    // Both attempts were metered into the cost ledger, attributed to the job.
    let report = json(f.cmd().args(["cost", "report", "--by", "job", "--source", "job", "--json"]));
    assert_eq!(report["rows"][0]["key"], "counter");
    assert_eq!(report["rows"][0]["charges"], 2);
    assert_eq!(dec(&report["total"]["billed_cost"]), costs.iter().copied().sum::<Decimal>());
    // The second attempt resumed from the checkpoint, not from zero.
    let logs = run(f.cmd().args(["jobs", "logs", &id.to_string()]));
    let resumed: u32 = logs
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("resumed from step "))
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or_else(|| panic!("no resume in logs: {}", logs.stdout));
    assert!(resumed >= 5, "resumed from {resumed}");
    assert!(logs.stdout.contains("done at step 30"), "{}", logs.stdout);
    assert_eq!(f.journal_lines().iter().filter(|l| l.starts_with("done")).count(), 1);
}

#[test]
fn cancel_stops_the_running_attempt() {
    let f = Fixture::new();
    let id = f.launch(&f.task("long", 1000, "0.1"), &[]);
    f.wait_state(id, &["RUNNING"], Duration::from_secs(20));
    let out = run(f.cmd().args(["jobs", "cancel", &id.to_string()]));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let job = f.wait_state(id, &["CANCELLED"], Duration::from_secs(20));
    assert_eq!(job["attempts"][0]["state"], "terminated");
    assert!(f.journal_lines().iter().all(|l| !l.starts_with("done")));
}

#[test]
fn a_job_over_budget_is_stopped_and_reported() {
    let f = Fixture::new();
    // 3.6 USD/h = 0.001 USD/s: a 0.002 USD budget lasts about 2 s of a 100 s job.
    let id = f.launch(&f.task("spender", 1000, "0.1"), &["--budget", "0.002 USD"]);
    let job = f.wait_state(id, &["FAILED", "SUCCEEDED"], Duration::from_secs(30));
    assert_eq!(job["state"], "FAILED");
    assert!(job["message"].as_str().unwrap_or("").contains("budget"), "{job}");
    assert_eq!(job["attempts"][0]["reason"], "over budget");
}

#[test]
fn bad_launches_are_refused() {
    let f = Fixture::new();
    let (_d, no_run) = crate::common::temp_file("t.yaml", "name: x\nresources:\n  accelerators: A100:1\n");
    let out = run(f.cmd().arg("launch").arg(&no_run));
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("has no `run` commands"), "{}", out.stderr);
    let out = run(f.cmd().args(["jobs", "show", "999"]));
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("no job with id 999"), "{}", out.stderr);
    let out = run(f.cmd().arg("launch").arg(f.task("x", 1, "0")).args(["--backend", "mars"]));
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("unknown backend `mars`"), "{}", out.stderr);
}

/// The controller is `kill -9`ed at random moments (at least 20 times) while jobs run; after
/// each restart it reconciles from the ledger. Every job must finish exactly once: one attempt
/// each (the controller never launched a job twice) and one completion.
#[test]
fn controller_survives_kill_9_and_runs_every_job_exactly_once() {
    let f = Fixture::new();
    let jobs: Vec<i64> =
        (0..6).map(|i| f.launch(&f.task(&format!("job{i}"), 25, "0.1"), &["--no-controller"])).collect();
    let mut rng = fastrand::Rng::with_seed(7);
    let spawn = || -> Child {
        f.cmd().arg("controller").stdout(Stdio::null()).stderr(Stdio::null()).spawn().expect("controller")
    };
    let mut kills = 0;
    let started = Instant::now();
    loop {
        let mut controller = spawn();
        std::thread::sleep(Duration::from_millis(rng.u64(20..300)));
        let _ = controller.kill(); // SIGKILL
        let _ = controller.wait();
        kills += 1;
        let done = jobs.iter().all(|id| {
            let s = f.job(*id)["state"].as_str().unwrap_or("").to_string();
            s == "SUCCEEDED" || s == "FAILED"
        });
        if done && kills >= 20 {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(120), "jobs did not finish");
    }
    assert!(kills >= 20);
    let journal = f.journal_lines();
    for (i, id) in jobs.iter().enumerate() {
        let job = f.job(*id);
        assert_eq!(job["state"], "SUCCEEDED", "{job}");
        assert_eq!(job["attempts"].as_array().expect("attempts").len(), 1, "job {id} launched more than once: {job}");
        let starts = journal.iter().filter(|l| **l == format!("start job{i} 1")).count();
        let dones = journal.iter().filter(|l| **l == format!("done job{i}")).count();
        assert_eq!((starts, dones), (1, 1), "job{i}: {journal:?}");
    }
}

/// A queue limited to one running attempt runs its jobs one at a time, highest priority first.
#[test]
fn queue_limit_and_priority_order() {
    let f = Fixture::new();
    let low = f.launch(&f.task("low", 3, "0.05"), &["--no-controller", "--queue", "batch", "--priority", "1"]);
    let high = f.launch(&f.task("high", 3, "0.05"), &["--no-controller", "--queue", "batch", "--priority", "5"]);
    let mid = f.launch(&f.task("mid", 3, "0.05"), &["--no-controller", "--queue", "batch", "--priority", "3"]);
    let mut controller = f
        .cmd()
        .env("GPUBROKER_QUEUE_LIMITS", "batch=1")
        .arg("controller")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("controller");
    for id in [low, high, mid] {
        f.wait_state(id, &["SUCCEEDED"], Duration::from_secs(30));
    }
    let _ = controller.kill();
    let _ = controller.wait();
    let order: Vec<String> = f.journal_lines().into_iter().collect();
    assert_eq!(order, ["start high 1", "done high", "start mid 1", "done mid", "start low 1", "done low"], "{order:?}");
}

/// An idle managed job (its GPUs under 10% for 15 minutes) is stopped by `cost idle --stop`.
#[test]
fn idle_jobs_are_stopped() {
    let f = Fixture::new();
    let id = f.launch(&f.task("sleepy", 1000, "0.1"), &[]);
    f.wait_state(id, &["RUNNING"], Duration::from_secs(20));
    #[allow(clippy::disallowed_methods)]
    let now_ms = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).expect("time").as_millis() as i64;
    let mut scrape = String::new();
    for m in (0..=20).rev() {
        scrape.push_str(&format!("DCGM_FI_DEV_GPU_UTIL{{gpu=\"0\"}} 1 {}\n", now_ms - m * 60_000));
    }
    let path = f.dir.path().join("scrape.prom");
    std::fs::write(&path, scrape).expect("write");
    let out = run(f.cmd().args(["usage", "samples", "--resource", &format!("{id}-1"), "--dcgm"]).arg(&path));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let report = json(f.cmd().args(["cost", "idle", "--stop", "--json"]));
    assert_eq!(report["resources"][0]["stopped_job"], id, "{report}");
    let job = f.wait_state(id, &["CANCELLED"], Duration::from_secs(30));
    assert_eq!(job["attempts"][0]["state"], "terminated");
}

/// A job that reports its useful work gets a cost per unit in reports.
#[test]
fn cost_per_unit_of_reported_work() {
    let f = Fixture::new();
    let path = f.dir.path().join("work.yaml");
    std::fs::write(
        &path,
        "name: tokens-job\nrun: |\n  sleep 1.2\n  echo \"tokens 3000000\" > \"$GPUBROKER_CHECKPOINT_DIR/work\"\n",
    )
    .expect("write");
    let id = f.launch(&path, &[]);
    f.wait_state(id, &["SUCCEEDED"], Duration::from_secs(30));
    let report = json(f.cmd().args(["cost", "report", "--by", "job", "--per", "tokens", "--json"]));
    let row = &report["rows"][0];
    assert_eq!(row["key"], "tokens-job");
    assert_eq!(dec(&row["work_units"]), Decimal::from(3_000_000));
    let billed = dec(&row["billed_cost"]);
    assert!(billed > Decimal::ZERO);
    assert_eq!(dec(&row["cost_per_unit"]), (billed / Decimal::from(3_000_000)).round_dp(12));
}

/// A job still running past its deadline is flagged as possibly forgotten.
#[test]
fn jobs_past_their_deadline_are_flagged() {
    let f = Fixture::new();
    let id = f.launch(&f.task("late", 1000, "0.1"), &["--deadline", "1s"]);
    f.wait_state(id, &["RUNNING"], Duration::from_secs(20));
    std::thread::sleep(Duration::from_millis(1200));
    let report = json(f.cmd().args(["cost", "idle", "--json"]));
    assert_eq!(report["forgotten"][0]["job"], id, "{report}");
    assert!(report["forgotten"][0]["reason"].as_str().unwrap_or("").contains("past its deadline"));
    assert_eq!(run(f.cmd().args(["jobs", "cancel", &id.to_string()])).code, 0);
    f.wait_state(id, &["CANCELLED"], Duration::from_secs(30));
}
