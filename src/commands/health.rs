//! `azevac health`: whether the watcher on this machine (or in this container) is healthy, from the
//! file its `--health-file` writes; no AWS call, so that it can run every 30 seconds as a container's
//! health check. Exit 0 healthy, 1 unhealthy or stalled, 2 no readable file.

use super::{EXIT_FAILED, EXIT_OK};
use crate::app::health::{self, HEALTH_FILE_ENV};
use crate::{cli, Error, Result};

/// Read the health file, judge it now and print one line; returns the exit code.
pub fn run(args: &cli::Health, output: cli::Output) -> Result<i32> {
    let Some(path) = &args.health_file else {
        return Err(Error::BadInput(format!(
            "no health file: give --health-file PATH (or {HEALTH_FILE_ENV}), the file azevac watch --health-file writes"
        )));
    };
    let health = health::read(path).map_err(Error::BadInput)?;
    let stall_after = args
        .stall_after
        .unwrap_or(std::time::Duration::from_secs(health.stall_after_seconds));
    let (passes, line) = health.judge(std::time::SystemTime::now(), stall_after);
    if output == cli::Output::Json {
        // The file's fields as read (serde_json escapes them), the verdict and its line.
        let document = serde_json::json!({ "healthy": passes, "message": line, "health": health });
        println!("{document:#}");
    } else {
        println!("{line}");
    }
    Ok(if passes { EXIT_OK } else { EXIT_FAILED })
}
