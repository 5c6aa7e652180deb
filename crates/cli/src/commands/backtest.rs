use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Result, anyhow, bail};
use comfy_table::Cell;
use gpubroker_run::SpotTrace;
use gpubroker_run::backtest::{BacktestConfig, Contender, Scenario, run};

use crate::ExitStatus;
use crate::args::{BacktestArgs, ZonesMode};
use crate::output::{align_right, table, write_json};

pub(crate) fn backtest(args: &BacktestArgs, out: &mut impl Write) -> Result<ExitStatus> {
    let cfg = BacktestConfig {
        job_hours: args.job_hours,
        deadline_hours: args.deadline_hours,
        changeover_hours: args.changeover_hours,
        on_demand_price: args.on_demand_price,
        spot_price: args.spot_price,
        starts: args.starts,
        seed: args.seed,
        nodes: args.nodes,
    };
    cfg.validate()?;
    let contenders = args
        .policy
        .iter()
        .map(|p| {
            Contender::parse(p).ok_or_else(|| {
                anyhow!("unknown policy `{p}`: expected on-demand, greedy, uniform-progress, gpubroker or omniscient")
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let traces = read_traces(&args.trace)?;
    let scenarios = Scenario::build(&traces, args.nodes, args.zones_mode == ZonesMode::Any)?;
    let report = run(&scenarios, &contenders, &cfg, true);
    if args.json {
        write_json(out, &report)?;
        return Ok(ExitStatus::Success);
    }
    writeln!(
        out,
        "{} runs per policy ({} scenario(s) x {} starts): job {} h, deadline {} h, changeover {} h, on-demand {}/h, spot {}/h; all on-demand costs {:.2}",
        report.policies.first().map(|p| p.runs).unwrap_or(0),
        report.scenarios.len(),
        cfg.starts,
        cfg.job_hours,
        cfg.deadline_hours,
        cfg.changeover_hours,
        cfg.on_demand_price,
        cfg.spot_price,
        report.on_demand_cost
    )?;
    let mut t = table(&[
        "policy",
        "mean cost",
        "vs on-demand",
        "gap vs omniscient",
        "p75 cost",
        "spot h",
        "on-demand h",
        "misses",
    ]);
    for p in &report.policies {
        let hours = |h: f64| if h.is_finite() { format!("{h:.1}") } else { "-".into() };
        t.add_row(vec![
            Cell::new(&p.name),
            Cell::new(format!("{:.2}", p.mean_cost)),
            Cell::new(format!("{:.1}%", p.mean_cost_vs_on_demand * 100.0)),
            Cell::new(p.mean_gap_vs_omniscient.map(|g| format!("{:.1}%", g * 100.0)).unwrap_or_else(|| "-".into())),
            Cell::new(format!("{:.2}", p.p75_cost)),
            Cell::new(hours(p.mean_spot_hours)),
            Cell::new(hours(p.mean_on_demand_hours)),
            Cell::new(p.deadline_misses),
        ]);
    }
    align_right(&mut t, &[1, 2, 3, 4, 5, 6, 7]);
    writeln!(out, "{t}")?;
    Ok(ExitStatus::Success)
}

/// Trace files, with directories expanded to the `.json` and `.txt` files inside (sorted).
pub(crate) fn read_traces(paths: &[PathBuf]) -> Result<Vec<SpotTrace>> {
    let mut files = Vec::new();
    for p in paths {
        if p.is_dir() {
            let mut inside: Vec<PathBuf> = std::fs::read_dir(p)
                .map_err(|e| anyhow!("{}: cannot read directory: {e}", p.display()))?
                .flatten()
                .map(|e| e.path())
                .filter(|f| f.extension().is_some_and(|x| x == "json" || x == "txt" || x == "csv"))
                .collect();
            inside.sort();
            if inside.is_empty() {
                bail!("{}: no trace files (.json, .txt, .csv) inside", p.display());
            }
            files.extend(inside);
        } else {
            files.push(p.clone());
        }
    }
    files.iter().map(|f: &PathBuf| SpotTrace::read(Path::new(f)).map_err(anyhow::Error::from)).collect()
}
