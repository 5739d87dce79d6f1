//! Untrusted text on its way to a person: names, tags, reasons and messages come from other
//! people, and must not be able to rewrite the operator's screen ([`clean`]) or turn into links,
//! formatting or mentions in the incident channel ([`markdown`]).

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

/// The characters Markdown (CommonMark, GitHub's and Slack's dialects) gives a meaning to, each
/// written with a backslash in [`markdown`]: CommonMark reads a backslash before any ASCII
/// punctuation as "this character, literally".
pub const MARKDOWN_ESCAPED: &str = "\\`*_{}[]()#+-.!|~";

/// U+2060 WORD JOINER: invisible, and it keeps `@here` from being a mention and `https://` from
/// being a link, whichever of Chatbot, Slack or Teams looks for them.
const JOINER: char = '\u{2060}';

/// Text from AWS, Kubernetes, the journal, a plan file or the command line as it goes into a
/// message rendered as Markdown (AWS Chatbot's `client-markdown`): shown as the same characters,
/// never as a link, formatting, a heading, a mention or a broadcast. First [`clean`] (a line break
/// in a name must not forge a line of the message), then:
/// - every character of [`MARKDOWN_ESCAPED`] gets a backslash;
/// - `&`, `<` and `>` become `&amp;`, `&lt;` and `&gt;`: Slack's own control characters
///   (`<https://x|text>` is a link there, `<!here>` a broadcast), which a backslash does not
///   stop; both Slack and CommonMark show an entity as its character;
/// - `@` and the `:` of `://` are followed by an invisible word joiner, so that no mention
///   (`@here`, `@channel`) and no bare URL is recognised by a client that linkifies after
///   Markdown is read (Slack does).
pub fn markdown(text: &str) -> String {
    let text = clean(text);
    let mut out = String::with_capacity(text.len() * 2);
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '@' => {
                out.push('@');
                out.push(JOINER);
            }
            ':' => {
                out.push(':');
                if chars.clone().take(2).eq("//".chars()) {
                    out.push(JOINER);
                }
            }
            c if MARKDOWN_ESCAPED.contains(c) => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// What a Markdown reader shows for [`markdown`]'s output: backslash escapes and the three
    /// entities read, the joiners dropped.
    fn shown(escaped: &str) -> String {
        let mut out = String::new();
        let mut rest = escaped;
        while let Some(c) = rest.chars().next() {
            if let Some(after) = rest.strip_prefix('\\') {
                let escaped = after.chars().next().expect("a character after the backslash");
                out.push(escaped);
                rest = &after[escaped.len_utf8()..];
                continue;
            }
            if let Some((entity, c)) = [("&amp;", '&'), ("&lt;", '<'), ("&gt;", '>')]
                .into_iter()
                .find(|(entity, _)| rest.starts_with(entity))
            {
                out.push(c);
                rest = &rest[entity.len()..];
                continue;
            }
            if c != JOINER {
                out.push(c);
            }
            rest = &rest[c.len_utf8()..];
        }
        out
    }

    /// Why `escaped` could be read as Markdown, a Slack control sequence, a mention or a link
    /// (`None`: it cannot).
    fn unescaped_markup(escaped: &str) -> Option<String> {
        let chars: Vec<char> = escaped.chars().collect();
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i];
            let rest: String = chars[i..].iter().collect();
            match c {
                '\\' => match chars.get(i + 1) {
                    Some(next) if MARKDOWN_ESCAPED.contains(*next) => i += 1,
                    other => return Some(format!("a lone backslash before {other:?} at {i}")),
                },
                '&' if !["&amp;", "&lt;", "&gt;"].iter().any(|e| rest.starts_with(e)) => {
                    return Some(format!("a bare & at {i}"))
                }
                '<' | '>' => return Some(format!("a bare {c} at {i}")),
                '@' if chars.get(i + 1) != Some(&JOINER) => return Some(format!("a mention at {i}")),
                ':' if rest.starts_with("://") => return Some(format!("a URL scheme at {i}")),
                c if MARKDOWN_ESCAPED.contains(c) => return Some(format!("an unescaped {c} at {i}")),
                c if c.is_control() => return Some(format!("a control character at {i}")),
                _ => {}
            }
            i += 1;
        }
        None
    }

    #[test]
    fn a_markdown_link_stays_text() {
        assert_eq!(
            markdown("[clickname](//example.com/asg)"),
            r"\[clickname\]\(//example\.com/asg\)"
        );
        assert_eq!(
            markdown("<https://evil.example|log in>"),
            "&lt;https:\u{2060}//evil\\.example\\|log in&gt;"
        );
        assert_eq!(
            markdown("ping @here & <!channel>"),
            "ping @\u{2060}here &amp; &lt;\\!channel&gt;"
        );
        assert_eq!(
            markdown("**bold** _it_ ~x~ `c` # h"),
            r"\*\*bold\*\* \_it\_ \~x\~ \`c\` \# h"
        );
        assert_eq!(
            markdown("line\nforged: done"),
            r"line\\nforged: done",
            "one line stays one line"
        );
        assert_eq!(markdown("esc \u{1b}[2J"), r"esc \\u\{1b\}\[2J");
        assert_eq!(markdown("plain words 42"), "plain words 42");
        assert_eq!(markdown("a:b"), "a:b", "a colon alone is no scheme");
    }

    proptest! {
        /// Whatever the text, the escaped form holds no Markdown, Slack control sequence, mention or
        /// URL scheme that could act; and a Markdown reader shows exactly the text.
        #[test]
        fn markdown_escaping_is_inert_and_shows_the_text(text in "\\PC{0,60}") {
            let escaped = markdown(&text);
            prop_assert_eq!(unescaped_markup(&escaped), None, "{:?} -> {:?}", text, escaped);
            prop_assert_eq!(shown(&escaped), text);
        }

        /// The same, for text made mostly of the characters that matter.
        #[test]
        fn markdown_escaping_holds_for_markup_heavy_text(text in "[\\\\`*_{}\\[\\]()#+\\-.!|~<>&@:/a h]{0,40}") {
            let escaped = markdown(&text);
            prop_assert_eq!(unescaped_markup(&escaped), None, "{:?} -> {:?}", text, escaped);
            prop_assert_eq!(shown(&escaped), text);
        }
    }
}
