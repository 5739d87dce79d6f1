//! The `azevac` binary: parse flags, set up logging, run, map the outcome to an exit code.

use std::io::IsTerminal;

use azevac::commands;

#[tokio::main]
async fn main() {
    let cli = azevac::cli::parse();
    azevac::process::events::init(cli.global.log_format);
    init_logging(cli.global.verbose);
    raise_open_files();
    let code = match commands::run(&cli).await {
        Ok(code) => code,
        Err(err) => {
            // One line, whatever the SDK's own messages look like: the operator greps for it.
            // Escaped after folding: the text may quote AWS or a journal item.
            let message = commands::describe(&err)
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ");
            let message = azevac::report::clean(&message);
            azevac::say!("azevac: error: {message}");
            err.exit_code()
        }
    };
    std::process::exit(code);
}

/// Every account a run reaches at once keeps its own connections (up to `--concurrency` per type,
/// and the reads), so a run across many accounts can hold thousands of sockets. The soft limit on
/// open files is often 1,024 (256 on macOS), well under the hard limit: raise it to the hard limit,
/// as the operator's `ulimit -n` would, so that no call fails for want of a descriptor. A limit that
/// cannot be raised is left as it is.
fn raise_open_files() {
    use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
    let now = getrlimit(Resource::Nofile);
    // At most 65,536: the children azevac starts (a credential process, a kube exec plugin) inherit
    // the limit, and some close every descriptor up to it. macOS refuses more than its per-process
    // ceiling (OPEN_MAX, 10,240) whatever the hard limit says: that is the fallback.
    let hard = now.maximum.unwrap_or(u64::MAX);
    let wanted = [hard.min(65_536), hard.min(10_240)];
    for current in wanted.into_iter().filter(|&w| now.current.is_some_and(|c| c < w)) {
        let raised = Rlimit {
            current: Some(current),
            maximum: now.maximum,
        };
        match setrlimit(Resource::Nofile, raised) {
            Ok(()) => return tracing::debug!(current, "raised the limit on open files"),
            Err(error) => tracing::debug!(%error, current, "could not raise the limit on open files"),
        }
    }
}

/// Logs go to stderr (stdout carries the plan or JSON): warnings by default, `-v` info, `-vv` debug.
fn init_logging(verbose: u8) {
    // The SDK's instance-metadata lookups warn in several long lines whenever azevac runs outside
    // EC2 (every laptop), ahead of azevac's own one-line error: below -vv they stay quiet. So does
    // the assume-role provider's warning when STS refuses a role: it prints STS's error as the
    // SDK's debug structures, where azevac says the same in one line ("cannot assume ...").
    let default = match verbose {
        0 => "warn,aws_config::imds=off,aws_config::sts::assume_role=error",
        1 => "azevac=info,warn,aws_config::imds=off,aws_config::sts::assume_role=error",
        _ => "azevac=debug,info",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    // Colour only for a person at a terminal, and never when NO_COLOR is set (no-color.org).
    let colour = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let logs = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    // `--log-format json`: the SDK's and azevac's log lines are JSON objects too.
    if azevac::process::events::json() {
        logs.json().init();
    } else {
        logs.with_ansi(colour).init();
    }
}
