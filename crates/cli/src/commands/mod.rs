//! One file per subcommand; each is a function of resolved values that writes to stdout.

mod backtest;
mod budget;
mod catalog;
mod commit;
mod estimate;
mod forecast;
mod gpus;
mod jobs;
mod plan;
mod usage;
mod waste;

use anyhow::Result;

use crate::ExitStatus;
use crate::args::{
    BudgetCommand, CatalogCommand, Cli, Command, CommitCommand, ContractCommand, CostCommand, UsageCommand,
};
use crate::context::Context;

pub(crate) fn run(cli: Cli) -> Result<ExitStatus> {
    // The controller needs no catalog.
    if let Command::Controller = cli.command {
        return jobs::controller();
    }
    let ctx = Context::new(&cli.global)?;
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    match cli.command {
        Command::Plan(args) => plan::plan(&ctx, &args, &mut out),
        Command::Estimate(args) => estimate::estimate(&ctx, &args, &mut out),
        Command::Gpus(args) => gpus::gpus(&ctx, &args, &mut out),
        Command::Catalog(CatalogCommand::List(args)) => catalog::list(&ctx, &args, &mut out),
        Command::Catalog(CatalogCommand::Import(args)) => catalog::import(&ctx, &args, &mut out),
        Command::Catalog(CatalogCommand::Info(args)) => catalog::info(&ctx, &args, &mut out),
        Command::Backtest(args) => backtest::backtest(&args, &mut out),
        Command::Launch(args) => jobs::launch(&ctx, &args, &mut out),
        Command::Jobs(args) => jobs::jobs(&ctx, &args, &mut out),
        Command::Controller => jobs::controller(),
        Command::Usage(UsageCommand::Add(args)) => usage::add(&ctx, &args, &mut out),
        Command::Usage(UsageCommand::Import(args)) => usage::import(&ctx, &args, &mut out),
        Command::Cost(CostCommand::Report(args)) => usage::report(&ctx, &args, &mut out),
        Command::Cost(CostCommand::Export(args)) => usage::export(&ctx, &args, &mut out),
        Command::Cost(CostCommand::Idle(args)) => waste::idle(&ctx, &args, &mut out),
        Command::Cost(CostCommand::Anomalies(args)) => waste::anomalies(&ctx, &args, &mut out),
        Command::Cost(CostCommand::Forecast(args)) => forecast::forecast(&ctx, &args, &mut out),
        Command::Usage(UsageCommand::Samples(args)) => waste::samples(&args, &mut out),
        Command::Budget(BudgetCommand::Set(args)) => budget::set(&ctx, &args, &mut out),
        Command::Budget(BudgetCommand::Status(args)) => budget::status(&ctx, &args, &mut out),
        Command::Commit(CommitCommand::Plan(args)) => commit::plan(&ctx, &args, &mut out),
        Command::Contract(ContractCommand::Set(args)) => budget::set_contract(&ctx, &args, &mut out),
        Command::Contract(ContractCommand::Status(args)) => budget::contract_status(&ctx, &args, &mut out),
    }
}

/// Reads and validates a task file.
pub(crate) fn load_task(ctx: &Context, path: &std::path::Path) -> Result<gpubroker_plan::Task> {
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| anyhow::anyhow!("{shown}: cannot read the task file: {e}"))?;
    let file = gpubroker_plan::TaskFile::parse(&shown, &text)?;
    Ok(file.validate(&shown, &text, &ctx.catalog, ctx.clock.now())?)
}
