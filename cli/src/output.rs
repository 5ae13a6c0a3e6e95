//! Results on stdout: aligned tables for people, one JSON document with `--json`, JSON lines
//! for streams. Cells are cut to fit a terminal only; a pipe gets them whole. A reader that
//! stops reading (`| head -1`) ends the command quietly ([`Failure::stdout`]).

use crate::failure::Failure;
use serde::Serialize;
use std::io::{IsTerminal, Write};

/// The widest a cell is shown on a terminal.
const MAX_CELL: usize = 60;

/// Where results go and how.
#[derive(Debug, Clone, Copy)]
pub struct Output {
    /// `--json`.
    pub json: bool,
    /// stdout is a terminal.
    pub terminal: bool,
}

fn write_failed(e: std::io::Error) -> Failure {
    Failure::stdout(&e)
}

impl Output {
    /// For this process's stdout.
    pub fn new(json: bool) -> Output {
        Output {
            json,
            terminal: std::io::stdout().is_terminal(),
        }
    }

    /// One JSON document, pretty on a terminal.
    pub fn json_document<T: Serialize + ?Sized>(&self, value: &T) -> Result<(), Failure> {
        let text = if self.terminal {
            serde_json::to_string_pretty(value)
        } else {
            serde_json::to_string(value)
        }
        .map_err(|e| Failure::failed(format!("cannot print the result as JSON: {e}")))?;
        let mut out = std::io::stdout().lock();
        writeln!(out, "{text}")
            .and_then(|()| out.flush())
            .map_err(write_failed)
    }

    /// One JSON line (a stream's item), flushed at once.
    pub fn json_line<T: Serialize + ?Sized>(&self, value: &T) -> Result<(), Failure> {
        let text = serde_json::to_string(value)
            .map_err(|e| Failure::failed(format!("cannot print the result as JSON: {e}")))?;
        let mut out = std::io::stdout().lock();
        writeln!(out, "{text}")
            .and_then(|()| out.flush())
            .map_err(write_failed)
    }

    /// Plain text.
    pub fn text(&self, text: &str) -> Result<(), Failure> {
        let mut out = std::io::stdout().lock();
        writeln!(out, "{text}")
            .and_then(|()| out.flush())
            .map_err(write_failed)
    }

    /// Bytes as they are (a completion script, a man page).
    pub fn bytes(&self, bytes: &[u8]) -> Result<(), Failure> {
        let mut out = std::io::stdout().lock();
        out.write_all(bytes)
            .and_then(|()| out.flush())
            .map_err(write_failed)
    }

    /// `name: value` lines, names aligned.
    pub fn pairs(&self, pairs: &[(&str, String)]) -> Result<(), Failure> {
        let width = pairs
            .iter()
            .map(|(name, _)| name.len() + 1)
            .max()
            .unwrap_or(0);
        let text: Vec<String> = pairs
            .iter()
            .map(|(name, value)| format!("{:<width$}  {value}", format!("{name}:")))
            .collect();
        self.text(&text.join("\n"))
    }

    /// A table with a header row, columns aligned.
    pub fn table(&self, headers: &[&str], rows: Vec<Vec<String>>) -> Result<(), Failure> {
        self.text(&render_table(headers, &rows, self.terminal))
    }
}

/// `cell` as one line, cut to [`MAX_CELL`] characters when `fit` is set.
fn cell(text: &str, fit: bool) -> String {
    let line = text.replace(['\n', '\r', '\t'], " ");
    if fit && line.chars().count() > MAX_CELL {
        let cut: String = line.chars().take(MAX_CELL - 1).collect();
        format!("{cut}…")
    } else {
        line
    }
}

/// The table's text: two spaces between columns, no trailing spaces.
pub fn render_table(headers: &[&str], rows: &[Vec<String>], fit: bool) -> String {
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|row| row.iter().map(|c| cell(c, fit)).collect())
        .collect();
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for row in &rows {
        for (i, c) in row.iter().enumerate() {
            if let Some(w) = widths.get_mut(i) {
                *w = (*w).max(c.chars().count());
            }
        }
    }
    let line = |cells: Vec<&str>| {
        let mut text = String::new();
        for (i, c) in cells.iter().enumerate() {
            if i > 0 {
                text.push_str("  ");
            }
            text.push_str(c);
            if i + 1 < cells.len() {
                let pad = widths[i].saturating_sub(c.chars().count());
                text.extend(std::iter::repeat_n(' ', pad));
            }
        }
        text.trim_end().to_string()
    };
    let mut lines = vec![line(headers.to_vec())];
    if rows.is_empty() {
        lines.push("(none)".into());
    }
    for row in &rows {
        lines.push(line(row.iter().map(String::as_str).collect()));
    }
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_align_and_long_cells_are_cut_on_a_terminal_only() {
        let long = "x".repeat(80);
        let rows = vec![
            vec!["a".to_string(), "first\nline".to_string()],
            vec!["bbb".to_string(), long.clone()],
        ];
        let shown = render_table(&["ID", "TEXT"], &rows, true);
        let lines: Vec<&str> = shown.lines().collect();
        assert_eq!(lines[0], "ID   TEXT");
        assert_eq!(lines[1], "a    first line");
        assert_eq!(lines[2].chars().count(), 5 + MAX_CELL);
        assert!(lines[2].ends_with('…'));
        let piped = render_table(&["ID", "TEXT"], &rows, false);
        assert!(piped.contains(&long));
    }

    #[test]
    fn an_empty_table_says_so() {
        assert_eq!(render_table(&["ID"], &[], false), "ID\n(none)");
    }
}
