//! The watcher's queue: one long poll, each message judged once (a redelivery is recognised) and
//! deleted; a message only wakes the watcher, what it does follows ARC.

use std::collections::{HashSet, VecDeque};

use super::{describe, now, Watch, RETRY};
use crate::app::autoshift::event::{self, Change, Origin};
use crate::app::autoshift::queue::Message;
use crate::app::health::State;
use crate::model::text::clean;

/// How many event and message IDs are remembered as judged (a redelivery is recognised among them).
const REMEMBERED: usize = 10_000;

impl Watch<'_> {
    /// One long poll of the queue, each message judged and (unless a dry run) deleted. Whether a
    /// message asks the watcher to look at ARC's autoshifts now; `None` when a signal came first.
    pub(super) async fn hear(&mut self) -> Option<bool> {
        let received = tokio::select! {
            received = self.queue.receive(self.orders.poll_wait) => received,
            () = self.interrupted() => return None,
        };
        let messages = match received {
            Ok(messages) => messages,
            Err(e) => {
                let why = format!("cannot read the queue: {}", describe(&e));
                crate::say!(
                    "azevac: warning: watch: {}; trying again",
                    crate::model::text::clean(&why)
                );
                self.beacon.set(State::QueueUnreadable, &why);
                self.pause(RETRY).await;
                return Some(false);
            }
        };
        self.me.heard_at = Some(now());
        self.share();
        // Only while it may act: a lease lost during the receive is the next turn's to say.
        if self.holds() {
            self.beacon.set(State::Healthy, &self.reading());
        }
        let mut wake = false;
        for message in messages {
            wake |= self.judge(&message).await;
            // A dry run leaves every message for the watcher that acts (it comes back to this one
            // after the queue's visibility timeout, and is recognised).
            if self.orders.dry_run {
                continue;
            }
            if let Err(e) = self.queue.delete(&message).await {
                crate::say!(
                    "azevac: warning: watch: cannot delete message {} from the queue (it comes back and is \
                     recognised): {}",
                    clean(&message.id),
                    crate::model::text::clean(&describe(&e))
                );
            }
            self.beacon.beat();
        }
        Some(wake)
    }

    /// What a watcher that reads its queue is doing, for its health.
    fn reading(&self) -> String {
        let following = match &self.me.following {
            Some(zone) => format!(", following {zone}"),
            None => String::new(),
        };
        match self.orders.dry_run {
            true => "reads its queue, changing nothing (--dry-run)".to_owned(),
            false => format!("holds the lease{following}; reads its queue"),
        }
    }

    /// Judge one message: report what it is and what the watcher makes of it, once. Whether it
    /// asks the watcher to look at ARC's autoshifts now.
    async fn judge(&mut self, message: &Message) -> bool {
        let event = match event::parse(&message.body, &self.ctx.region) {
            Ok(event) => event,
            Err(rejected) => {
                if self.judged.insert(&format!("message {}", message.id)) {
                    let verb = if self.orders.dry_run { "left" } else { "deleted" };
                    self.decide(
                        "message_rejected",
                        format!("message {} {verb} unread: {rejected}", message.id),
                        vec![],
                    )
                    .await;
                }
                return false;
            }
        };
        if !self.judged.insert(&event.id) {
            tracing::info!(event = %event.id, "an event already judged: nothing to do");
            return false;
        }
        match &event.change {
            Change::Started { origin, zone } | Change::Ended { origin, zone }
                if *origin != Origin::Autoshift && !self.orders.follow_practice =>
            {
                self.decide(
                    "event_ignored",
                    format!(
                        "{} {} away from {zone} ignored (--follow-practice follows it)",
                        origin.phrase(),
                        event.id
                    ),
                    vec![],
                )
                .await;
                false
            }
            Change::Started { origin, zone } => {
                self.started_by.entry(zone.clone()).or_insert_with(|| event.id.clone());
                tracing::info!(event = %event.id, %zone, "{} started", origin.phrase());
                true
            }
            Change::Ended { origin, zone } => {
                tracing::info!(event = %event.id, %zone, "{} ended", origin.phrase());
                true
            }
            Change::Other { detail_type } => {
                self.decide(
                    "event_ignored",
                    format!("event {} ({detail_type}) is not an autoshift: nothing to do", event.id),
                    vec![],
                )
                .await;
                false
            }
        }
    }
}

/// The event and message IDs judged, the oldest forgotten first.
#[derive(Default)]
pub(super) struct Remembered {
    ids: HashSet<String>,
    order: VecDeque<String>,
}

impl Remembered {
    /// Remember `id`; whether it is new.
    pub(super) fn insert(&mut self, id: &str) -> bool {
        if !self.ids.insert(id.to_owned()) {
            return false;
        }
        self.order.push_back(id.to_owned());
        if self.order.len() > REMEMBERED {
            if let Some(oldest) = self.order.pop_front() {
                self.ids.remove(&oldest);
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_redelivered_id_is_recognised_and_the_oldest_forgotten() {
        let mut judged = Remembered::default();
        assert!(judged.insert("a"));
        assert!(!judged.insert("a"));
        for i in 0..REMEMBERED {
            judged.insert(&i.to_string());
        }
        assert!(judged.insert("a"), "the oldest is forgotten once the memory is full");
        assert_eq!(judged.order.len(), REMEMBERED);
    }
}
