//! The commands: each turns its flags into a request, has the application layer plan and carry it
//! out, and shows the outcome. What they share — the connection, the confirmation, the way a plan
//! and its result are shown — is here, once. Nothing here knows a resource type.

use std::io::{BufRead, IsTerminal, Write};

use aws_config::SdkConfig;
use futures::future::LocalBoxFuture;

pub use crate::app::{exit_code, Context, Fanout, EXIT_BAD_INPUT, EXIT_FAILED, EXIT_OK};
use crate::cli::{self, Output};
use crate::model::{Command, Plan};
use crate::{Error, Result};

pub mod apply;
pub mod doctor;
pub mod evacuate;
pub mod exposure;
pub mod health;
pub mod init;
pub mod recover;
pub mod shift;
pub mod status;
pub mod watch;

pub use crate::error::describe;

/// Exit code of `exposure --fail-if-exposed` (something azevac can move is still in the zone) and
/// of `status --fail-if-expiring` (a zonal shift azevac started ends soon, or already ended).
pub const EXIT_EXPOSED: i32 = 3;

/// Load the SDK configuration from the flags and the SDK's own chain: the context every command
/// works with.
pub async fn connect(global: &cli::Global, az_id: Option<&str>) -> Result<Context> {
    let pacing = crate::aws::pacing::Limits::default().with_overrides(&global.max_rate);
    pacing.check(global.attempt_timeout, usize::from(global.concurrency))?;
    let sdk = crate::aws::load(&crate::aws::Connection {
        az_id: az_id.map(str::to_owned),
        region: global.region.clone(),
        profile: global.profile.clone(),
        endpoint_url: global.endpoint_url.clone(),
        attempt_timeout: Some(global.attempt_timeout),
        operation_timeout: Some(global.operation_timeout),
        pacing: pacing.clone(),
    })
    .await?;
    let settings = crate::app::Settings {
        table: global.table.clone(),
        output: global.output,
        concurrency: usize::from(global.concurrency),
        stats: global.stats,
        progress: !global.no_progress && !crate::process::events::json(),
        lease: global.lease,
        operation_timeout: global.operation_timeout,
        account_concurrency: usize::from(global.account_concurrency),
        pacing,
    };
    Ok(Context::new(sdk, settings))
}

/// How a command shows a plan and its result (as `--output` and `--show-skipped` ask), and asks
/// before changing anything: the screen of every run, the watcher's too.
#[derive(Default)]
pub struct Printer {
    /// `--yes`: go ahead without asking.
    pub yes: bool,
    /// The view the plan was shown with, for its result: the same subnets, named once.
    view: std::sync::Mutex<Option<crate::report::View>>,
}

impl Printer {
    /// A printer that asks before anything changes unless `yes`.
    pub fn new(yes: bool) -> Printer {
        Printer {
            yes,
            ..Printer::default()
        }
    }
}

/// How a plan is shown: what the printer and the other commands' reports share.
impl Context {
    /// How the operator asked to see `plan`: fitted to the screen, or with every identifier (then
    /// with the Name tags of its subnets, read in one batched call).
    pub async fn view(&self, plan: &Plan) -> crate::report::View {
        // Each account's subnets are named where they are: the caller's with its own credentials,
        // another account's through the role the run reaches it by.
        let mut by_account: std::collections::BTreeMap<Option<&str>, Vec<&String>> = Default::default();
        for item in &plan.items {
            let subnets = [&item.removed_subnets, &item.restored_subnets]
                .into_iter()
                .flatten()
                .flatten()
                .chain(&item.resulting_subnets);
            by_account.entry(item.account.as_deref()).or_default().extend(subnets);
        }
        let mut names = self
            .subnet_names(&self.sdk, by_account.remove(&None).unwrap_or_default().into_iter())
            .await;
        if self.settings.output == Output::Wide && !by_account.is_empty() {
            let accounts = by_account.keys().flatten().map(|a| (*a).to_owned()).collect();
            for (account, sdk) in self.assume_each(&plan.request.fleet, accounts).await {
                let ids = by_account.get(&Some(account.as_str())).cloned().unwrap_or_default();
                match sdk {
                    Ok(sdk) => names.extend(self.subnet_names(&sdk, ids.into_iter()).await),
                    Err(e) => crate::say!(
                        "azevac: warning: the subnets of account {account} are shown without their names: {}",
                        crate::report::clean(&describe(&e))
                    ),
                }
            }
        }
        crate::report::View {
            show_skipped: self.show_skipped,
            verb: self.heading,
            subnet_names: names,
            ..crate::report::View::of(self.settings.output)
        }
    }

    /// With `-o wide`, the Name tag of each of these subnets that has one, read with `sdk` (the
    /// account they are in); none otherwise. Names only decorate: a read that fails is a warning,
    /// and the IDs stand alone.
    pub async fn subnet_names<'a>(
        &self,
        sdk: &SdkConfig,
        ids: impl Iterator<Item = &'a String>,
    ) -> std::collections::BTreeMap<String, String> {
        let ids: std::collections::BTreeSet<String> = ids.cloned().collect();
        if self.settings.output != Output::Wide || ids.is_empty() {
            return Default::default();
        }
        let ec2 = crate::client!(aws_sdk_ec2, sdk);
        crate::model::topology::subnet_names(&ec2, &ids)
            .await
            .unwrap_or_else(|e| {
                crate::say!(
                    "azevac: warning: could not read the subnets' Name tags: {}",
                    crate::report::clean(&describe(&e))
                );
                Default::default()
            })
    }
}

impl crate::app::Screen for Printer {
    fn alone<'a>(&'a self, ctx: &'a Context, plan: &'a Plan, dry_run: bool) -> LocalBoxFuture<'a, ()> {
        Box::pin(async move {
            let view = ctx.view(plan).await;
            crate::report::print(plan, ctx.settings.output, crate::report::Phase::Plan { dry_run }, &view);
        })
    }

    fn ahead<'a>(&'a self, ctx: &'a Context, plan: &'a Plan) -> LocalBoxFuture<'a, ()> {
        Box::pin(async move {
            // One view for the plan and the result: the same subnets, named once.
            let view = ctx.view(plan).await;
            if ctx.settings.output != Output::Json {
                crate::report::print(
                    plan,
                    ctx.settings.output,
                    crate::report::Phase::Plan { dry_run: false },
                    &view,
                );
            }
            *self.view.lock().unwrap_or_else(|e| e.into_inner()) = Some(view);
        })
    }

    fn confirm(&self, ctx: &Context, plan: &Plan, in_waves: bool) -> Result<bool> {
        let changes = plan.items.iter().filter(|i| i.changes_resource()).count();
        let planned = plan.count(crate::model::Status::Planned);
        let question = match (ctx.heading, plan.command) {
            (Some(heading), _) => format!(
                "{heading} {}: change {changes} resources{}?",
                plan.az_id.as_deref().unwrap_or("every zone"),
                in_accounts(plan)
            ),
            (None, Command::Evacuate) => format!(
                "Evacuate {} from {changes} resources{}?",
                plan.az_id.as_deref().unwrap_or_default(),
                in_accounts(plan)
            ),
            (None, Command::Recover) => format!(
                "Put back what was taken from {changes} resources and clear {planned} journal records{}?",
                if in_waves { ", in waves" } else { "" }
            ),
        };
        confirm(&question, self.yes)
    }

    fn result<'a>(&'a self, ctx: &'a Context, plan: &'a Plan) -> LocalBoxFuture<'a, ()> {
        Box::pin(async move {
            let shown = self.view.lock().unwrap_or_else(|e| e.into_inner()).take();
            let view = match shown {
                Some(view) => view,
                None => ctx.view(plan).await,
            };
            crate::report::print(plan, ctx.settings.output, crate::report::Phase::Result, &view);
        })
    }
}

/// " in N accounts" when the plan spans accounts.
fn in_accounts(plan: &Plan) -> String {
    let accounts: std::collections::BTreeSet<&str> = plan
        .items
        .iter()
        .filter(|i| i.changes_resource())
        .filter_map(|i| i.account.as_deref())
        .collect();
    match accounts.len() {
        0 => String::new(),
        1 => " in 1 account".into(),
        n => format!(" in {n} accounts"),
    }
}

/// Ask the operator before changing anything. Refuses without a terminal unless `--yes` was given.
pub fn confirm(question: &str, yes: bool) -> Result<bool> {
    if yes {
        return Ok(true);
    }
    if !std::io::stdin().is_terminal() {
        return Err(Error::BadInput(
            "refusing to change anything without confirmation: stdin is not a terminal; \
             pass --yes to go ahead, or --dry-run to print the plan only"
                .into(),
        ));
    }
    eprint!("{question} Type 'yes' to go ahead: ");
    std::io::stderr().flush().ok();
    let mut answer = String::new();
    std::io::stdin().lock().read_line(&mut answer).ok();
    Ok(answer.trim().eq_ignore_ascii_case("yes"))
}

/// Connect and run the parsed command; returns the exit code.
pub async fn run(cli: &cli::Cli) -> Result<i32> {
    // Commands about azevac itself need no AWS connection.
    match &cli.command {
        cli::Command::Completions { shell } => {
            let mut command = cli::command();
            clap_complete::generate(*shell, &mut command, "azevac", &mut std::io::stdout());
            return Ok(EXIT_OK);
        }
        cli::Command::Man => {
            let page = clap_mangen::Man::new(cli::command());
            page.render(&mut std::io::stdout())
                .map_err(|e| Error::BadInput(format!("cannot write the man page: {e}")))?;
            return Ok(EXIT_OK);
        }
        // A container's health check, every 30 seconds: the watcher's file, no AWS call.
        cli::Command::Health(args) => return health::run(args, cli.global.output),
        _ => {}
    }
    let mut ctx = connect(&cli.global, cli.command.az_id()).await?;
    ctx.show_skipped = cli.command.show_skipped();
    ctx.heading = cli.command.heading();
    match &cli.command {
        cli::Command::Init(args) => init::run(&ctx, args).await,
        cli::Command::Evacuate(args) => evacuate::run(&ctx, args).await,
        cli::Command::Recover(args) => recover::run(&ctx, args).await,
        cli::Command::Apply(args) => apply::run(&ctx, args).await,
        cli::Command::Shift(command) => shift::run(&ctx, command).await,
        cli::Command::Status(args) => status::run(&ctx, args).await,
        cli::Command::Doctor(args) => doctor::run(&ctx, args).await,
        cli::Command::Exposure(args) => exposure::run(&ctx, args).await,
        cli::Command::Watch(args) => watch::run(&ctx, args).await,
        cli::Command::Completions { .. } | cli::Command::Man | cli::Command::Health(_) => Ok(EXIT_OK),
    }
}

/// What `evacuate` and `recover` ask of the application layer: the zone, the request, and the flags
/// both take (kube access, `--wait`, `--notify`, `--dry-run`).
fn order<'a>(
    az_id: Option<&'a str>,
    request: &'a crate::model::Request,
    kube: &cli::KubeAccess,
    wait: &cli::Wait,
    notify: &'a cli::Notify,
    confirm: &cli::Confirm,
) -> crate::app::Order<'a> {
    crate::app::Order {
        az_id,
        request,
        kubeconfig: kube.kubeconfig.clone(),
        wait: wait.wait,
        wait_timeout: wait.wait_timeout,
        notify: &notify.topics,
        dry_run: confirm.dry_run,
    }
}

/// `evacuate` and `recover`: carry `order` out as `command`, show it, and return the exit code.
async fn carry_out(ctx: &Context, command: Command, order: crate::app::Order<'_>, yes: bool) -> Result<i32> {
    let printer = Printer::new(yes);
    let outcome = match command {
        Command::Evacuate => ctx.evacuate(&printer, order).await?,
        Command::Recover => ctx.recover(&printer, order).await?,
    };
    Ok(outcome.exit_code())
}
