//! The commands: each turns its flags into a request, asks the engine for the plan, shows it, and
//! (unless `--dry-run`) has the engine carry it out. What they share — the connection, the
//! confirmation, the report and the exit code — is here, once. Nothing here knows a resource type.

use std::io::{BufRead, IsTerminal, Write};

use aws_config::SdkConfig;

use crate::cli::{self, Output};
use crate::engine::Settings;
use crate::journal::{Audit, Journal};
use crate::model::{Command, Plan, Status};
use crate::{Error, Result};
pub use fanout::Fanout;

pub mod apply;
pub mod doctor;
pub mod evacuate;
pub mod exposure;
pub mod fanout;
pub mod health;
pub mod init;
pub mod recover;
pub mod shift;
pub mod status;
pub mod watch;
pub mod waves;

pub use crate::error::describe;

/// Exit code: everything done.
pub const EXIT_OK: i32 = 0;
/// Exit code: some resources failed, or were left alone because another run holds them.
pub const EXIT_FAILED: i32 = 1;
/// Exit code: bad input or environment; nothing was changed.
pub const EXIT_BAD_INPUT: i32 = 2;
/// Exit code of `exposure --fail-if-exposed` (something azevac can move is still in the zone) and
/// of `status --fail-if-expiring` (a zonal shift azevac started ends soon, or already ended).
pub const EXIT_EXPOSED: i32 = 3;

/// What every command works with: one SDK configuration, the journal, the output choices.
pub struct Context {
    /// The shared SDK configuration.
    pub sdk: SdkConfig,
    /// The region everything is in.
    pub region: String,
    /// The journal table.
    pub journal: Journal,
    /// Table or JSON.
    pub output: Output,
    /// How many resources change at once.
    pub concurrency: usize,
    /// `--stats`.
    pub stats: bool,
    /// Progress bars on a terminal (not with `--no-progress`).
    pub progress: bool,
    /// How long a resource's lock is held between renewals.
    pub lease: std::time::Duration,
    /// `--operation-timeout`: the longest one call may take, so how long after its lease a call of
    /// this run may still land.
    pub operation_timeout: std::time::Duration,
    /// With `--accounts`: how many accounts are planned and changed at once.
    pub account_concurrency: usize,
    /// Requests per second per service, for the clients of each account a run reaches.
    pub pacing: crate::aws::pacing::Limits,
    /// This run's ID: in every record it writes, and the session name of every role it assumes.
    pub run_id: String,
    /// `--show-skipped`: list every skipped line of a plan.
    pub show_skipped: bool,
    /// What the plan's heading calls the command, when it is not evacuate or recover itself.
    pub heading: Option<&'static str>,
    /// Who the caller is (STS: ARN and account), asked once per run and only when needed.
    caller: tokio::sync::OnceCell<(String, String)>,
    /// What stops this run's changes: its own signal listener when `None`; a watcher's run is
    /// stopped by the watcher's signals and by the loss of its lease.
    pub interrupt: Option<crate::process::interrupt::Interrupt>,
}

impl Context {
    /// Load the SDK configuration from the flags and the SDK's own chain.
    pub async fn connect(global: &cli::Global, az_id: Option<&str>) -> Result<Self> {
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
        Ok(Context {
            region: crate::aws::region_of(&sdk),
            journal: Journal::new(&sdk, &global.table),
            output: global.output,
            concurrency: usize::from(global.concurrency),
            stats: global.stats,
            progress: !global.no_progress && !crate::process::events::json(),
            lease: global.lease,
            operation_timeout: global.operation_timeout,
            account_concurrency: usize::from(global.account_concurrency),
            pacing,
            run_id: uuid::Uuid::now_v7().to_string(),
            show_skipped: false,
            heading: None,
            caller: tokio::sync::OnceCell::new(),
            interrupt: None,
            sdk,
        })
    }

    /// Who is running this, for the journal: the STS caller ARN, a fresh run ID, the reason.
    pub async fn audit(&self, reason: Option<String>) -> Audit {
        let caller = match self.identity().await {
            Ok((arn, _)) => arn.clone(),
            // Not worth stopping an evacuation for: the journal still records what changed.
            Err(error) => {
                tracing::warn!(%error, "sts:GetCallerIdentity failed; recording the caller as unknown");
                "unknown".to_owned()
            }
        };
        let run_id = self.run_id.clone();
        crate::say!("azevac: run {run_id} as {}", crate::model::text::clean(&caller));
        Audit {
            run_id,
            caller,
            reason,
            account_id: None,
        }
    }

    /// The caller's ARN and account (STS `GetCallerIdentity`), asked once per run: the run's
    /// accounts, its audit and its recover all need it, and each ask was a round trip before the
    /// first change. A failure is not kept: the next ask tries again.
    pub async fn identity(&self) -> std::result::Result<&(String, String), String> {
        self.caller
            .get_or_try_init(|| async {
                let out = crate::client!(aws_sdk_sts, &self.sdk)
                    .get_caller_identity()
                    .send()
                    .await
                    .map_err(|e| crate::error::sdk::detail(&e))?;
                Ok((
                    out.arn().unwrap_or("unknown").to_owned(),
                    out.account().unwrap_or_default().to_owned(),
                ))
            })
            .await
    }

    /// This context with `sdk` in place of its own (another account's, or other retries): the
    /// same journal, output and run.
    pub fn with_sdk(&self, sdk: SdkConfig) -> Context {
        Context {
            sdk,
            region: self.region.clone(),
            journal: self.journal.clone(),
            pacing: self.pacing.clone(),
            run_id: self.run_id.clone(),
            // Another SDK configuration may be another identity.
            caller: tokio::sync::OnceCell::new(),
            interrupt: self.interrupt.clone(),
            ..*self
        }
    }

    /// This context for another run, stopped by `interrupt`: the same connection, table and
    /// settings, a new run ID (each evacuation or recovery a watcher carries out is a run of its own
    /// in the journal), and the journal read afresh (what an earlier run read is stale by now).
    pub fn for_another_run(&self, interrupt: crate::process::interrupt::Interrupt) -> Context {
        Context {
            run_id: uuid::Uuid::now_v7().to_string(),
            journal: self.journal.fresh(),
            interrupt: Some(interrupt),
            ..self.with_sdk(self.sdk.clone())
        }
    }

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
        if self.output == Output::Wide && !by_account.is_empty() {
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
            ..crate::report::View::of(self.output)
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
        if self.output != Output::Wide || ids.is_empty() {
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

    /// Print the plan without changing anything (a dry run, or nothing to do); returns the exit code.
    pub async fn print_only(&self, prepared: Fanout, dry_run: bool) -> i32 {
        let Fanout { mut plan, phases, .. } = prepared;
        self.attach_stats(&mut plan, &phases);
        let view = self.view(&plan).await;
        crate::report::print(&plan, self.output, crate::report::Phase::Plan { dry_run }, &view);
        // A plan with a type that could not be planned, or a line that failed at planning, is not
        // the whole plan: a dry run in CI must notice.
        exit_code(&plan)
    }

    /// Show the plan, ask, and have the engine carry it out; returns the exit code.
    pub async fn carry_out(&self, prepared: Fanout, yes: bool, wait: &cli::Wait) -> Result<i32> {
        self.carry_out_notifying(prepared, yes, wait, &[]).await
    }

    /// [`Context::carry_out`], telling the `--notify` topics when the run starts and ends.
    pub async fn carry_out_notifying(
        &self,
        prepared: Fanout,
        yes: bool,
        wait: &cli::Wait,
        notify: &[String],
    ) -> Result<i32> {
        self.carry_out_gated(prepared, yes, wait, notify, None).await
    }

    /// [`Context::carry_out_notifying`], in waves behind alarms when `gates` are given (`recover
    /// --waves`).
    pub async fn carry_out_gated(
        &self,
        prepared: Fanout,
        yes: bool,
        wait: &cli::Wait,
        notify: &[String],
        gates: Option<&waves::Gates>,
    ) -> Result<i32> {
        let plan = &prepared.plan;
        let changes = plan.items.iter().filter(|i| i.changes_resource()).count();
        let planned = plan.count(Status::Planned);
        let nothing = match plan.command {
            Command::Evacuate => changes == 0,
            Command::Recover => planned == 0,
        };
        if nothing {
            // Nothing to change is still a failure when a line failed at planning or a journal
            // item could not be read.
            let code = exit_code(&prepared.plan);
            self.print_only(prepared, false).await;
            return Ok(code);
        }
        // One view for the plan and the result: the same subnets, named once.
        let view = self.view(plan).await;
        if self.output != Output::Json {
            crate::report::print(plan, self.output, crate::report::Phase::Plan { dry_run: false }, &view);
        }
        let question = match (self.heading, plan.command) {
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
                if gates.is_some() { ", in waves" } else { "" }
            ),
        };
        if !confirm(&question, yes)? {
            crate::say!("azevac: nothing changed");
            return Ok(EXIT_OK);
        }
        let journal_ready = async {
            if plan.command == Command::Evacuate {
                if self.journal.create().await? {
                    crate::say!("azevac: created journal table {}", self.journal.table());
                    // Protection must not hold up an evacuation: a failure is one warning line.
                    if let Err(e) = self.journal.protect().await {
                        crate::say!(
                            "azevac: warning: could not turn on point-in-time recovery for the journal: {}; \
                             run `azevac init` later",
                            crate::report::clean(&describe(&e))
                        );
                    }
                } else {
                    self.warn_if_unprotected().await;
                }
            }
            Ok::<(), Error>(())
        };
        // Side by side: the journal's check and the caller's identity are each a round trip
        // before the first change.
        let (journal_ready, audit) = tokio::join!(journal_ready, self.audit(plan.request.reason.clone()));
        journal_ready?;
        let settings = Settings {
            concurrency: self.concurrency,
            progress: self.progress,
            lease: self.lease,
            wait: wait.wait.then_some(wait.wait_timeout),
            paced: crate::plugins::paced_rates(&self.pacing),
            in_flight: self.operation_timeout,
            interrupt: self
                .interrupt
                .clone()
                .unwrap_or_else(crate::process::interrupt::Interrupt::listen),
            run_events: true,
        };
        let notifier = crate::app::notify::Notifier::new(&self.sdk, notify);
        let started = std::time::Instant::now();
        // The start message goes out first but never holds the first change back: a slow or
        // unreachable SNS endpoint costs the evacuation nothing.
        let start = crate::app::notify::started(plan, &audit);
        let carried = async {
            match gates {
                None => {
                    let (plan, phases) = prepared
                        .carry_out(&self.journal, &audit, &settings, self.account_concurrency)
                        .await;
                    (plan, phases, false)
                }
                Some(gates) => {
                    let outcome = self.in_waves(prepared, gates, &audit, &settings, &notifier).await;
                    (outcome.plan, outcome.phases, outcome.halted.is_some())
                }
            }
        };
        let (_, (mut plan, phases, stopped)) = tokio::join!(notifier.publish(&start), carried);
        notifier
            .publish(&crate::app::notify::ended(&plan, &audit, started.elapsed()))
            .await;
        self.attach_stats(&mut plan, &phases);
        crate::report::print(&plan, self.output, crate::report::Phase::Result, &view);
        let code = exit_code(&plan);
        Ok(settings
            .interrupt
            .exit_code()
            .unwrap_or(if stopped { EXIT_FAILED } else { code }))
    }

    /// One warning line when the journal lacks deletion protection or point-in-time recovery; a
    /// check that fails is a warning too, never a reason to stop an evacuation.
    async fn warn_if_unprotected(&self) {
        match self.journal.protection().await {
            Ok(protection) => {
                if let Some(warning) = protection.warning(self.journal.table()) {
                    crate::say!("azevac: warning: {warning}");
                }
            }
            Err(e) => crate::say!(
                "azevac: warning: could not check the journal's protection: {}",
                crate::report::clean(&describe(&e))
            ),
        }
    }

    /// With `--stats`: attach the counts and times to the plan and print them on stderr.
    fn attach_stats(&self, plan: &mut Plan, phases: &crate::aws::stats::Phases) {
        if self.stats {
            let stats = phases.stats();
            crate::say!("{}", stats.render().trim_end());
            plan.stats = Some(stats);
        }
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

/// Exit code for a finished plan: 1 when a line failed, was left alone for another live run, left a
/// record for the operator to decide on, or a journal item could not be read (reported, never acted
/// on, and not to be mistaken for success).
pub fn exit_code(plan: &Plan) -> i32 {
    let blocked = plan.items.iter().any(|i| i.blocked_by.is_some() || i.unfinished);
    if plan.count(Status::Failed) > 0 || blocked || !plan.problems.is_empty() {
        EXIT_FAILED
    } else {
        EXIT_OK
    }
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
    let mut ctx = Context::connect(&cli.global, cli.command.az_id()).await?;
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
