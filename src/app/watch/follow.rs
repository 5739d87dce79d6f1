//! What the watcher does about ARC's autoshifts: follow the zone traffic is away from (evacuate it,
//! again on each resync), recover it once traffic is back or a real autoshift outranks the
//! rehearsal followed, and report the zones it does not follow.

use std::collections::BTreeMap;

use super::{describe, rfc3339, Watch};
use crate::app::autoshift::arc::{self, Away};
use crate::app::{Outcome, EXIT_OK};
use crate::model::Request;

impl Watch<'_> {
    /// Compare ARC's autoshifts with the zone followed and act: follow a zone traffic is away
    /// from, evacuate it again on a resync (extending azevac's shifts), recover it once traffic
    /// is back (or once a real autoshift outranks the rehearsal followed).
    pub(super) async fn reconcile(&mut self, resync: bool) {
        let away = match arc::away_now(&self.ctx.sdk, self.orders.follow_practice).await {
            Ok(away) => away,
            Err(e) => {
                crate::say!(
                    "azevac: warning: watch: cannot read ARC's autoshifts: {}; looking again at the next event \
                     or in {}",
                    crate::model::text::clean(&describe(&e)),
                    humantime::format_duration(self.orders.resync)
                );
                return;
            }
        };
        self.unfollowed.retain(|zone| away.contains_key(zone));
        let following = self.me.following.clone();
        self.started_by
            .retain(|zone, _| away.contains_key(zone) || following.as_deref() == Some(zone.as_str()));
        // One zone after another: a recovery done, the next zone traffic is away from is followed.
        loop {
            if !self.holds() || self.interrupt.requested() {
                return;
            }
            match self.me.following.clone() {
                None => {
                    let Some((zone, since)) = strongest(&away) else {
                        return;
                    };
                    self.report_unfollowed(&away, &zone).await;
                    // The zone is written to the lease before anything is changed: a watcher that
                    // takes over must know to recover it.
                    self.me.following = Some(zone.clone());
                    if let Some(leader) = &self.leader {
                        if !leader.write(&self.me).await {
                            self.me.following = None;
                            return;
                        }
                    }
                    let reason = match self.started_by.get(&zone) {
                        Some(id) => format!("autoshift {id}"),
                        None => format!("autoshift away from {zone} since {}", rfc3339(since.since)),
                    };
                    self.decide(
                        "following",
                        format!("{} away from {zone}: evacuating {zone}", since.origin.phrase()),
                        vec![
                            format!("reason: {reason}"),
                            format!("types: {}", self.orders.types.join(", ")),
                        ],
                    )
                    .await;
                    self.evacuate(&zone, reason).await;
                    return;
                }
                Some(zone) if away.contains_key(&zone) && outranked(&away, &zone).is_none() => {
                    self.report_unfollowed(&away, &zone).await;
                    if resync {
                        tracing::info!(%zone, "resync: evacuating the followed zone again");
                        let reason = format!("autoshift away from {zone}: resync");
                        self.evacuate(&zone, reason).await;
                    }
                    return;
                }
                Some(zone) => {
                    let why = match outranked(&away, &zone) {
                        Some(other) => format!(
                            "the autoshift away from {other} outranks the {} away from {zone}: recovering {zone} \
                             first",
                            away[&zone].origin.phrase()
                        ),
                        None => format!("autoshift away from {zone} has ended: recovering {zone}"),
                    };
                    self.decide("recovering", why, vec![]).await;
                    let code = self.recover(&zone).await;
                    let left = match code {
                        EXIT_OK => self.records_left(&zone).await,
                        _ => None,
                    };
                    if code != EXIT_OK || left.is_some() {
                        let what = left.unwrap_or_else(|| format!("exit {code}"));
                        let next = if self.interrupt.requested() {
                            format!("the watcher that runs next recovers {zone}")
                        } else if !self.holds() {
                            format!("the watcher that holds the lease recovers {zone}")
                        } else {
                            format!(
                                "the watcher tries again in {}",
                                humantime::format_duration(self.orders.resync)
                            )
                        };
                        self.decide(
                            "recovery_incomplete",
                            format!("the recovery of {zone} did not finish ({what}): its records stay; {next}"),
                            vec![],
                        )
                        .await;
                        return;
                    }
                    self.me.following = None;
                    if let Some(leader) = &self.leader {
                        if !leader.write(&self.me).await {
                            return;
                        }
                    }
                    self.started_by.remove(&zone);
                    self.unfollowed.remove(&zone);
                    self.decide("recovered", format!("{zone} recovered: following no zone"), vec![])
                        .await;
                }
            }
        }
    }

    /// What stays in the journal of `zone` for the watcher's types after a recovery that ended
    /// well (a run stopped before every line, a record locked by another run): `None` when nothing
    /// does, and the zone is no longer followed. A dry run's recovery changes nothing. Read from
    /// the journal, not the run's plan: another run (an operator's evacuation, another type's) may
    /// have written records of the zone since the recovery planned.
    async fn records_left(&self, zone: &str) -> Option<String> {
        if self.orders.dry_run {
            return None;
        }
        let every = crate::plugins::types();
        let read = self
            .ctx
            .journal
            .fresh()
            .records_of_every_account(&every, Some(zone))
            .await;
        let (by_type, unreadable) = match read {
            Ok(read) => read,
            Err(e) => return Some(format!("the journal could not be read: {}", describe(&e))),
        };
        let count = |mine: bool| -> usize {
            by_type
                .iter()
                .filter(|(kind, _)| self.orders.types.contains(kind) == mine)
                .map(|(_, records)| records.len())
                .sum()
        };
        // A record that cannot be read may be one of this watcher's: the zone stays followed.
        let left = count(true) + unreadable.len();
        if left > 0 {
            return Some(format!("{left} records of {zone} left in the journal"));
        }
        let others = count(false);
        if others > 0 {
            // Another party's (an operator's, or a watcher of more types): not this watcher's to
            // recover, and not forgotten either: status lists them.
            crate::say!(
                "azevac: watch: {others} records of {zone} of types this watcher does not follow stay in the \
                 journal: `azevac recover --az-id {zone}` puts them back"
            );
        }
        None
    }

    /// Say once per autoshift which zones traffic is away from that the watcher does not follow.
    async fn report_unfollowed(&mut self, away: &BTreeMap<String, Away>, following: &str) {
        let others: Vec<String> = away
            .keys()
            .filter(|zone| zone.as_str() != following && !self.unfollowed.contains(*zone))
            .cloned()
            .collect();
        for zone in others {
            self.decide(
                "not_followed",
                format!(
                    "{} away from {zone} not followed: the watcher follows {following}, one zone at a time",
                    away[&zone].origin.phrase()
                ),
                vec![],
            )
            .await;
            self.unfollowed.insert(zone);
        }
    }

    /// Evacuate `zone` for `reason`: a run of its own, stopped by the watcher's signals and the
    /// loss of its lease.
    async fn evacuate(&mut self, zone: &str, reason: String) {
        let ctx = self.ctx.for_another_run(self.guarded());
        let request = Request {
            reason: Some(reason),
            ..self.orders.evacuation.clone()
        };
        self.acting(Some(format!("evacuating {zone}")));
        let ran = ctx.evacuate(self.screen, self.orders.order(zone, &request)).await;
        self.acting(None);
        match ran {
            Ok(outcome) => self.note_interrupted(&outcome),
            Err(e) => {
                self.decide(
                    "evacuation_failed",
                    format!("the evacuation of {zone} failed: {}", describe(&e)),
                    vec![],
                )
                .await
            }
        }
    }

    /// Recover `zone` (in waves when the watcher was given `--waves`); returns the run's exit code.
    async fn recover(&mut self, zone: &str) -> i32 {
        let ctx = self.ctx.for_another_run(self.guarded());
        self.acting(Some(format!("recovering {zone}")));
        let ran = ctx
            .recover(self.screen, self.orders.order(zone, &self.orders.recovery))
            .await;
        self.acting(None);
        match ran {
            Ok(outcome) => {
                self.note_interrupted(&outcome);
                outcome.exit_code()
            }
            Err(e) => {
                crate::say!(
                    "azevac: error: watch: the recovery of {zone} failed: {}",
                    crate::model::text::clean(&describe(&e))
                );
                e.exit_code()
            }
        }
    }

    /// A run a signal stopped ends the watcher with the signal's exit code.
    pub(super) fn note_interrupted(&mut self, outcome: &Outcome) {
        if let Some(code) = outcome.interrupted {
            self.code = code;
        }
    }
}

/// The zone to follow: an autoshift before a FIS experiment before a practice run, then the zone
/// traffic has been away from longest (ties: by AZ ID).
fn strongest(away: &BTreeMap<String, Away>) -> Option<(String, Away)> {
    away.iter()
        .min_by_key(|(zone, a)| (a.origin.rank(), a.since, zone.as_str()))
        .map(|(zone, a)| (zone.clone(), a.clone()))
}

/// The zone, if any, whose shift outranks the one away from `following` (a real autoshift while
/// a practice run is followed): the rehearsal gives way.
fn outranked(away: &BTreeMap<String, Away>, following: &str) -> Option<String> {
    let held = away.get(following)?;
    strongest(away)
        .filter(|(zone, other)| zone != following && other.origin.rank() < held.origin.rank())
        .map(|(zone, _)| zone)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::autoshift::event::Origin;

    #[test]
    fn a_real_autoshift_outranks_a_rehearsal_followed() {
        let away = BTreeMap::from([
            (
                "use1-az1".to_owned(),
                Away {
                    origin: Origin::PracticeRun,
                    since: 10,
                },
            ),
            (
                "use1-az3".to_owned(),
                Away {
                    origin: Origin::Autoshift,
                    since: 20,
                },
            ),
        ]);
        assert_eq!(strongest(&away).map(|(z, _)| z).as_deref(), Some("use1-az3"));
        assert_eq!(outranked(&away, "use1-az1").as_deref(), Some("use1-az3"));
        assert_eq!(outranked(&away, "use1-az3"), None);
        assert_eq!(outranked(&away, "use1-az2"), None, "a zone no longer away has ended");
    }

    #[test]
    fn the_zone_away_longest_is_followed() {
        let at = |since| Away {
            origin: Origin::Autoshift,
            since,
        };
        let away = BTreeMap::from([("use1-az3".to_owned(), at(10)), ("use1-az1".to_owned(), at(20))]);
        assert_eq!(strongest(&away).map(|(z, _)| z).as_deref(), Some("use1-az3"));
        assert_eq!(strongest(&BTreeMap::new()), None);
        assert_eq!(outranked(&away, "use1-az1"), None, "an autoshift gives way to none");
    }
}
