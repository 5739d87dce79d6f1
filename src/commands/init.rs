//! `azevac init`: create the journal table and its index; safe to run again.

use super::{Context, EXIT_OK};
use crate::Result;

/// Run `azevac init`; returns the exit code.
pub async fn run(ctx: &Context, args: &crate::cli::Init) -> Result<i32> {
    let created = ctx.journal.create().await?;
    // A new journal gets point-in-time recovery; an existing one whatever protection it lacks.
    let mut turned_on = ctx.journal.protect().await?;
    if args.autoshift_observer && !crate::app::autoshift::arc::observing(&ctx.sdk).await? {
        crate::app::autoshift::arc::observe(&ctx.sdk).await?;
        turned_on.push("the autoshift observer notification");
    }
    let table = ctx.journal.table();
    match (ctx.settings.output, created) {
        (crate::cli::Output::Json, _) => {
            println!(
                "{}",
                serde_json::json!({
                    "table": table,
                    "region": ctx.region,
                    "created": created,
                    "turned_on": turned_on,
                })
            );
        }
        (output, created) => {
            let said = match created {
                true => format!(
                    "created journal table {table} in {} (deletion protection and point-in-time recovery on){}",
                    ctx.region,
                    match turned_on.last() {
                        Some(observer) if observer.contains("autoshift") => format!("; turned on {observer}"),
                        _ => String::new(),
                    }
                ),
                false if turned_on.is_empty() => {
                    format!("journal table {table} already exists in {}: nothing to do", ctx.region)
                }
                false => format!(
                    "journal table {table} already exists in {}: turned on {}",
                    ctx.region,
                    turned_on.join(" and ")
                ),
            };
            print!(
                "{}",
                crate::report::layout::wrap("", &said, crate::report::View::of(output).width)
            );
        }
    }
    Ok(EXIT_OK)
}
