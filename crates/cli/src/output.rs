//! Formatting shared by commands: tables, money, JSON.

use std::io::Write;

use anyhow::Result;
use comfy_table::{Cell, CellAlignment, ContentArrangement, Table};

/// No borders, no row separators, a rule under the header (comfy-table's preset notation:
/// position 5 is the header line, 6 its crossings with the column gaps).
const PLAIN_WITH_HEADER_RULE: &str = "     ──            ";
use gpubroker_core::{Currency, Decimal};
use serde::Serialize;

/// A table with gpubroker's look: no outer border, a rule under the header, and a fixed layout
/// (no terminal-width probing, so output is the same in a pipe, a test or a terminal).
pub(crate) fn table(header: &[&str]) -> Table {
    let mut t = Table::new();
    t.load_preset(PLAIN_WITH_HEADER_RULE)
        .set_content_arrangement(ContentArrangement::Disabled)
        .set_header(header.iter().map(Cell::new));
    t
}

/// Right-aligns the given columns (numbers).
pub(crate) fn align_right(t: &mut Table, columns: &[usize]) {
    for &c in columns {
        if let Some(col) = t.column_mut(c) {
            col.set_cell_alignment(CellAlignment::Right);
        }
    }
}

/// `$1,234.56`, `¥88.10`: two decimals with the currency's symbol.
pub(crate) fn money(amount: Decimal, currency: Currency) -> String {
    let rounded = amount.round_dp_with_strategy(2, gpubroker_core::RoundingStrategy::MidpointAwayFromZero);
    let negative = rounded.is_sign_negative();
    let text = format!("{:.2}", rounded.abs());
    let (int, frac) = text.split_once('.').unwrap_or((&text, "00"));
    let mut grouped = String::new();
    for (i, ch) in int.chars().enumerate() {
        if i > 0 && (int.len() - i) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(ch);
    }
    let sign = if negative { "-" } else { "" };
    let symbol = currency.symbol();
    if symbol.len() == 3 && symbol.is_ascii() {
        format!("{sign}{grouped}.{frac} {symbol}")
    } else {
        format!("{sign}{symbol}{grouped}.{frac}")
    }
}

pub(crate) fn write_json<T: Serialize>(out: &mut impl Write, value: &T) -> Result<()> {
    // Keep an I/O failure an `io::Error` so that a closed pipe is recognised as such.
    serde_json::to_writer_pretty(&mut *out, value).map_err(|e| match e.io_error_kind() {
        Some(kind) => anyhow::Error::from(std::io::Error::from(kind)),
        None => anyhow::Error::from(e),
    })?;
    writeln!(out)?;
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::str::FromStr;

    #[test]
    fn money_is_grouped_and_rounded() {
        assert_eq!(money(Decimal::from_str("1234567.899").unwrap(), Currency::USD), "$1,234,567.90");
        assert_eq!(money(Decimal::from_str("88.1").unwrap(), Currency::CNY), "¥88.10");
        assert_eq!(money(Decimal::from_str("5").unwrap(), "GBP".parse().unwrap()), "5.00 GBP");
        assert_eq!(money(Decimal::from_str("-0.5").unwrap(), Currency::USD), "-$0.50");
    }
}
