//! Finding the line of a key path (`workload.tokens`) in a YAML text, so that errors found after
//! parsing (a negative number, an unknown GPU) can still point at the line to fix.
//!
//! Block-style YAML only (what task files use): a key's block ends at the next line indented no
//! deeper than the key. Flow-style (`{a: 1}`) keys are matched inside their line.

/// 1-based line of the key at `path`, or of its deepest ancestor found.
pub(crate) fn locate(text: &str, path: &[&str]) -> Option<usize> {
    let lines: Vec<&str> = text.lines().collect();
    let mut start = 0usize;
    let mut end = lines.len();
    let mut parent_indent: Option<usize> = None;
    let mut found: Option<usize> = None;
    for key in path {
        let mut hit = None;
        for (i, line) in lines.iter().enumerate().take(end).skip(start) {
            let trimmed = line.trim_start();
            if trimmed.is_empty() || trimmed.starts_with('#') {
                continue;
            }
            let indent = line.len() - trimmed.len();
            if parent_indent.is_some_and(|p| indent <= p) {
                break;
            }
            let body = trimmed.trim_start_matches("- ");
            if body.starts_with(&format!("{key}:"))
                || body.contains(&format!("{{{key}:"))
                || body.contains(&format!(" {key}:")) && body.contains('{')
            {
                hit = Some((i, indent));
                break;
            }
        }
        let Some((i, indent)) = hit else { break };
        found = Some(i + 1);
        parent_indent = Some(indent);
        start = i + 1;
        end = lines.len();
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_nested_keys() {
        let text = "name: x\nresources:\n  accelerators: A100:8\nworkload:\n  kind: lora\n  # tokens: 3\n  tokens: -5\ndata:\n  dataset: {size: 20GB, region: us-east-1}\n";
        assert_eq!(locate(text, &["workload", "tokens"]), Some(7));
        assert_eq!(locate(text, &["resources", "accelerators"]), Some(3));
        assert_eq!(locate(text, &["data", "dataset", "size"]), Some(9));
        assert_eq!(locate(text, &["workload", "missing"]), Some(4));
        assert_eq!(locate(text, &["nothing"]), None);
    }
}
