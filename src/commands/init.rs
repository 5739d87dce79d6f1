//! `azevac init`: create the journal table and its index; safe to run again.

use super::{Context, EXIT_OK};
use crate::Result;

/// Run `azevac init`; returns the exit code.
pub async fn run(ctx: &Context) -> Result<i32> {
    let created = ctx.journal.create().await?;
    let table = ctx.journal.table();
    match (ctx.output, created) {
        (crate::cli::Output::Json, _) => {
            println!(
                "{}",
                serde_json::json!({ "table": table, "region": ctx.region, "created": created })
            );
        }
        (_, true) => println!("created journal table {table} in {}", ctx.region),
        (_, false) => println!("journal table {table} already exists in {}: nothing to do", ctx.region),
    }
    Ok(EXIT_OK)
}
