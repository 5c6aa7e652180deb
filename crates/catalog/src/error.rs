use std::fmt;

/// A catalog table that cannot be used. Names the file, the line and the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{file}:{line}: {field}: {message}")]
pub struct CatalogError {
    /// The file (or `builtin:NAME.csv`).
    pub file: String,
    /// 1-based line number; 0 when the problem is the whole file.
    pub line: u64,
    /// The column, or `file` for whole-file problems.
    pub field: String,
    /// What was wrong and what was expected.
    pub message: String,
}

impl CatalogError {
    pub(crate) fn file(file: &str, message: impl Into<String>) -> Self {
        CatalogError { file: file.to_string(), line: 0, field: "file".into(), message: message.into() }
    }
}

/// A non-fatal problem found while importing foreign data: the row was skipped or adjusted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Warning {
    /// The file.
    pub file: String,
    /// 1-based line number.
    pub line: u64,
    /// What happened.
    pub message: String,
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.file, self.line, self.message)
    }
}
