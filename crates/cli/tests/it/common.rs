use std::path::{Path, PathBuf};
use std::process::Command;

/// The repository root (for `examples/`).
pub(crate) fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().expect("repo root")
}

/// `../shared/` beside the repository, if this checkout has it.
pub(crate) fn shared() -> Option<PathBuf> {
    let p = repo().join("../shared");
    p.is_dir().then_some(p)
}

/// A `gpubroker` command run from the repository root with a fixed clock and no catalog override.
pub(crate) fn gpubroker() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_gpubroker"));
    cmd.current_dir(repo())
        .env("GPUBROKER_NOW", "2026-11-29T12:00:00Z")
        .env_remove("GPUBROKER_CATALOG")
        .env("NO_COLOR", "1");
    cmd
}

pub(crate) struct Output {
    pub(crate) code: i32,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
}

pub(crate) fn run(cmd: &mut Command) -> Output {
    let out = cmd.output().expect("run gpubroker");
    Output {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

pub(crate) fn json(cmd: &mut Command) -> serde_json::Value {
    let out = run(cmd);
    assert!(out.code == 0 || out.code == 1, "exit {}: {}", out.code, out.stderr);
    serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {}", out.stdout))
}

/// Writes `text` to a temporary file named `name` and returns its directory (kept alive by the caller).
pub(crate) fn temp_file(name: &str, text: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join(name);
    std::fs::write(&path, text).expect("write temp file");
    (dir, path)
}

/// Decimal value of a JSON number (exact: the CLI prints money with arbitrary precision).
pub(crate) fn dec(v: &serde_json::Value) -> rust_decimal::Decimal {
    v.to_string().parse().unwrap_or_else(|_| panic!("not a decimal: {v}"))
}

/// insta settings that hide temporary paths.
pub(crate) fn filters() -> insta::Settings {
    let mut s = insta::Settings::clone_current();
    s.add_filter(r"/tmp/\.tmp[A-Za-z0-9]+", "[TMP]");
    s.add_filter(r"/tmp/[A-Za-z0-9_.-]+/", "[TMP]/");
    s.set_prepend_module_to_snapshot(false);
    s
}
