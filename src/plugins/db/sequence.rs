//! A replication group's failover in three steps, each decided from a fresh read so that any later
//! run finishes what a killed one started: ElastiCache refuses a chosen promotion while automatic
//! failover is on, so what is on is turned off, the chosen replica promoted, and what was on turned
//! back on; a failure after the turn-off turns them back on at once and says so.

use super::cache::FailoverSettings;
use super::types::{Database, Failover};
use super::Databases;
use crate::model::topology::Zones;
use crate::model::Item;
use crate::plugins::Acted;
use crate::{Error, Result};

/// What a replication group's failover does, decided from the act's fresh read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheSteps {
    /// What is turned off before the promotion (what is on now).
    pub turn_off: FailoverSettings,
    /// Whether the target is promoted.
    pub promote: bool,
    /// What is on at the end: what was on at this read, and what the line says was on before
    /// azevac turned it off. Also what a failure after the turn-off turns back on.
    pub turn_on: FailoverSettings,
}

/// The steps of `failover` given the group as read at the act (pure), or why the line fails with
/// nothing changed. A line that only turns settings back on never promotes, wherever the primary
/// is now. A promotion turns off only what the line planned to (and so journalled): anything on
/// that it did not plan for means the group changed since the plan.
pub fn cache_steps(failover: &Failover, db: &Database) -> Result<CacheSteps, String> {
    let on = db.failover_settings;
    let turn_on = on.union(failover.turn_on);
    let promote = !failover.restores_only() && db.writer().is_none_or(|w| w.id != failover.to);
    if !promote {
        if turn_on != on && db.status != "available" {
            return Err(format!(
                "{} is {}: turning {} back on needs it available; nothing changed — run again once it is",
                db.id,
                db.status,
                turn_on.words()
            ));
        }
        return Ok(CacheSteps {
            turn_off: FailoverSettings::default(),
            promote: false,
            turn_on,
        });
    }
    if !failover.turn_off.covers(on) {
        return Err(format!(
            "changed since the plan ({} is now on); nothing changed — run again",
            on.words()
        ));
    }
    Ok(CacheSteps {
        turn_off: on,
        promote: true,
        turn_on,
    })
}

impl Databases {
    /// A replication group's failover, each step decided from a fresh read by [`cache_steps`], so
    /// that the next run finishes what a killed one started: turn automatic failover (and Multi-AZ)
    /// off if it is on (ElastiCache refuses a chosen promotion while it is), promote the target
    /// unless it is the primary already (a line that only turns settings back on never promotes),
    /// turn back on what was on. Any failure after the turn-off tries to turn them back on at once
    /// and says so in the error; the journal record keeps its markers either way.
    pub(super) async fn cache_sequence(&self, line: &Item, failover: &Failover, zones: &Zones) -> Result<Acted> {
        let Some(mut db) = self.read_one(zones, &line.resource, true).await? else {
            return Err(Error::NotSettled {
                resource: failover.id.clone(),
                why: "no longer in DescribeReplicationGroups; nothing changed".into(),
            });
        };
        let steps = cache_steps(failover, &db).map_err(|why| Error::NotSettled {
            resource: failover.id.clone(),
            why,
        })?;
        let mut shown = Vec::new();
        if steps.turn_off.any() {
            let turned_off = async {
                self.cache
                    .set_failover(&failover.id, FailoverSettings::default())
                    .await?;
                let off = format!("{} to be off", steps.turn_off.words());
                self.wait_until(zones, line, failover, &off, |d| {
                    d.status == "available" && !d.failover_settings.any()
                })
                .await
            };
            if let Err(e) = turned_off.await {
                let step = format!("turning {} off", steps.turn_off.words());
                return Err(self.turn_back_on(failover, steps.turn_on, step, e).await);
            }
            shown.push(format!("{} off", steps.turn_off.words()));
        }
        if steps.promote {
            let promoted = async {
                self.cache.start(failover).await?;
                self.wait_until(zones, line, failover, &failover.arrival(), |d| failover.arrived(d))
                    .await
            };
            db = match promoted.await {
                Ok(db) => db,
                Err(e) => {
                    let step = format!("promoting {} to primary", failover.to);
                    return Err(self.turn_back_on(failover, steps.turn_on, step, e).await);
                }
            };
            shown.push(failover.arrived_words());
        } else if failover.restores_only() {
            let (now, now_az) = db.writer_az();
            shown.push(format!("primary {now} stays in {now_az}"));
        }
        let want = db.failover_settings.union(steps.turn_on);
        if want != db.failover_settings {
            let turned_on = async {
                self.cache.set_failover(&failover.id, want).await?;
                let on = format!("{} to be on", want.words());
                self.wait_until(zones, line, failover, &on, |d| {
                    d.status == "available" && d.failover_settings.covers(want)
                })
                .await
            };
            if let Err(e) = turned_on.await {
                return Err(Error::StepFailed {
                    step: format!("turning {} back on", want.words()),
                    undone: format!(
                        "{} may still be off: the journal record says azevac turned {} off, and the next evacuate or recover turns {} on",
                        want.words(),
                        want.them(),
                        want.them()
                    ),
                    source: Box::new(e),
                });
            }
            shown.push(format!("{} back on", want.words()));
        }
        Ok(Acted {
            shown: (!shown.is_empty()).then_some(shown),
            ..Acted::default()
        })
    }

    /// After a failed step that followed the turn-off: request the turn-on of `on` at once (best
    /// effort; not waited for), and say so in the error. The journal record keeps saying azevac
    /// turned them off, so the next run turns them on if this does not.
    async fn turn_back_on(&self, failover: &Failover, on: FailoverSettings, step: String, failed: Error) -> Error {
        if !on.any() {
            return failed;
        }
        let undone = match self.cache.set_failover(&failover.id, on).await {
            Ok(()) => format!(
                "turning {} back on (requested, not waited for; the next evacuate or recover checks it)",
                on.words()
            ),
            Err(e) => format!(
                "{} is still off ({}): the journal record says azevac turned {} off, and the next evacuate or recover turns {} back on",
                on.words(),
                crate::error::describe(&e),
                on.them(),
                on.them()
            ),
        };
        Error::StepFailed {
            step,
            undone,
            source: Box::new(failed),
        }
    }
}
