//! Untrusted text on its way to a terminal: names, tags, reasons and messages come from other
//! people, and must not be able to rewrite the operator's screen.

/// Text from AWS, Kubernetes or the journal as it may reach a terminal: control characters (and
/// the bidirectional overrides that reorder what a person reads) escaped, so that no name, reason
/// or comment can move the cursor, recolour the screen or forge a line of the table.
pub fn clean(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        let bidi = matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}');
        if c.is_control() || bidi {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}
