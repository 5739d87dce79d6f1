//! The manual (issue 37): README.md and the mdBook pages in docs/src. What can be generated from
//! the code is generated here — the flag reference from clap (`azevac::cli::command()`), the table
//! of kinds from the registry — and a committed page that differs from it fails; every internal link
//! resolves to a file and a heading; every page is reachable from SUMMARY.md; every `azevac` command
//! line of a shell block parses; and the blocks marked to run against the emulator run as written,
//! with the exit codes their comments give. No book is built here: the release workflow builds it.
//!
//! `UPDATE_DOCS=1 cargo test --test it docs` writes the generated pages again.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use azevac::plugins::{ADMIN_IAM_ACTIONS, CORE_IAM_ACTIONS, OPERATOR_IAM_ACTIONS, REGISTRY};
use common::{estate, Moto};

/// The line that marks the next shell block as one that runs against the emulator.
const RUNS: &str = "<!-- runs against the emulator: tests/it/docs/manual.rs -->";
/// The pages with blocks that run, each in a test of its own below.
const RUN_PAGES: [&str; 2] = ["README.md", "docs/src/runbook.md"];
/// What to run to write the generated pages again.
const UPDATE: &str = "UPDATE_DOCS=1 cargo test --test it docs";

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every page of the manual: the Markdown files under docs/src, sorted.
pub fn manual_pages() -> Vec<PathBuf> {
    let mut pages = Vec::new();
    let mut dirs = vec![root().join("docs/src")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "md") {
                pages.push(path);
            }
        }
    }
    pages.sort();
    pages
}

/// README.md and every page of the manual.
fn all_pages() -> Vec<PathBuf> {
    let mut pages = vec![root().join("README.md")];
    pages.extend(manual_pages());
    pages
}

fn shown(path: &Path) -> String {
    path.strip_prefix(root()).unwrap_or(path).display().to_string()
}

// ---------------------------------------------------------------------------------------------
// The generated pages.

/// `text` for a Markdown line outside code spans: `<`, `>` and `*` as themselves, not HTML or emphasis.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_code = false;
    for c in text.chars() {
        match c {
            '`' => {
                in_code = !in_code;
                out.push(c);
            }
            '<' if !in_code => out.push_str("&lt;"),
            '>' if !in_code => out.push_str("&gt;"),
            '*' if !in_code => out.push_str("\\*"),
            _ => out.push(c),
        }
    }
    out
}

/// A help text on one line (clap keeps a doc comment's paragraphs apart with blank lines).
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `text` with a full stop: clap drops the one of a one-line help, and the details after it need one.
fn sentence(text: &str) -> String {
    if text.ends_with('.') {
        text.to_owned()
    } else {
        format!("{text}.")
    }
}

/// `--flag <VALUE>`, `-y, --yes` or `<PLAN_FILE>`, as `--help` names an argument.
fn arg_name(arg: &clap::Arg) -> String {
    let values: Vec<String> = match arg.get_value_names() {
        Some(names) => names.iter().map(|n| format!("<{n}>")).collect(),
        None => vec![format!("<{}>", arg.get_id().as_str().to_uppercase())],
    };
    let mut names = Vec::new();
    if let Some(short) = arg.get_short() {
        names.push(format!("-{short}"));
    }
    if let Some(long) = arg.get_long() {
        names.push(format!("--{long}"));
    }
    if names.is_empty() {
        return values.join(" ");
    }
    let mut name = names.join(", ");
    if arg.get_action().takes_values() {
        name = format!("{name} {}", values.join(" "));
    }
    name
}

/// One argument as a Markdown list item: its name, help, default, environment variable and values.
fn arg_item(arg: &clap::Arg, out: &mut String) {
    let mut line = format!("- `{}`", arg_name(arg));
    if arg.is_required_set() {
        line.push_str(" (required)");
    }
    let help = arg.get_long_help().or(arg.get_help()).map(|h| one_line(&h.to_string()));
    if let Some(help) = help.filter(|h| !h.is_empty()) {
        let _ = write!(line, ": {}", escape(&sentence(&help)));
    }
    if arg.get_action().takes_values() {
        let defaults: Vec<String> = arg
            .get_default_values()
            .iter()
            .map(|v| format!("`{}`", v.to_string_lossy()))
            .collect();
        if !defaults.is_empty() {
            let _ = write!(line, " Default: {}.", defaults.join(", "));
        }
        let values: Vec<String> = arg
            .get_possible_values()
            .iter()
            .filter(|v| !v.is_hide_set())
            .map(|v| match v.get_help() {
                Some(help) => format!("`{}` ({})", v.get_name(), escape(&one_line(&help.to_string()))),
                None => format!("`{}`", v.get_name()),
            })
            .collect();
        if !values.is_empty() {
            let _ = write!(line, " Values: {}.", values.join(", "));
        }
    }
    if let Some(env) = arg.get_env() {
        let _ = write!(line, " Environment: `{}`.", env.to_string_lossy());
    }
    out.push_str(&line);
    out.push('\n');
}

/// One command's section, then its subcommands' (clap's own `help` left out).
fn command_section(command: &clap::Command, path: &str, out: &mut String) {
    let _ = writeln!(out, "## {path}\n");
    if let Some(about) = command.get_long_about().or(command.get_about()) {
        let _ = writeln!(out, "{}\n", escape(&sentence(&one_line(&about.to_string()))));
    }
    let mut usage = command.clone();
    let _ = writeln!(out, "```text\n{}\n```\n", usage.render_usage().to_string().trim_end());
    let top = path == "azevac";
    let mut args: Vec<&clap::Arg> = command
        .get_arguments()
        .filter(|a| !a.is_hide_set() && !matches!(a.get_id().as_str(), "help" | "version"))
        .filter(|a| top || !a.is_global_set())
        .collect();
    // In the order `--help` shows them.
    args.sort_by_key(|a| a.get_display_order());
    if !args.is_empty() {
        if top {
            out.push_str("Global options, taken by every command:\n\n");
        } else {
            out.push_str("Options (and the [global options](#azevac)):\n\n");
        }
        for arg in args {
            arg_item(arg, out);
        }
        out.push('\n');
    }
    let mut subs: Vec<&clap::Command> = command.get_subcommands().filter(|s| s.get_name() != "help").collect();
    subs.sort_by_key(|s| s.get_display_order());
    for sub in subs {
        command_section(sub, &format!("{path} {}", sub.get_name()), out);
    }
}

/// docs/src/reference/cli.md: every command's usage and arguments, from the clap definitions (the
/// kinds' own flags included), independent of the terminal's width.
fn cli_reference() -> String {
    let mut command = azevac::cli::command().term_width(0).max_term_width(0);
    command.build();
    let mut out = String::from(
        "# Command-line reference\n\n\
         <!-- Generated by tests/it/docs/manual.rs from azevac::cli::command(): do not edit. -->\n\n\
         Every command and its arguments, generated from the same clap definitions as `--help`, `azevac man` and\n\
         `azevac completions` (a kind's own flags come from the kind's registration). After changing a flag,\n\
         `UPDATE_DOCS=1 cargo test --test it docs` writes this page again.\n\n",
    );
    command_section(&command, "azevac", &mut out);
    out.trim_end().to_owned() + "\n"
}

/// A list of IAM actions, one per line.
fn actions_list(actions: &[&str], out: &mut String) {
    for action in actions {
        let _ = writeln!(out, "- `{action}`");
    }
    out.push('\n');
}

/// docs/src/reference/kinds.md: the registry, kind by kind, with the IAM actions of each and of the core.
fn kinds_reference() -> String {
    let mut out = String::from(
        "# Kinds and their IAM actions\n\n\
         <!-- Generated by tests/it/docs/manual.rs from azevac::plugins::REGISTRY: do not edit. -->\n\n\
         Every kind azevac knows, from its registry (`src/plugins/registry.rs`), in the registry's order: its name is\n\
         the `--type` value and the journal's `resource_type`. The IAM policy (`fixtures/iam-policy.json`) and the\n\
         member role (`fixtures/member-role.cfn.yaml`) grant exactly these actions and the core's\n\
         (`tests/it/docs/registry.rs`). After changing the registry, `UPDATE_DOCS=1 cargo test --test it docs` writes\n\
         this page again.\n\n\
         | kind | services | changes through | own flags |\n\
         |------|----------|-----------------|-----------|\n",
    );
    let code = |items: &[&str]| -> String {
        if items.is_empty() {
            "—".to_owned()
        } else {
            items.iter().map(|i| format!("`{i}`")).collect::<Vec<_>>().join(" ")
        }
    };
    let flags_of = |registration: &azevac::plugins::Registration| -> Vec<(String, clap::Arg)> {
        let Some(flags) = registration.flags else {
            return Vec::new();
        };
        let mut all = Vec::new();
        for (name, which) in [
            ("evacuate", azevac::model::Command::Evacuate),
            ("recover", azevac::model::Command::Recover),
        ] {
            let command = (flags.add)(clap::Command::new(name), which);
            all.extend(command.get_arguments().map(|a| (name.to_owned(), a.clone())));
        }
        all
    };
    for registration in REGISTRY {
        let flags: Vec<String> = flags_of(registration)
            .iter()
            .filter_map(|(_, a)| a.get_long().map(|l| format!("--{l}")))
            .collect();
        let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
        let _ = writeln!(
            out,
            "| [{name}](#{name}) | {} | {} | {} |",
            code(registration.services),
            code(registration.changes_through),
            code(&flags),
            name = registration.name,
        );
    }
    out.push('\n');
    for registration in REGISTRY {
        let name = registration.name;
        let _ = writeln!(out, "## {name}\n\nIts page: [{name}](../kinds/{name}.md).\n");
        if registration.is_kubernetes() {
            out.push_str(
                "It acts through Kubernetes contexts (`--kube-context`), not AWS APIs: no IAM action of its own \
                 (its RBAC rules: [IAM permissions](../iam.md#kubernetes)).\n\n",
            );
        } else {
            out.push_str("IAM actions, in each account it acts in:\n\n");
            actions_list(registration.iam_actions, &mut out);
        }
        let flags = flags_of(registration);
        if !flags.is_empty() {
            out.push_str("Its own flags:\n\n");
            for (command, arg) in &flags {
                let mut item = String::new();
                arg_item(arg, &mut item);
                let _ = write!(out, "{}", item.replacen("- ", &format!("- {command}: "), 1));
            }
            out.push('\n');
        }
    }
    out.push_str("## Every run\n\nIAM actions every run needs in each account it acts in, whatever the kinds:\n\n");
    actions_list(CORE_IAM_ACTIONS, &mut out);
    out.push_str(
        "## The operator's account\n\nIAM actions needed in the operator's account only (never in a member \
         account's role): the journal, the caller's identity and the roles it assumes, the organization's \
         accounts and the `--notify` topics:\n\n",
    );
    actions_list(OPERATOR_IAM_ACTIONS, &mut out);
    out.push_str("`azevac exposure` reads, besides each kind's own reads, for what no kind moves:\n\n");
    for kind in azevac::app::exposure::KINDS {
        let _ = writeln!(out, "- `{}`: {}", kind.name, code(kind.iam_actions));
    }
    out.push_str(
        "\n## The journal's administration\n\nIAM actions of `azevac init` alone, under the admin policy \
         (`fixtures/iam-admin-policy.json`):\n\n",
    );
    actions_list(ADMIN_IAM_ACTIONS, &mut out);
    out.trim_end().to_owned() + "\n"
}

/// Issue 37: the flag reference and the table of kinds are what the code gives; `UPDATE_DOCS=1`
/// writes them.
#[test]
fn issue_37_the_generated_pages_are_current() {
    let update = std::env::var_os("UPDATE_DOCS").is_some_and(|v| v == "1");
    let mut stale = Vec::new();
    for (path, text) in [
        ("docs/src/reference/cli.md", cli_reference()),
        ("docs/src/reference/kinds.md", kinds_reference()),
    ] {
        let file = root().join(path);
        if update {
            std::fs::write(&file, &text).unwrap_or_else(|e| panic!("{path}: {e}"));
        } else if std::fs::read_to_string(&file).ok().as_deref() != Some(text.as_str()) {
            stale.push(path);
        }
    }
    assert!(
        stale.is_empty(),
        "{} not what the code gives: run `{UPDATE}`",
        stale.join(" and ")
    );
}

/// The flag reference does not depend on the terminal it was made in.
#[test]
fn issue_37_the_flag_reference_does_not_wrap() {
    let reference = cli_reference();
    assert!(reference.contains("## azevac evacuate\n"), "{reference}");
    assert!(reference.contains("`--az-id <AZ_ID>` (required)"), "{reference}");
    let longest = azevac::cli::command()
        .find_subcommand("evacuate")
        .and_then(|e| e.get_arguments().find(|a| a.get_id() == "force"))
        .and_then(|a| a.get_help())
        .map(|h| one_line(&h.to_string()))
        .expect("--force has help");
    assert!(reference.contains(&longest), "--force's help is not on one line");
}

// ---------------------------------------------------------------------------------------------
// Reading Markdown: headings, links and fenced blocks, by lines.

/// A fenced code block: its info string, the line it opens on, its lines, and whether it is marked
/// to run against the emulator.
struct Block {
    info: String,
    line: usize,
    lines: Vec<String>,
    runs: bool,
}

/// The fenced blocks of `text`, and its lines outside them (with their numbers).
fn split(text: &str) -> (Vec<Block>, Vec<(usize, &str)>) {
    let mut blocks = Vec::new();
    let mut prose = Vec::new();
    let mut open: Option<Block> = None;
    let mut previous = "";
    for (n, line) in text.lines().enumerate() {
        let fence = line.trim_start().starts_with("```");
        match open.take() {
            Some(block) if fence => blocks.push(block),
            Some(mut block) => {
                block.lines.push(line.to_owned());
                open = Some(block);
            }
            None if fence => {
                open = Some(Block {
                    info: line.trim_start().trim_start_matches('`').trim().to_owned(),
                    line: n + 1,
                    lines: Vec::new(),
                    runs: previous.trim() == RUNS,
                })
            }
            None => prose.push((n + 1, line)),
        }
        previous = line;
    }
    (blocks, prose)
}

/// A heading's anchor as mdBook and GitHub make it: lower case, spaces to `-`, only letters, digits,
/// `-` and `_` kept; the second of two equal ones gets `-1`.
fn slugs(text: &str) -> BTreeSet<String> {
    let (_, prose) = split(text);
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut slugs = BTreeSet::new();
    for (_, line) in prose {
        let Some(title) = line.strip_prefix('#').map(|t| t.trim_start_matches('#')) else {
            continue;
        };
        if !title.starts_with(' ') {
            continue;
        }
        let slug: String = title
            .trim()
            .chars()
            .filter_map(|c| match c {
                c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c.to_ascii_lowercase()),
                c if c.is_whitespace() => Some('-'),
                _ => None,
            })
            .collect();
        let count = seen.entry(slug.clone()).or_default();
        slugs.insert(if *count == 0 { slug } else { format!("{slug}-{count}") });
        *count += 1;
    }
    slugs
}

/// Every inline link target of `text` outside code, with its line.
fn links(text: &str) -> Vec<(usize, String)> {
    let (_, prose) = split(text);
    let mut found = Vec::new();
    for (n, line) in prose {
        // Code spans hold no links: drop them.
        let plain: String = line.split('`').step_by(2).collect::<Vec<_>>().join(" ");
        let mut rest = plain.as_str();
        while let Some(at) = rest.find("](") {
            rest = &rest[at + 2..];
            let end = rest.find(')').unwrap_or(rest.len());
            found.push((n, rest[..end].to_owned()));
            rest = &rest[end..];
        }
    }
    found
}

/// Every internal link of every page resolves: the file exists (inside docs/src for the manual's
/// pages, as mdBook needs), and an `#anchor` is a heading of the page it points to.
#[test]
fn issue_37_every_internal_link_resolves() {
    let manual = root().join("docs/src");
    let mut broken = Vec::new();
    let mut checked = 0;
    for page in all_pages() {
        let text = read(&page);
        for (line, target) in links(&text) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            checked += 1;
            let (file, anchor) = target.split_once('#').unwrap_or((&target, ""));
            let dir = page.parent().expect("a page's folder");
            let to = if file.is_empty() { page.clone() } else { dir.join(file) };
            let at = format!("{}:{line}: {target}", shown(&page));
            let Ok(to) = to.canonicalize() else {
                broken.push(format!("{at}: no such file"));
                continue;
            };
            if page.starts_with(&manual) && !to.starts_with(&manual) {
                broken.push(format!("{at}: outside docs/src, so not in the book"));
                continue;
            }
            let heading = anchor.is_empty() || (to.is_file() && slugs(&read(&to)).contains(anchor));
            if !heading {
                broken.push(format!("{at}: no heading #{anchor} there"));
            }
        }
    }
    assert!(checked >= 50, "the scan found only {checked} links");
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

/// Issue 37: README stays the front page — what azevac is, the quick start, install, the walkthrough and
/// links — and the manual holds the rest.
#[test]
fn issue_37_readme_is_short() {
    let readme = read(&root().join("README.md"));
    let lines = readme.lines().count();
    assert!(
        lines <= 150,
        "README.md has {lines} lines: move the detail into docs/src"
    );
    for command in ["scripts/demo", "scripts/test"] {
        assert!(
            readme.contains(&format!("\n{command} ")),
            "README's quick start lacks {command}"
        );
    }
}

/// Every page of the manual is in SUMMARY.md (mdBook leaves out the others), and every registered
/// kind has its page there.
#[test]
fn issue_37_every_page_is_reachable_from_the_summary() {
    let manual = root().join("docs/src");
    let summary = read(&manual.join("SUMMARY.md"));
    let listed: BTreeSet<PathBuf> = links(&summary).into_iter().map(|(_, t)| manual.join(t)).collect();
    let missing: Vec<String> = manual_pages()
        .into_iter()
        .filter(|p| !p.ends_with("SUMMARY.md") && !listed.contains(p))
        .map(|p| shown(&p))
        .collect();
    assert!(missing.is_empty(), "pages SUMMARY.md does not list: {missing:?}");
    for registration in REGISTRY {
        let page = manual.join(format!("kinds/{}.md", registration.name));
        assert!(
            listed.contains(&page),
            "kind {} has no page docs/src/kinds/{}.md in SUMMARY.md",
            registration.name,
            registration.name
        );
        // What the operator looks for on every kind's page.
        let headings = slugs(&read(&page));
        let permissions = if registration.is_kubernetes() {
            "kubernetes-permissions"
        } else {
            "iam-actions"
        };
        for heading in ["what-it-changes", "what-it-cannot", permissions, "journal"] {
            assert!(
                headings.contains(heading),
                "docs/src/kinds/{}.md has no section #{heading}",
                registration.name
            );
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Commands in shell blocks.

/// Sample values for placeholders, where a page writes one instead of a value.
const PLACEHOLDERS: [(&str, &str); 4] = [
    ("<AZ_ID>", "use1-az2"),
    ("$ZONE", "use1-az2"),
    ("<ACCOUNT>", "111111111111"),
    ("<TOPIC_ARN>", "arn:aws:sns:us-east-1:111111111111:azevac-incidents"),
];

/// The words of a shell command line up to its first redirection, pipe, list operator or comment,
/// with quotes removed; and the comment, if any.
fn shell_words(line: &str) -> (Vec<String>, String) {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut quote: Option<char> = None;
    let mut started = false;
    let mut chars = line.chars().peekable();
    let mut comment = String::new();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                started = true;
            }
            (None, '\\') => {
                if let Some(next) = chars.next() {
                    word.push(next);
                    started = true;
                }
            }
            (None, c) if c.is_whitespace() => {
                if started {
                    words.push(std::mem::take(&mut word));
                    started = false;
                }
            }
            (None, '#') if !started => {
                comment = chars.collect();
                break;
            }
            (None, '|' | '>' | '<' | ';' | '&') => {
                // `2>&1`: the 2 belongs to the redirection.
                if started && word != "2" {
                    words.push(std::mem::take(&mut word));
                }
                let rest: String = chars.collect();
                comment = rest.split_once('#').map(|(_, c)| c.to_owned()).unwrap_or_default();
                return (words, comment.trim().to_owned());
            }
            (None, c) => {
                word.push(c);
                started = true;
            }
        }
    }
    if started {
        words.push(word);
    }
    (words, comment.trim().to_owned())
}

/// Every `azevac` command line of the shell blocks of `text` (a `console` block's after `$ `), with
/// its line, block and expected exit code (`# exit N` in its comment; 0 without).
fn commands(text: &str) -> Vec<(usize, bool, String, i32)> {
    let (blocks, _) = split(text);
    let mut found = Vec::new();
    for block in blocks {
        let console = block.info == "console";
        if !matches!(block.info.as_str(), "sh" | "bash" | "shell" | "console") {
            continue;
        }
        for (i, line) in block.lines.iter().enumerate() {
            let line = line.trim();
            let line = if console {
                match line.strip_prefix("$ ") {
                    Some(line) => line,
                    None => continue,
                }
            } else {
                line
            };
            if line != "azevac" && !line.starts_with("azevac ") {
                continue;
            }
            let (_, comment) = shell_words(line);
            let code = comment
                .split_once("exit ")
                .and_then(|(_, rest)| rest.split(|c: char| !c.is_ascii_digit()).next())
                .and_then(|n| n.parse().ok())
                .unwrap_or(0);
            found.push((block.line + i + 1, block.runs, line.to_owned(), code));
        }
    }
    found
}

/// Every `azevac` command line in a shell block of README or the manual parses as clap parses it,
/// placeholders replaced by sample values ([`PLACEHOLDERS`]).
#[test]
fn issue_37_every_command_in_the_manual_parses() {
    let mut refused = Vec::new();
    let mut checked = 0;
    for page in all_pages() {
        for (line, _, command, _) in commands(&read(&page)) {
            let mut text = command.clone();
            for (placeholder, value) in PLACEHOLDERS {
                text = text.replace(placeholder, value);
            }
            let (words, _) = shell_words(&text);
            checked += 1;
            if let Err(e) = azevac::cli::parse_from(&words) {
                use clap::error::ErrorKind;
                if !matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
                    let said = e.to_string();
                    let first = said.lines().next().unwrap_or_default();
                    refused.push(format!("{}:{line}: {command}\n    {first}", shown(&page)));
                }
            }
        }
    }
    assert!(checked >= 30, "the scan found only {checked} commands");
    assert!(refused.is_empty(), "commands clap refuses:\n{}", refused.join("\n"));
}

/// Flags of other tools that README and the manual name: cargo's and cargo test's, the benchmark
/// scripts' (bench/), the AWS CLI's and kubectl's.
const OTHER_FLAGS: [&str; 25] = [
    "--all-targets",
    "--big",
    "--binary",
    "--capabilities",
    "--context",
    "--emulator",
    "--fleets",
    "--groups",
    "--latency-ms",
    "--locked",
    "--name",
    "--nocapture",
    "--node-group-id",
    "--parameter-overrides",
    "--path",
    "--replication-group-id",
    "--resources",
    "--rows",
    "--runs",
    "--servers",
    "--skip-peer",
    "--stack-name",
    "--template-file",
    "--test",
    "--unfixed-size",
];

/// Every long flag of every command, the kinds' own included.
fn azevac_flags() -> BTreeSet<String> {
    let mut flags = BTreeSet::new();
    let mut commands = vec![azevac::cli::command()];
    while let Some(command) = commands.pop() {
        flags.extend(
            command
                .get_arguments()
                .filter_map(|a| a.get_long())
                .map(|l| format!("--{l}")),
        );
        commands.extend(command.get_subcommands().cloned());
    }
    flags.extend(["--help", "--version"].map(String::from));
    flags
}

/// Every `--flag` README and the manual name, in prose or code, is one of azevac's (or another
/// tool's, [`OTHER_FLAGS`]): a flag renamed or removed cannot linger in the manual.
#[test]
fn issue_37_every_flag_the_manual_names_is_azevacs() {
    let known = azevac_flags();
    let mut unknown = Vec::new();
    for page in all_pages() {
        let text = read(&page);
        for (n, line) in text.lines().enumerate() {
            let mut rest = line;
            while let Some(at) = rest.find("--") {
                let before = rest[..at].chars().next_back();
                rest = &rest[at + 2..];
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-')
                    .collect();
                let flag = format!("--{name}");
                let word = before.is_some_and(|c| c.is_alphanumeric() || c == '-');
                if word || !name.starts_with(|c: char| c.is_ascii_lowercase()) {
                    continue;
                }
                if !known.contains(&flag) && !OTHER_FLAGS.contains(&flag.as_str()) {
                    unknown.push(format!("{}:{}: {flag}", shown(&page), n + 1));
                }
            }
        }
    }
    assert!(
        unknown.is_empty(),
        "flags azevac does not have:\n{}",
        unknown.join("\n")
    );
}

/// The parts of the scan find what they are for.
#[test]
fn issue_37_the_scans_read_markdown_as_written() {
    assert_eq!(
        shell_words("azevac evacuate --reason \"INC 1\" --dry-run --output json > plan.json  # exit 3: x"),
        (
            [
                "azevac",
                "evacuate",
                "--reason",
                "INC 1",
                "--dry-run",
                "--output",
                "json"
            ]
            .map(String::from)
            .to_vec(),
            String::from("exit 3: x")
        )
    );
    assert_eq!(shell_words("azevac status 2>&1 | jq .").0, ["azevac", "status"]);
    let page =
        "# A page\n\n## Many accounts (`--accounts`)\n\nSee [it](#many-accounts---accounts) and `[no](x.md)`.\n\n\
                <!-- runs against the emulator: tests/it/docs/manual.rs -->\n```sh\nazevac status   # exit 3\nls\n```\n";
    assert!(slugs(page).contains("many-accounts---accounts"), "{:?}", slugs(page));
    assert_eq!(links(page), [(5, String::from("#many-accounts---accounts"))]);
    assert_eq!(commands(page), [(9, true, String::from("azevac status   # exit 3"), 3)]);
}

// ---------------------------------------------------------------------------------------------
// The blocks that run.

/// Run the marked blocks of `page` in order, as written, against a moto server seeded with the
/// sample estate (fixtures/sample-estate.json): each line through `sh -c` in a scratch folder, with
/// the test binary first on PATH and the environment every test runs azevac with
/// ([`common::command`]), on an 80-column screen. Each must exit as its comment says, and print
/// no line wider than the screen.
async fn run_as_written(page: &str) {
    let text = read(&root().join(page));
    let lines: Vec<(usize, String, i32)> = commands(&text)
        .into_iter()
        .filter(|c| c.1)
        .map(|(line, _, command, code)| (line, command, code))
        .collect();
    assert!(!lines.is_empty(), "{page} has no block marked {RUNS}");
    let (blocks, _) = split(&text);
    for block in blocks.iter().filter(|b| b.runs) {
        let others: Vec<&String> = block
            .lines
            .iter()
            .filter(|l| !l.trim().is_empty() && !l.trim().starts_with("azevac"))
            .collect();
        assert!(
            others.is_empty(),
            "{page}:{}: a block that runs holds only azevac commands: {others:?}",
            block.line
        );
    }
    let moto = Moto::start();
    let spec = estate::read_spec(&root().join("fixtures/sample-estate.json"));
    estate::seed(&common::sdk(&moto).await, &spec).await;
    let scratch = tempfile::tempdir().expect("tempdir");
    let binary = Path::new(env!("CARGO_BIN_EXE_azevac"));
    let path = std::env::join_paths(
        std::iter::once(binary.parent().expect("the binary's folder").to_path_buf())
            .chain(std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())),
    )
    .expect("PATH");
    let harness = common::command(&moto.endpoint, &[], &[]);
    for (line, command, code) in lines {
        let mut shell = std::process::Command::new("sh");
        shell
            .arg("-c")
            .arg(&command)
            .current_dir(scratch.path())
            .stdin(std::process::Stdio::null());
        for (key, value) in harness.get_envs() {
            match value {
                Some(value) => shell.env(key, value),
                None => shell.env_remove(key),
            };
        }
        shell.env("PATH", &path).env("COLUMNS", "80");
        let out = shell.output().expect("run sh");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            out.status.code(),
            Some(code),
            "{page}:{line}: {command}\nstdout:\n{stdout}\nstderr:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let wider: Vec<&str> = stdout.lines().filter(|l| l.chars().count() > 80).collect();
        assert!(
            wider.is_empty(),
            "{page}:{line}: {command}: wider than 80 columns: {wider:#?}\n{stdout}"
        );
    }
}

/// Issue 37: README's incident walkthrough runs as written on the sample estate.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_37_readmes_walkthrough_runs_as_written() {
    run_as_written(RUN_PAGES[0]).await;
}

/// Issue 37: the runbook's commands, during and after the incident, run as written on the sample estate.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn issue_37_the_runbook_runs_as_written() {
    run_as_written(RUN_PAGES[1]).await;
}

/// The pages with blocks that run are the ones a test above runs.
#[test]
fn issue_37_every_block_that_runs_has_its_test() {
    let marked: BTreeSet<String> = all_pages()
        .into_iter()
        .filter(|p| split(&read(p)).0.iter().any(|b| b.runs))
        .map(|p| shown(&p))
        .collect();
    let run: BTreeSet<String> = RUN_PAGES.iter().map(|p| p.to_string()).collect();
    assert_eq!(marked, run);
}
