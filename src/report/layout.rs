//! Fitting what azevac prints to the operator's screen, as kubectl does: one line per row, a cell
//! too long for the width cut with "…" (the whole text is in `-o wide` and in JSON), long reasons
//! once each under the table as numbered notes, prose wrapped under its heading.

use comfy_table::presets::NOTHING;
use comfy_table::{ContentArrangement, Table};
use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

use crate::model::text::clean;

/// Nothing is fitted narrower than this: below it the columns would be cut to nothing.
const NARROWEST: usize = 40;

/// How wide the operator's screen is: `COLUMNS` when it is set (a shell that exports it, a test
/// that pins it), else the terminal's width when stdout is one, else none: output piped to a file
/// or another program is never cut.
pub fn screen_width() -> Option<usize> {
    let columns = std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse::<usize>().ok())
        .filter(|c| *c > 0);
    columns
        .or_else(|| terminal_size::terminal_size_of(std::io::stdout()).map(|(w, _)| usize::from(w.0)))
        .map(|w| w.max(NARROWEST))
}

/// A table in azevac's look (no borders), fitted to `width` when there is one: the widest columns
/// are narrowed together until the rows fit, and a cell cut to its column ends in "…" (keeping
/// the number of its note, `[2]`, if it has one). With no width (`-o wide`, or piped), every cell
/// is whole.
pub struct Fitted {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
    width: Option<usize>,
    /// Columns never cut (identifiers and short words: an account ID, a zone, a status).
    kept: Vec<String>,
}

/// The space comfy-table puts around each column's content (a padding of one on either side).
const PADDING: usize = 2;

impl Fitted {
    /// A table with these column headings.
    pub fn new<S: ToString>(header: impl IntoIterator<Item = S>, width: Option<usize>) -> Fitted {
        Fitted {
            header: header.into_iter().map(|h| h.to_string()).collect(),
            rows: Vec::new(),
            width,
            kept: Vec::new(),
        }
    }

    /// Never cut the columns headed `headers` (those it has): an account ID or a time cut short
    /// says nothing; the free text (names, changes, reasons) gives way instead.
    pub fn keep(mut self, headers: &[&str]) -> Fitted {
        self.kept.extend(headers.iter().map(|h| (*h).to_owned()));
        self
    }

    /// A row; every cell is untrusted text and is escaped ([`clean`]).
    pub fn row<S: AsRef<str>>(&mut self, cells: impl IntoIterator<Item = S>) {
        self.rows.push(cells.into_iter().map(|c| clean(c.as_ref())).collect());
    }

    /// How many rows it holds (the heading aside).
    pub fn rows(&self) -> usize {
        self.rows.len()
    }

    /// The table's lines, each ending in a line break.
    pub fn render(&self) -> String {
        let natural: Vec<usize> = (0..self.header.len())
            .map(|c| {
                std::iter::once(&self.header)
                    .chain(&self.rows)
                    .filter_map(|row| row.get(c))
                    .map(|cell| cell.width())
                    .max()
                    .unwrap_or_default()
            })
            .collect();
        let widths = match self.width {
            Some(width) => {
                let kept: Vec<bool> = self.header.iter().map(|h| self.kept.contains(h)).collect();
                fit(&natural, &kept, width.saturating_sub(PADDING * natural.len()))
            }
            None => natural,
        };
        let mut table = Table::new();
        table
            .load_style(NOTHING)
            .set_content_arrangement(ContentArrangement::Disabled)
            .set_header(self.header.iter().zip(&widths).map(|(h, w)| cut(h, *w)));
        for row in &self.rows {
            table.add_row(row.iter().zip(&widths).map(|(cell, w)| cut(cell, *w)));
        }
        let mut out = table.trim_fmt();
        out.push('\n');
        out
    }
}

/// The widths of columns whose contents are `natural` wide, within `budget` in all: the `kept`
/// columns whole, and of the others the widest capped at one width, the largest that fits, so that
/// narrow columns (type, status) stay whole and the long ones (names, reasons) share what is left.
/// No column is cut below [`MIN_CUT`]: a screen too narrow for that gets lines wider than itself.
fn fit(natural: &[usize], kept: &[bool], budget: usize) -> Vec<usize> {
    if natural.iter().sum::<usize>() <= budget {
        return natural.to_vec();
    }
    let fixed: usize = natural.iter().zip(kept).filter(|(_, k)| **k).map(|(w, _)| w).sum();
    let budget = budget.saturating_sub(fixed);
    let capped = |cap: usize| -> usize {
        natural
            .iter()
            .zip(kept)
            .filter(|(_, k)| !**k)
            .map(|(w, _)| (*w).min(cap))
            .sum()
    };
    let widest = natural.iter().copied().max().unwrap_or_default();
    let cap = (1..=widest)
        .rev()
        .find(|cap| capped(*cap) <= budget)
        .unwrap_or(1)
        .max(MIN_CUT);
    natural
        .iter()
        .zip(kept)
        .map(|(w, k)| if *k { *w } else { (*w).min(cap) })
        .collect()
}

/// No column is cut narrower than this, however narrow the screen.
const MIN_CUT: usize = 6;

/// `text` within `width` columns: whole if it fits, else cut with "…", keeping a trailing note
/// number (`would leave no… [2]`) so that the note stays findable.
fn cut(text: &str, width: usize) -> String {
    if text.width() <= width {
        return text.to_owned();
    }
    let (body, suffix) = match text.rfind(" [") {
        Some(at) if text.ends_with(']') && text[at + 2..text.len() - 1].chars().all(|c| c.is_ascii_digit()) => {
            text.split_at(at)
        }
        _ => (text, ""),
    };
    let room = width.saturating_sub(suffix.width() + 1);
    let mut out = String::new();
    let mut used = 0;
    for c in body.chars() {
        let w = c.width().unwrap_or(0);
        if used + w > room {
            break;
        }
        used += w;
        out.push(c);
    }
    format!("{}…{suffix}", out.trim_end())
}

/// Reasons too long for a cell, each written once under the table and named in the cell by its
/// number: many lines skipped for one reason make one note, not many long rows.
#[derive(Default)]
pub struct Notes {
    texts: Vec<String>,
}

/// A reason (or any note) this long or shorter stands in its cell whole.
pub const SHORT: usize = 32;

impl Notes {
    /// The cell for `text`: itself when short, else its first words and the number of the note
    /// that holds it whole (`would leave no subnets [1]`).
    pub fn cell(&mut self, text: &str) -> String {
        if text.width() <= SHORT {
            return text.to_owned();
        }
        format!("{} [{}]", headline(text), self.number(text))
    }

    /// The number of the note holding `text`, added if it is new.
    pub fn number(&mut self, text: &str) -> usize {
        let at = self.texts.iter().position(|t| t == text).unwrap_or_else(|| {
            self.texts.push(text.to_owned());
            self.texts.len() - 1
        });
        at + 1
    }

    /// The notes, each `[n] text` wrapped to `width` under its number.
    pub fn render(&self, width: Option<usize>) -> String {
        self.texts
            .iter()
            .enumerate()
            .map(|(n, text)| wrap(&format!("[{}] ", n + 1), text, width))
            .collect()
    }
}

/// The first words of a reason, for a cell: up to the first `:`, `;`, `,` or ` (`, within
/// [`SHORT`] characters and cut at a word.
pub fn headline(text: &str) -> String {
    let end = [": ", "; ", ", ", " ("]
        .iter()
        .filter_map(|sep| text.find(sep))
        .min()
        .unwrap_or(text.len());
    let head = text[..end].trim();
    if head.width() <= SHORT {
        return head.to_owned();
    }
    let mut out = String::new();
    for word in head.split_whitespace() {
        if out.width() + word.width() + 1 > SHORT - 1 {
            break;
        }
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    if out.is_empty() {
        out = head.chars().take(SHORT - 1).collect();
    }
    out.push('…');
    out
}

/// `prefix` then `text` (untrusted: escaped), wrapped at word boundaries to `width` with each
/// following line indented under the text; whole on one line when there is no width.
pub fn wrap(prefix: &str, text: &str, width: Option<usize>) -> String {
    let (prefix, text) = (clean(prefix), clean(text));
    let prefix = prefix.as_str();
    let Some(width) = width else {
        return format!("{prefix}{text}\n");
    };
    let indent = " ".repeat(prefix.width());
    let options = textwrap::Options::new(width)
        .initial_indent(prefix)
        .subsequent_indent(&indent)
        .break_words(true);
    let mut out = textwrap::fill(&text, options);
    out.push('\n');
    out
}

/// `render` on a screen `width` columns wide, checked to fit it: the printers' tests.
#[cfg(test)]
pub fn fitted(width: usize, render: impl FnOnce(&super::View) -> String) -> String {
    let view = super::View {
        width: Some(width),
        ..super::View::default()
    };
    let text = render(&view);
    let wider: Vec<&str> = text.lines().filter(|l| l.width() > width).collect();
    assert!(wider.is_empty(), "wider than {width} columns: {wider:?}\n{text}");
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_reason_becomes_its_headline_and_one_numbered_note() {
        let mut notes = Notes::default();
        let long = "would leave no subnets (every subnet is in the zone)";
        assert_eq!(notes.cell(long), "would leave no subnets [1]");
        assert_eq!(notes.cell("already evacuated"), "already evacuated");
        assert_eq!(notes.cell(long), "would leave no subnets [1]");
        assert_eq!(
            notes.cell("ThrottlingException: Rate exceeded while calling UpdateAutoScalingGroup"),
            "ThrottlingException [2]"
        );
        assert_eq!(notes.render(None).lines().count(), 2);
    }

    #[test]
    fn a_headline_without_a_break_is_cut_at_a_word() {
        let head = headline("the quick brown fox jumps over the lazy dog again and again");
        assert!(head.ends_with('…') && head.chars().count() <= SHORT, "{head}");
        assert_eq!(head, "the quick brown fox jumps over…");
    }

    #[test]
    fn wrapped_text_hangs_under_its_prefix_and_is_escaped() {
        let text = wrap(
            "fix: ",
            "run azevac init \u{1b}[2J in the account that holds the journal",
            Some(30),
        );
        assert!(!text.contains('\u{1b}'), "{text}");
        for line in text.lines() {
            assert!(line.chars().count() <= 30, "{line:?}");
        }
        assert!(text.lines().skip(1).all(|l| l.starts_with("     ")), "{text}");
    }

    #[test]
    fn a_cut_cell_keeps_its_note_number() {
        assert_eq!(cut("would leave no subnets [12]", 20), "would leave no… [12]");
        assert_eq!(cut("web-frontend-production", 10), "web-front…");
        assert_eq!(cut("short", 10), "short");
    }

    #[test]
    fn the_widest_columns_give_way_first() {
        let none = [false; 4];
        assert_eq!(fit(&[3, 40, 7, 30], &none, 50), vec![3, 20, 7, 20]);
        assert_eq!(fit(&[3, 10, 7], &none, 50), vec![3, 10, 7]);
        // A kept column (an account ID) stays whole; the free text gives way.
        assert_eq!(
            fit(&[12, 40, 7, 30], &[true, false, false, false], 50),
            vec![12, 15, 7, 15]
        );
    }

    #[test]
    fn a_fitted_table_keeps_each_row_on_one_line_within_the_width() {
        let mut table = Fitted::new(["TYPE", "RESOURCE", "REASON"], Some(40));
        table.row([
            "asg",
            "a-very-long-auto-scaling-group-name-indeed",
            "some reason that is long",
        ]);
        let text = table.render();
        assert_eq!(text.lines().count(), 2, "{text}");
        assert!(text.lines().all(|l| l.chars().count() <= 40), "{text}");
        assert!(text.contains('…'), "{text}");
    }
}
