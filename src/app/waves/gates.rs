//! What a recovery in waves is gated on ([`Gates`]: the waves asked for, the bake, the alarms, what
//! to do on an alarm) and how its plan is cut into waves ([`Cut`]): a resource's lines always
//! together, the engine's stages kept across the waves.

use std::time::Duration;

use super::{Mark, Unit, Waves};
use crate::app::{Context, Fanout};
use crate::aws::alarms::{self, Alarms};
use crate::model::OnAlarm;
use crate::model::{Item, Request, Status};
use crate::plugins::Stage;
use crate::{Error, Result};

/// What a recovery in waves is gated on, from the command line.
pub struct Gates {
    pub(super) waves: Waves,
    pub(super) bake: Duration,
    pub(super) alarms: Option<Alarms>,
    pub(super) on_alarm: OnAlarm,
    pub(super) wait_timeout: Duration,
    pub(super) first: Vec<(String, String)>,
    pub(super) last: Vec<(String, String)>,
    pub(super) kubeconfig: Option<std::path::PathBuf>,
}

impl Gates {
    /// The gates of a recovery's request (`None` without `--waves`): `recover`'s flags, or a saved
    /// plan's. Each wave waits for its alarms up to `wait_timeout`.
    pub fn of(
        ctx: &Context,
        request: &Request,
        wait_timeout: Duration,
        kubeconfig: Option<std::path::PathBuf>,
    ) -> Result<Option<Gates>> {
        let Some(asked) = &request.waves else {
            return Ok(None);
        };
        let bad = |why: String| Error::BadInput(format!("the waves: {why}"));
        let tags = |tags: &[String]| -> Result<Vec<(String, String)>> {
            tags.iter()
                .map(|tag| crate::model::parse_tag(tag).map_err(bad))
                .collect()
        };
        Ok(Some(Gates {
            waves: asked.steps.parse().map_err(bad)?,
            bake: Duration::from_secs(asked.bake_seconds),
            alarms: Alarms::new(&ctx.sdk, &asked.alarms, &asked.alarm_prefixes),
            on_alarm: asked.on_alarm,
            wait_timeout,
            first: tags(&asked.first_tags)?,
            last: tags(&asked.last_tags)?,
            kubeconfig,
        }))
    }

    /// Check the alarms before anything is planned or changed: each named one exists, each prefix
    /// names one (else bad input naming where they were given). Says how they stand.
    pub async fn check(&self, names_given: &str, prefixes_given: &str) -> Result<()> {
        let Some(alarms) = &self.alarms else {
            return Ok(());
        };
        let readings = alarms.check_as(names_given, prefixes_given).await?;
        let listed: Vec<String> = readings.iter().map(alarms::describe).collect();
        crate::say!(
            "azevac: waves gated on {} alarm(s): {}",
            readings.len(),
            listed.join(", ")
        );
        Ok(())
    }
}

/// A plan cut into waves: the resources to put back and which lines are each one's.
pub struct Cut {
    pub(super) units: Vec<Unit>,
    pub(super) names: Vec<String>,
    pub(super) lines: Vec<Vec<usize>>,
    pub(super) waves: Vec<Vec<usize>>,
    /// The waves that bring traffic back (after every wave of capacity).
    pub(super) traffic_from: usize,
}

impl Cut {
    /// Cut `fanout`'s planned lines into `gates`' waves, a resource's lines always together: the
    /// first stage's resources join the first wave, the capacity is cut into the waves asked for,
    /// and the last stage's (traffic) into waves of their own after it, cut the same way.
    pub fn of(fanout: &Fanout, gates: &Gates) -> Cut {
        let plan = &fanout.plan;
        let (first, last) = (fanout.in_stage(Stage::First), fanout.in_stage(Stage::Last));
        // A resource's index among the units: a plan of many thousand lines is cut in one pass.
        let mut keys: std::collections::HashMap<(Option<&str>, &str, &str), usize> = Default::default();
        let mut cut = Cut {
            units: Vec::new(),
            names: Vec::new(),
            lines: Vec::new(),
            waves: Vec::new(),
            traffic_from: 0,
        };
        for (i, item) in plan.items.iter().enumerate() {
            if item.status != Status::Planned {
                continue;
            }
            let key = (
                item.account.as_deref(),
                item.resource_type.as_str(),
                item.resource.as_str(),
            );
            if let Some(&at) = keys.get(&key) {
                cut.lines[at].push(i);
                continue;
            }
            keys.insert(key, cut.units.len());
            cut.units.push(unit(item, gates));
            cut.names.push(item.name.clone());
            cut.lines.push(vec![i]);
        }
        let stage_of = |u: usize| {
            let lines = &cut.lines[u];
            if lines.iter().any(|i| last.contains(i)) {
                Stage::Last
            } else if lines.iter().any(|i| first.contains(i)) {
                Stage::First
            } else {
                Stage::Capacity
            }
        };
        let in_stage =
            |stage: Stage| -> Vec<usize> { (0..cut.units.len()).filter(|&u| stage_of(u) == stage).collect() };
        // In the engine's own stage order: the first stage joins the first wave of capacity, the
        // last one (traffic) comes in waves of its own once every wave of capacity is back.
        let mut opening = Vec::new();
        let mut waves: Vec<Vec<usize>> = Vec::new();
        for stage in crate::engine::STAGES {
            let units = in_stage(stage);
            match stage {
                Stage::First => opening = units,
                Stage::Capacity => {
                    waves = cut_into(&cut.units, &units, &gates.waves);
                    let opening = std::mem::take(&mut opening);
                    if !opening.is_empty() {
                        match waves.first_mut() {
                            Some(wave) => {
                                wave.splice(0..0, opening);
                            }
                            None => waves.push(opening),
                        }
                    }
                }
                Stage::Last => {
                    cut.traffic_from = waves.len();
                    waves.extend(cut_into(&cut.units, &units, &gates.waves));
                }
            }
        }
        cut.waves = waves;
        cut
    }

    /// The plan's lines in wave `n`, in plan order.
    pub(super) fn lines_of(&self, n: usize) -> Vec<usize> {
        let mut lines: Vec<usize> = self.waves[n].iter().flat_map(|&u| self.lines[u].clone()).collect();
        lines.sort_unstable();
        lines
    }

    /// `wave N/M` (with `(traffic)` for the waves that bring traffic back).
    pub(super) fn title(&self, n: usize) -> String {
        let traffic = if n >= self.traffic_from { " (traffic)" } else { "" };
        format!("wave {}/{}{traffic}", n + 1, self.waves.len())
    }

    /// One line per wave for the operator: its size, types and first names.
    pub fn say(&self, gates: &Gates) {
        const NAMES: usize = 5;
        for (n, wave) in self.waves.iter().enumerate() {
            let mut names: Vec<String> = wave
                .iter()
                .take(NAMES)
                .map(|&u| crate::model::text::clean(&self.names[u]))
                .collect();
            if wave.len() > NAMES {
                names.push(format!("and {} more", wave.len() - NAMES));
            }
            crate::say!(
                "azevac: {}: {} resource(s) ({}): {}",
                self.title(n),
                wave.len(),
                super::summary(&self.units, wave),
                names.join(", ")
            );
        }
        if !self.waves.is_empty() {
            crate::say!(
                "azevac: each wave settles and bakes {} before the next{}",
                humantime::format_duration(gates.bake),
                match gates.on_alarm {
                    OnAlarm::Stop => "; an alarm in ALARM stops the recovery",
                    OnAlarm::Evacuate =>
                        "; an alarm in ALARM stops the recovery and takes the last wave back out of the zone",
                }
            );
        }
    }
}

/// How the order sees `item`'s resource: its type, account, cluster and the operator's mark.
fn unit(item: &Item, gates: &Gates) -> Unit {
    let tags = item.target.as_ref().map(|t| &t.tags);
    let tagged =
        |wanted: &[(String, String)]| tags.is_some_and(|tags| wanted.iter().any(|(k, v)| tags.get(k) == Some(v)));
    let mark = if tagged(&gates.first) {
        Mark::First
    } else if tagged(&gates.last) {
        Mark::Last
    } else {
        Mark::Middle
    };
    let cluster = crate::plugins::REGISTRY
        .iter()
        .find(|r| r.name == item.resource_type)
        .and_then(|r| (r.cluster)(&item.resource))
        .map(str::to_owned);
    Unit {
        resource_type: item.resource_type.clone(),
        account: item.account.clone(),
        cluster,
        mark,
    }
}

/// `picked` (indices into `units`) cut into `waves`, as indices into `units`.
fn cut_into(units: &[Unit], picked: &[usize], waves: &Waves) -> Vec<Vec<usize>> {
    let some: Vec<Unit> = picked.iter().map(|&u| units[u].clone()).collect();
    super::cut(&some, waves)
        .into_iter()
        .map(|wave| wave.into_iter().map(|i| picked[i]).collect())
        .collect()
}

/// Why a recovery in waves stopped before its last wave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Halt {
    /// An alarm went into ALARM (or was deleted) while a wave baked.
    Alarm(String),
    /// The alarms were not all OK before a wave within `--wait-timeout`.
    Waited(String),
    /// A wave's lines failed: the next wave would build on capacity that is not there.
    Failed(String),
}

impl std::fmt::Display for Halt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Halt::Alarm(why) | Halt::Waited(why) | Halt::Failed(why) => f.write_str(why),
        }
    }
}

/// A saved plan's waves, held to what `--waves` and its flags accept: the file may have been edited.
pub fn validate(waves: &crate::model::WavesRequest) -> Result<()> {
    let bad = |what: String| Error::BadInput(format!("the plan's waves: {what}; make the plan again"));
    waves.steps.parse::<Waves>().map_err(bad)?;
    crate::plugins::wait_within("waves.bake_seconds", Some(waves.bake_seconds))?;
    for name in waves.alarms.iter().chain(&waves.alarm_prefixes) {
        crate::aws::alarms::parse_name(name).map_err(bad)?;
    }
    for tag in waves.first_tags.iter().chain(&waves.last_tags) {
        crate::model::parse_tag(tag).map_err(bad)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{OnAlarm, WavesRequest};
    use proptest::prelude::*;

    proptest! {
        /// Whatever an edited plan's waves hold: judged without a panic, and accepted exactly when
        /// `--waves`, `--bake` and the alarm and tag flags would each have taken their part.
        #[test]
        fn a_plans_waves_are_held_to_what_the_flags_accept(
            steps in prop_oneof![".{0,12}", "[0-9%,]{1,12}"],
            bake in 0u64..700_000,
            alarm in ".{0,4}",
            tag in ".{0,6}",
        ) {
            let waves = WavesRequest {
                steps: steps.clone(),
                bake_seconds: bake,
                alarms: vec![alarm.clone()],
                alarm_prefixes: Vec::new(),
                on_alarm: OnAlarm::Stop,
                first_tags: vec![tag.clone()],
                last_tags: Vec::new(),
            };
            let flags_accept = steps.parse::<Waves>().is_ok()
                && crate::plugins::wait_within("bake", Some(bake)).is_ok()
                && crate::aws::alarms::parse_name(&alarm).is_ok()
                && crate::model::parse_tag(&tag).is_ok();
            prop_assert_eq!(validate(&waves).is_ok(), flags_accept);
        }
    }
}
