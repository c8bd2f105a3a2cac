//! A plain-text table: a left-aligned label column, right-aligned figure columns and an
//! optional left-aligned last column (the difference), each as wide as its widest cell.

/// Rows of cells under a title row; the title takes the label column's place.
pub struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
    /// Whether the last column is free text (left-aligned) rather than a figure.
    text_last: bool,
}

/// Figure columns are at least this wide, and labels this wide, so that the tables of one
/// report line up with each other.
const MIN_WIDTH: usize = 14;
const MIN_LABEL: usize = 30;

impl Table {
    pub fn new(header: Vec<String>, text_last: bool) -> Table {
        Table {
            header,
            rows: Vec::new(),
            text_last,
        }
    }

    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    fn widths(&self) -> Vec<usize> {
        let mut widths: Vec<usize> = self.header.iter().map(|c| c.chars().count()).collect();
        for row in &self.rows {
            for (w, cell) in widths.iter_mut().zip(row) {
                *w = (*w).max(cell.chars().count());
            }
        }
        for (i, w) in widths.iter_mut().enumerate() {
            *w = (*w).max(if i == 0 { MIN_LABEL } else { MIN_WIDTH });
        }
        widths
    }

    pub fn render(&self) -> String {
        let widths = self.widths();
        let mut out = String::new();
        for row in std::iter::once(&self.header).chain(&self.rows) {
            out.push_str(&self.line(row, &widths));
        }
        out
    }

    fn line(&self, row: &[String], widths: &[usize]) -> String {
        let last = row.len().saturating_sub(1);
        let mut line = String::new();
        for (i, (cell, w)) in row.iter().zip(widths).enumerate() {
            if i == 0 {
                line.push_str(&format!("{cell:<w$}"));
            } else if i == last && self.text_last {
                line.push_str(&format!("  {cell}"));
            } else {
                line.push_str(&format!("  {cell:>w$}"));
            }
        }
        let mut line = line.trim_end().to_string();
        line.push('\n');
        line
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cells(c: &[&str]) -> Vec<String> {
        c.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn columns_align_on_the_widest_cell() {
        let mut t = Table::new(cells(&["Title", "IPv4", "IPv6", "difference"]), true);
        t.row(cells(&["Requests:", "500", "1500", "+1000 (+200.0%)"]));
        t.row(cells(&[
            "A longer label:",
            "1234567890123456",
            "1",
            "-12345678901233",
        ]));
        let text = t.render();
        let lines: Vec<&str> = text.lines().collect();
        let label = |l: &str| format!("{l:<MIN_LABEL$}");
        assert_eq!(
            lines[0],
            label("Title") + "              IPv4            IPv6  difference"
        );
        assert_eq!(
            lines[1],
            label("Requests:") + "               500            1500  +1000 (+200.0%)"
        );
        assert_eq!(
            lines[2],
            label("A longer label:") + "  1234567890123456               1  -12345678901233"
        );
    }

    #[test]
    fn figure_last_column_is_right_aligned_and_lines_have_no_trailing_space() {
        let mut t = Table::new(cells(&["T", "IPv6"]), false);
        t.row(cells(&["x", "1"]));
        t.row(cells(&["", ""]));
        let expected = format!(
            "{:<MIN_LABEL$}            IPv6\n{:<MIN_LABEL$}               1\n\n",
            "T", "x"
        );
        assert_eq!(t.render(), expected);
    }
}
