use std::io::Write;
use std::str::FromStr;

use anyhow::{Result, bail};
use comfy_table::Cell;
use gpubroker_core::units::format_hours;
use gpubroker_core::{Currency, PricingModel};
use gpubroker_estimate::EfficiencyTable;
use gpubroker_plan::{Objective, Plan, PlanOption, PlanSettings};

use crate::ExitStatus;
use crate::args::{ObjectiveArg, PlanArgs};
use crate::context::Context;
use crate::output::{align_right, money, table, write_json};

pub(crate) fn plan(ctx: &Context, args: &PlanArgs, out: &mut impl Write) -> Result<ExitStatus> {
    if !(0.0..=1.0).contains(&args.headroom) {
        bail!("`--headroom {}` must be a fraction between 0 and 1 (0.15 = 15%)", args.headroom);
    }
    if args.max_nodes == 0 || args.max_nodes > 4096 {
        bail!("`--max-nodes {}` must be between 1 and 4096", args.max_nodes);
    }
    if let Some(h) = args.hours
        && !(h.is_finite() && h > 0.0 && h < 1e6)
    {
        bail!("`--hours {h}` must be a number of hours > 0");
    }
    let task = super::load_task(ctx, &args.task)?;
    let pricing = args
        .pricing
        .iter()
        .map(|p| PricingModel::from_str(p))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| anyhow::anyhow!("`--pricing`: {e}"))?;
    // Show amounts in the budget's currency unless told otherwise: a team budgeting in CNY
    // wants to compare in CNY.
    let currency = ctx.currency.or(task.budget.map(|b| b.currency)).unwrap_or(Currency::USD);
    let settings = PlanSettings {
        objective: match args.objective {
            ObjectiveArg::Cost => Objective::Cost,
            ObjectiveArg::Time => Objective::Time,
        },
        currency,
        now: ctx.clock.now(),
        headroom: args.headroom,
        max_nodes: args.max_nodes,
        pricing,
        fixed_hours: args.hours,
    };
    let plan = gpubroker_plan::plan(&task, &ctx.catalog, &EfficiencyTable::builtin(), &settings);
    if args.json {
        write_json(out, &plan)?;
    } else {
        print_plan(&plan, args, out)?;
    }
    Ok(if plan.best.is_some() { ExitStatus::Success } else { ExitStatus::Failure })
}

fn gpus_cell(o: &PlanOption) -> String {
    if o.nodes > 1 {
        format!("{}x{} x{} nodes", o.gpu, o.gpus_per_node, o.nodes)
    } else {
        format!("{}x{}", o.gpu, o.gpus_per_node)
    }
}

fn place_cell(o: &PlanOption) -> String {
    match &o.zone {
        Some(z) => format!("{} {}", o.region, z),
        None => o.region.clone(),
    }
}

fn print_plan(plan: &Plan, args: &PlanArgs, out: &mut impl Write) -> Result<()> {
    let cur = plan.currency;
    let feasible = plan.options.iter().filter(|o| o.feasible).count();
    let mut header = format!(
        "plan for `{}`: {} options from {} offers, {} feasible",
        plan.task,
        plan.options.len(),
        plan.offers_considered,
        feasible
    );
    if let Some(d) = plan.deadline_hours {
        header.push_str(&format!("; deadline {}", format_hours(d)));
    }
    if let Some(b) = plan.budget {
        header.push_str(&format!("; budget {}", money(b, cur)));
    }
    writeln!(out, "{header}")?;
    let rows: Vec<(usize, &PlanOption)> = if args.all {
        plan.options.iter().enumerate().collect()
    } else {
        let shown: Vec<(usize, &PlanOption)> =
            plan.options.iter().enumerate().filter(|(_, o)| o.feasible).take(args.limit).collect();
        if shown.is_empty() {
            // Nothing fits: show the nearest options and why they fail.
            plan.options.iter().enumerate().take(args.limit.min(5)).collect()
        } else {
            shown
        }
    };
    let mut t = table(&[
        "#", "provider", "region", "instance", "gpus", "pricing", "per hour", "hours", "mem/gpu", "compute", "storage",
        "transfer", "preempt", "total",
    ]);
    for (i, o) in &rows {
        let mark = if Some(*i) == plan.best { format!("{}*", i + 1) } else { (i + 1).to_string() };
        t.add_row(vec![
            Cell::new(mark),
            Cell::new(&o.provider),
            Cell::new(place_cell(o)),
            Cell::new(&o.instance_type),
            Cell::new(gpus_cell(o)),
            Cell::new(o.pricing.as_str()),
            Cell::new(money(o.hourly_price, cur)),
            Cell::new(format_hours(o.hours)),
            Cell::new(format!("{:.1}/{:.0} GiB", o.memory_per_gpu_gib, o.gpu_memory_gib)),
            Cell::new(money(o.cost.compute, cur)),
            Cell::new(money(o.cost.storage, cur)),
            Cell::new(money(o.cost.data_transfer, cur)),
            Cell::new(money(o.cost.preemption, cur)),
            Cell::new(money(o.cost.total, cur)),
        ]);
    }
    align_right(&mut t, &[0, 6, 7, 8, 9, 10, 11, 12, 13]);
    writeln!(out, "{t}")?;
    match plan.best {
        Some(i) => {
            let b = &plan.options[i];
            writeln!(
                out,
                "recommended: #{} {} {} {} {} {}",
                i + 1,
                b.provider,
                place_cell(b),
                b.instance_type,
                gpus_cell(b),
                b.pricing
            )?;
            for line in &plan.why {
                writeln!(out, "  - {line}")?;
            }
        }
        None => {
            writeln!(out, "nothing fits this task; the nearest options fail because:")?;
            for (_, o) in rows.iter().take(5) {
                writeln!(out, "  - {} {} {}: {}", o.provider, o.instance_type, gpus_cell(o), o.reasons.join("; "))?;
            }
        }
    }
    if !plan.excluded.is_empty() {
        writeln!(out, "excluded:")?;
        for e in &plan.excluded {
            writeln!(out, "  - {} option(s) {}; cheapest: {}", e.count, e.reason, e.example)?;
        }
    }
    for note in &plan.notes {
        writeln!(out, "note: {note}")?;
    }
    Ok(())
}
