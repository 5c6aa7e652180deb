//! The local backend: attempts are real processes on this machine.
//!
//! Each attempt has a directory `<root>/<key>/`. Creating it is the launch claim (so a key is
//! launched at most once). The attempt runs under a wrapper started with `setsid` (its own
//! session, so it outlives the controller) that holds an exclusive `flock` on `lock` for its
//! whole life, writes `pid`, runs `setup` and `run` with output to `log`, and finally writes
//! `exit_code`. Observing needs no process table: `exit_code` present → exited; lock held →
//! running; `pid` present but lock free and no exit code → killed from outside (a preemption);
//! nothing → not started yet.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::{BackendError, Handle, LaunchRequest, Observed};

/// How long a claimed attempt may take to write its pid before the claim is considered dead
/// (a controller killed between creating the directory and spawning the process).
const START_GRACE: Duration = Duration::from_secs(3);
/// Time between SIGTERM and SIGKILL when terminating.
const TERM_GRACE: Duration = Duration::from_secs(5);

/// Runs attempts as local processes.
#[derive(Debug, Clone)]
pub struct LocalBackend {
    root: PathBuf,
    slots: u32,
}

fn io(e: std::io::Error, what: &str) -> BackendError {
    BackendError::Transient(format!("{what}: {e}"))
}

fn mtime_ms(path: &Path) -> Option<i64> {
    let m = std::fs::metadata(path).ok()?.modified().ok()?;
    #[allow(clippy::disallowed_methods)] // file times are wall-clock by nature
    let d = m.duration_since(UNIX_EPOCH).ok()?;
    Some(d.as_millis() as i64)
}

fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

impl LocalBackend {
    pub(super) fn new(root: PathBuf, slots: u32) -> Result<Self, BackendError> {
        std::fs::create_dir_all(&root).map_err(|e| io(e, &format!("cannot create {}", root.display())))?;
        Ok(LocalBackend { root, slots })
    }

    pub(super) fn slots(&self) -> u32 {
        self.slots
    }

    pub(super) fn dir(&self, key: &str) -> PathBuf {
        self.root.join(key)
    }

    pub(super) fn pid(&self, key: &str) -> Option<u32> {
        std::fs::read_to_string(self.dir(key).join("pid")).ok()?.trim().parse().ok()
    }

    pub(super) fn launch(&self, req: &LaunchRequest<'_>) -> Result<Handle, BackendError> {
        if req.key.is_empty() || req.key.contains(['/', '.']) {
            return Err(BackendError::Rejected(format!("invalid key `{}`", req.key)));
        }
        let dir = self.dir(req.key);
        let handle = Handle { key: req.key.to_string() };
        match std::fs::create_dir(&dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                // Launched before (or claimed by a controller that died before spawning).
                if self.started(&dir) || !self.claim_is_stale(&dir) {
                    return Ok(handle);
                }
            }
            Err(e) => return Err(io(e, &format!("cannot create {}", dir.display()))),
        }
        let spec = req.spec;
        let mut script = String::from("set -e\n");
        if let Some(setup) = &spec.setup {
            script.push_str(setup);
            script.push('\n');
        }
        script.push_str(&spec.run);
        script.push('\n');
        std::fs::write(dir.join("run.sh"), script).map_err(|e| io(e, "cannot write run.sh"))?;
        let d = dir.display().to_string();
        // The wrapper: lock for life, record the pid, run, record the exit code atomically.
        let wrapper = format!(
            "exec 9>{lock}; flock -x 9; echo $$ > {pid}.tmp && mv {pid}.tmp {pid}; \
             bash {script} > {log} 2>&1; code=$?; echo $code > {exit}.tmp && mv {exit}.tmp {exit}",
            lock = quote(&format!("{d}/lock")),
            pid = quote(&format!("{d}/pid")),
            script = quote(&format!("{d}/run.sh")),
            log = quote(&format!("{d}/log")),
            exit = quote(&format!("{d}/exit_code")),
        );
        if let Some(dir) = req.env.get("GPUBROKER_CHECKPOINT_DIR") {
            std::fs::create_dir_all(dir).map_err(|e| io(e, "cannot create the checkpoint directory"))?;
        }
        let mut cmd = Command::new("setsid");
        cmd.arg("bash")
            .arg("-c")
            .arg(wrapper)
            .current_dir(&spec.workdir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .envs(&spec.envs)
            .envs(&req.env);
        if !req.slots.is_empty() {
            let slots: Vec<String> = req.slots.iter().map(u32::to_string).collect();
            cmd.env("CUDA_VISIBLE_DEVICES", slots.join(","));
        }
        let mut child = cmd.spawn().map_err(|e| io(e, "cannot start the attempt (setsid bash)"))?;
        // Reap the setsid process in the background; the job itself lives in its own session.
        std::thread::spawn(move || {
            let _ = child.wait();
        });
        Ok(handle)
    }

    fn started(&self, dir: &Path) -> bool {
        dir.join("pid").exists() || dir.join("exit_code").exists()
    }

    /// A directory with no pid after the grace period was claimed by a controller that died
    /// before it spawned the wrapper (the wrapper writes its pid within milliseconds).
    fn claim_is_stale(&self, dir: &Path) -> bool {
        let deadline = std::time::Instant::now() + START_GRACE;
        while std::time::Instant::now() < deadline {
            if self.started(dir) {
                return false;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        !self.started(dir) && !self.lock_held(dir)
    }

    fn lock_held(&self, dir: &Path) -> bool {
        let lock = dir.join("lock");
        if !lock.exists() {
            return false;
        }
        // `flock -n` fails with our chosen code when another process holds the lock.
        Command::new("flock")
            .args(["-n", "-E", "75"])
            .arg(&lock)
            .arg("true")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .map(|s| s.code() == Some(75))
            .unwrap_or(false)
    }

    pub(super) fn observe(&self, handle: &Handle, now_ms: i64) -> Observed {
        let dir = self.dir(&handle.key);
        if !dir.exists() {
            return Observed::Gone;
        }
        if let Ok(text) = std::fs::read_to_string(dir.join("exit_code")) {
            let at_ms = mtime_ms(&dir.join("exit_code")).unwrap_or(now_ms);
            return match text.trim().parse::<i64>() {
                Ok(code) => Observed::Exited { code, at_ms },
                Err(_) => Observed::Exited { code: -1, at_ms },
            };
        }
        if self.lock_held(&dir) {
            let since_ms = mtime_ms(&dir.join("pid")).unwrap_or(now_ms);
            return Observed::Running { since_ms };
        }
        // Re-check: the process may have finished between the two looks.
        if dir.join("exit_code").exists() {
            return self.observe(handle, now_ms);
        }
        if dir.join("pid").exists() { Observed::Preempted { at_ms: now_ms } } else { Observed::Pending }
    }

    pub(super) fn terminate(&self, handle: &Handle) -> Result<(), BackendError> {
        let dir = self.dir(&handle.key);
        let Some(pid) = self.pid(&handle.key) else { return Ok(()) };
        if !self.lock_held(&dir) {
            return Ok(());
        }
        let signal = |sig: &str| {
            let _ = Command::new("kill").args([sig, "--", &format!("-{pid}")]).stderr(Stdio::null()).status();
        };
        signal("-TERM");
        let deadline = std::time::Instant::now() + TERM_GRACE;
        while std::time::Instant::now() < deadline {
            if !self.lock_held(&dir) {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        signal("-KILL");
        Ok(())
    }

    pub(super) fn check(&self) -> Result<(), BackendError> {
        for tool in ["bash", "setsid", "flock", "kill"] {
            let ok = Command::new("sh")
                .args(["-c", &format!("command -v {tool}")])
                .stdout(Stdio::null())
                .status()
                .map(|s| s.success())
                .unwrap_or(false);
            if !ok {
                return Err(BackendError::Rejected(format!(
                    "`{tool}` not found; the local backend needs bash and util-linux"
                )));
            }
        }
        let probe = self.root.join(".probe");
        std::fs::write(&probe, b"ok").map_err(|e| io(e, &format!("{} is not writable", self.root.display())))?;
        let _ = std::fs::remove_file(probe);
        let _ = SystemTime::UNIX_EPOCH;
        Ok(())
    }
}
