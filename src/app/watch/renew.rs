//! The watcher keeps the changes of azevac's that end by themselves (zonal shifts: kinds that
//! declare [`Expiring`](crate::plugins::expiring::Expiring)) from lapsing in a long incident: on
//! each resync, the ones that end within their kind's window are renewed, as `azevac shift extend`
//! does.

use std::collections::BTreeSet;
use std::time::Duration;

use super::Watch;
use crate::app::Order;

impl Watch<'_> {
    /// Renew azevac's changes that end by themselves (the caller's own account's) and end within
    /// their kind's window, zone by zone, as `azevac shift extend` does: the watcher keeps them
    /// from lapsing in a long incident, whoever started them and whatever zone it follows.
    pub(super) async fn renew_shifts(&mut self) {
        // Every kind whose changes end by themselves, through what it declares (zonal shifts).
        for (kind, expiring) in crate::plugins::expiring::kinds() {
            let what = format!("azevac's {}s", expiring.noun);
            let records: Vec<_> = match self.ctx.journal.of_type(kind, None).await {
                Ok(entries) => entries
                    .into_iter()
                    .filter_map(std::result::Result::ok)
                    .filter(|r| r.account_id.is_none())
                    .collect(),
                Err(e) => {
                    crate::say!(
                        "azevac: warning: watch: cannot read {what} from the journal: {}",
                        crate::model::text::clean(&super::describe(&e))
                    );
                    continue;
                }
            };
            if records.is_empty() {
                continue;
            }
            let within = expiring.renew_within;
            let ending: BTreeSet<String> = match (expiring.read)(&self.ctx.sdk, &records, within).await {
                Ok(read) => read
                    .into_iter()
                    .flatten()
                    .filter(|e| e.due(within))
                    .map(|e| e.az_id)
                    .collect(),
                Err(e) => {
                    crate::say!(
                        "azevac: warning: watch: cannot read from {} when {what} end: {}",
                        expiring.source,
                        crate::model::text::clean(&super::describe(&e))
                    );
                    continue;
                }
            };
            for zone in ending {
                if !self.holds() || self.interrupt.requested() {
                    return;
                }
                self.decide(
                    "shifts_extended",
                    format!("{what} away from {zone} end {}: extending them", within_words(within)),
                    vec![],
                )
                .await;
                let mut ctx = self.ctx.for_another_run(self.guarded());
                ctx.heading = Some(expiring.renewed_as);
                let renewal = (expiring.renewal)();
                let order = Order {
                    notify: &[],
                    kubeconfig: None,
                    wait: false,
                    wait_timeout: Duration::ZERO,
                    ..self.orders.order(&zone, &renewal)
                };
                self.acting(Some(format!("extending {what} away from {zone}")));
                let extended = ctx.evacuate(self.screen, order).await;
                self.acting(None);
                match extended {
                    Ok(outcome) => self.note_interrupted(&outcome),
                    Err(e) => crate::say!(
                        "azevac: warning: watch: could not extend {what} away from {zone}: {}",
                        crate::model::text::clean(&super::describe(&e))
                    ),
                }
            }
        }
    }
}

/// A kind's renewal window in words: "within the hour" for zonal shifts' one hour.
fn within_words(seconds: i64) -> String {
    match seconds {
        3600 => "within the hour".to_owned(),
        s if s % 3600 == 0 => format!("within {}h", s / 3600),
        s => format!("within {}m", (s + 59) / 60),
    }
}

#[cfg(test)]
mod tests {
    use super::within_words;

    /// Zonal shifts' hour reads as it always did; other windows read in hours or minutes.
    #[test]
    fn a_window_reads_in_words() {
        assert_eq!(within_words(3600), "within the hour");
        assert_eq!(within_words(7200), "within 2h");
        assert_eq!(within_words(90), "within 2m");
    }
}
