//! Reading CSV tables by column name, with errors that name the file, line and field.

use std::collections::HashMap;
use std::str::FromStr;

use jiff::civil::Date;
use rust_decimal::Decimal;

use crate::error::CatalogError;

/// A parsed table: its header and records with their line numbers.
pub(crate) struct Table {
    pub(crate) file: String,
    columns: HashMap<String, usize>,
    pub(crate) rows: Vec<(u64, csv::StringRecord)>,
}

impl Table {
    /// Parses `text` as CSV with a header row. `required` columns must exist.
    pub(crate) fn parse(file: &str, text: &str, required: &[&str]) -> Result<Table, CatalogError> {
        let mut reader = csv::ReaderBuilder::new().flexible(true).from_reader(text.as_bytes());
        let headers =
            reader.headers().map_err(|e| CatalogError::file(file, format!("cannot read the header row: {e}")))?.clone();
        let columns: HashMap<String, usize> =
            headers.iter().enumerate().map(|(i, h)| (h.trim().trim_start_matches('\u{feff}').to_string(), i)).collect();
        let missing: Vec<&str> = required.iter().copied().filter(|c| !columns.contains_key(*c)).collect();
        if !missing.is_empty() {
            return Err(CatalogError {
                file: file.to_string(),
                line: 1,
                field: missing.join(", "),
                message: format!("missing column(s); the header must include: {}", required.join(", ")),
            });
        }
        let mut rows = Vec::new();
        for record in reader.records() {
            let record = record.map_err(|e| {
                let line = e.position().map(|p| p.line()).unwrap_or(0);
                CatalogError {
                    file: file.to_string(),
                    line,
                    field: "row".into(),
                    message: format!("malformed CSV: {e}"),
                }
            })?;
            let line = record.position().map(|p| p.line()).unwrap_or(0);
            if record.iter().all(|f| f.trim().is_empty()) {
                continue;
            }
            rows.push((line, record));
        }
        Ok(Table { file: file.to_string(), columns, rows })
    }

    pub(crate) fn row<'a>(&'a self, line: u64, record: &'a csv::StringRecord) -> Row<'a> {
        Row { table: self, line, record }
    }
}

/// One record, read by column name.
pub(crate) struct Row<'a> {
    table: &'a Table,
    pub(crate) line: u64,
    record: &'a csv::StringRecord,
}

impl<'a> Row<'a> {
    pub(crate) fn error(&self, field: &str, message: impl Into<String>) -> CatalogError {
        CatalogError {
            file: self.table.file.clone(),
            line: self.line,
            field: field.to_string(),
            message: message.into(),
        }
    }

    /// The trimmed cell, or `None` when the column is absent or the cell is empty.
    pub(crate) fn opt(&self, field: &str) -> Option<&'a str> {
        let i = *self.table.columns.get(field)?;
        let v = self.record.get(i)?.trim();
        (!v.is_empty()).then_some(v)
    }

    pub(crate) fn req(&self, field: &str) -> Result<&'a str, CatalogError> {
        self.opt(field).ok_or_else(|| self.error(field, "is empty; a value is required"))
    }

    pub(crate) fn parse<T: FromStr>(&self, field: &str, expected: &str) -> Result<T, CatalogError>
    where
        T::Err: std::fmt::Display,
    {
        let v = self.req(field)?;
        v.parse::<T>().map_err(|e| self.error(field, format!("`{v}` is not {expected} ({e})")))
    }

    pub(crate) fn parse_opt<T: FromStr>(&self, field: &str, expected: &str) -> Result<Option<T>, CatalogError>
    where
        T::Err: std::fmt::Display,
    {
        match self.opt(field) {
            None => Ok(None),
            Some(v) => {
                v.parse::<T>().map(Some).map_err(|e| self.error(field, format!("`{v}` is not {expected} ({e})")))
            }
        }
    }

    /// A finite, non-negative float.
    pub(crate) fn number_opt(&self, field: &str) -> Result<Option<f64>, CatalogError> {
        let v = self.parse_opt::<f64>(field, "a number")?;
        match v {
            Some(x) if !x.is_finite() || x < 0.0 => {
                Err(self.error(field, format!("`{x}` must be a finite number >= 0")))
            }
            other => Ok(other),
        }
    }

    pub(crate) fn number(&self, field: &str) -> Result<f64, CatalogError> {
        self.number_opt(field)?.ok_or_else(|| self.error(field, "is empty; a number is required"))
    }

    /// An exact decimal that is > 0 (prices) or >= 0 when `allow_zero`.
    pub(crate) fn decimal(&self, field: &str, allow_zero: bool) -> Result<Decimal, CatalogError> {
        let v = self.req(field)?;
        let d = Decimal::from_str(v)
            .or_else(|_| Decimal::from_scientific(v))
            .map_err(|_| self.error(field, format!("`{v}` is not a decimal number")))?;
        if d.is_sign_negative() || (!allow_zero && d.is_zero()) {
            let bound = if allow_zero { ">= 0" } else { "> 0" };
            return Err(self.error(field, format!("`{v}` must be {bound}")));
        }
        Ok(d)
    }

    pub(crate) fn date(&self, field: &str) -> Result<Date, CatalogError> {
        let v = self.req(field)?;
        // Accept a full date, or a month (`2025-09`) meaning its first day.
        let text = if v.len() == 7 { format!("{v}-01") } else { v.chars().take(10).collect() };
        text.parse::<Date>().map_err(|_| self.error(field, format!("`{v}` is not a date (expected YYYY-MM-DD)")))
    }

    pub(crate) fn list(&self, field: &str) -> Vec<String> {
        self.opt(field)
            .map(|v| v.split(';').map(str::trim).filter(|s| !s.is_empty()).map(String::from).collect())
            .unwrap_or_default()
    }
}
