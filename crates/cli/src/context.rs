//! What every command needs: the catalog, the clock and the display currency, resolved once.

use anyhow::{Context as _, Result};
use gpubroker_catalog::{Catalog, CatalogSource};
use gpubroker_core::{Clock, Currency};
use jiff::Timestamp;

use crate::args::GlobalArgs;

/// Environment variables gpubroker reads (one list, so that none is read in passing).
pub(crate) mod env_vars {
    /// Fixes "now" (RFC 3339) for reproducible plans and tests.
    pub(crate) const GPUBROKER_NOW: &str = "GPUBROKER_NOW";
    /// The data directory (ledger, attempt logs, checkpoints). Default: `$HOME/.gpubroker`.
    pub(crate) const GPUBROKER_HOME: &str = "GPUBROKER_HOME";
    /// GPU slots of the local backend (default: GPUs `nvidia-smi -L` lists; 0 = no slot accounting).
    pub(crate) const GPUBROKER_LOCAL_SLOTS: &str = "GPUBROKER_LOCAL_SLOTS";
    /// Cost of one local GPU-hour (`2.5 USD`, on-prem amortised). Default `0 USD`.
    pub(crate) const GPUBROKER_LOCAL_GPU_HOUR_PRICE: &str = "GPUBROKER_LOCAL_GPU_HOUR_PRICE";
    /// The cost ledger on PostgreSQL (`postgres://user:pass@host:port/db`) instead of the local SQLite file.
    pub(crate) const GPUBROKER_LEDGER_URL: &str = "GPUBROKER_LEDGER_URL";
    /// Controller poll interval in ms (default 500).
    pub(crate) const GPUBROKER_POLL_MS: &str = "GPUBROKER_POLL_MS";
    /// Attempts running at once per queue: `default=2,batch=1` (default: no limit).
    pub(crate) const GPUBROKER_QUEUE_LIMITS: &str = "GPUBROKER_QUEUE_LIMITS";
    /// Seconds the controller waits with nothing to do before exiting (default 60).
    pub(crate) const GPUBROKER_CONTROLLER_IDLE_S: &str = "GPUBROKER_CONTROLLER_IDLE_S";
}

pub(crate) struct Context {
    pub(crate) catalog: Catalog,
    pub(crate) clock: Clock,
    /// The currency asked for with `--currency`, if any.
    pub(crate) currency: Option<Currency>,
}

impl Context {
    pub(crate) fn new(global: &GlobalArgs) -> Result<Context> {
        let sources: Vec<CatalogSource> = global
            .catalog
            .iter()
            .filter(|s| !s.trim().is_empty())
            .map(|s| s.trim().parse().unwrap_or(CatalogSource::Builtin))
            .collect();
        let catalog = Catalog::load(&sources).context("cannot load the catalog")?;
        let clock = match std::env::var(env_vars::GPUBROKER_NOW) {
            Ok(text) => {
                let at: Timestamp = text
                    .parse()
                    .with_context(|| format!("{}=`{text}` is not an RFC 3339 time", env_vars::GPUBROKER_NOW))?;
                Clock::Fixed(at)
            }
            Err(_) => Clock::System,
        };
        let currency = match &global.currency {
            Some(code) => {
                let c: Currency = code.parse().with_context(|| format!("invalid `--currency {code}`"))?;
                if catalog.fx().rate(c).is_none() {
                    let known: Vec<String> = catalog.fx().rates().map(|r| r.currency.to_string()).collect();
                    anyhow::bail!("no exchange rate for `{c}`; known currencies: {}", known.join(", "));
                }
                Some(c)
            }
            None => None,
        };
        Ok(Context { catalog, clock, currency })
    }
}
