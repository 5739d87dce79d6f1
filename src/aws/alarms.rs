//! The CloudWatch alarms a recovery in waves is gated on (`--alarm`, `--alarm-prefix`): read in the
//! operator's own account, where the incident's dashboards and alarms live. Before each wave every
//! one must be OK; while a wave bakes, one in ALARM stops the recovery. A paced evacuation of Auto
//! Scaling groups gates each batch the same way (`--pace-alarm`), read where the groups are. ARC's practice runs gate on
//! blocking and outcome alarms the same way.

use aws_config::SdkConfig;
use aws_sdk_cloudwatch::types::{AlarmType, StateValue};

use crate::{Error, Result};

/// The call, as IAM names it.
const DESCRIBE: &str = "cloudwatch:DescribeAlarms";
/// DescribeAlarms takes at most this many names at once.
const NAMES_PER_CALL: usize = 100;

/// An alarm's name (`--alarm`, `--alarm-prefix`, `--pace-alarm`, and a saved plan's): CloudWatch's
/// are 1 to 255 characters, printable.
pub fn parse_name(text: &str) -> std::result::Result<String, String> {
    if text.is_empty() || text.chars().count() > 255 || text.chars().any(char::is_control) {
        return Err("an alarm name is 1 to 255 printable characters (e.g. --alarm checkout-p99-latency)".into());
    }
    Ok(text.to_owned())
}

/// Where one alarm stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// OK.
    Ok,
    /// ALARM.
    Alarm,
    /// INSUFFICIENT_DATA: not known to be healthy.
    InsufficientData,
    /// Named with `--alarm` and no longer there (deleted during the run).
    Missing,
}

impl State {
    /// As CloudWatch writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            State::Ok => "OK",
            State::Alarm => "ALARM",
            State::InsufficientData => "INSUFFICIENT_DATA",
            State::Missing => "MISSING",
        }
    }
}

/// One alarm as last read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reading {
    /// Its name.
    pub name: String,
    /// Its state.
    pub state: State,
    /// CloudWatch's reason for the state (untrusted text: escape before printing).
    pub reason: String,
}

/// The alarms a recovery is gated on.
#[derive(Debug, Clone)]
pub struct Alarms {
    client: aws_sdk_cloudwatch::Client,
    names: Vec<String>,
    prefixes: Vec<String>,
}

impl Alarms {
    /// The alarms named and the ones whose names start with a prefix; `None` when there are none
    /// (the recovery is gated on bake time alone).
    pub fn new(sdk: &SdkConfig, names: &[String], prefixes: &[String]) -> Option<Alarms> {
        if names.is_empty() && prefixes.is_empty() {
            return None;
        }
        Some(Alarms {
            client: crate::client!(aws_sdk_cloudwatch, sdk),
            names: names.to_vec(),
            prefixes: prefixes.to_vec(),
        })
    }

    /// Read every alarm once and check that each name exists and each prefix names at least one:
    /// a gate on an alarm that is not there would wave everything through. Bad input otherwise.
    pub async fn check(&self) -> Result<Vec<Reading>> {
        self.check_as("--alarm", "--alarm-prefix").await
    }

    /// [`Alarms::check`], its error naming the flags the alarms were given with.
    pub async fn check_as(&self, names_flag: &str, prefixes_flag: &str) -> Result<Vec<Reading>> {
        let readings = self.read().await?;
        let missing: Vec<&str> = readings
            .iter()
            .filter(|r| r.state == State::Missing)
            .map(|r| r.name.as_str())
            .collect();
        if !missing.is_empty() {
            return Err(Error::BadInput(format!(
                "no CloudWatch alarm named {} in this account and region: check {names_flag} (and --region)",
                crate::model::text::clean(&missing.join(", "))
            )));
        }
        for prefix in &self.prefixes {
            if !readings.iter().any(|r| r.name.starts_with(prefix.as_str())) {
                return Err(Error::BadInput(format!(
                    "no CloudWatch alarm's name starts with {}: check {prefixes_flag} (and --region)",
                    crate::model::text::clean(prefix)
                )));
            }
        }
        Ok(readings)
    }

    /// Every alarm's state now (metric and composite alarms alike), each once, by name.
    pub async fn read(&self) -> Result<Vec<Reading>> {
        let mut found: std::collections::BTreeMap<String, Reading> = Default::default();
        for names in self.names.chunks(NAMES_PER_CALL) {
            let request = self.client.describe_alarms().set_alarm_names(Some(names.to_vec()));
            self.collect(request, &mut found).await?;
        }
        for prefix in &self.prefixes {
            let request = self.client.describe_alarms().alarm_name_prefix(prefix);
            self.collect(request, &mut found).await?;
        }
        for name in &self.names {
            found.entry(name.clone()).or_insert_with(|| Reading {
                name: name.clone(),
                state: State::Missing,
                reason: "no such alarm".into(),
            });
        }
        Ok(found.into_values().collect())
    }

    async fn collect(
        &self,
        request: aws_sdk_cloudwatch::operation::describe_alarms::builders::DescribeAlarmsFluentBuilder,
        found: &mut std::collections::BTreeMap<String, Reading>,
    ) -> Result<()> {
        // Without the types, DescribeAlarms leaves composite alarms out.
        let mut pages = request
            .alarm_types(AlarmType::MetricAlarm)
            .alarm_types(AlarmType::CompositeAlarm)
            .into_paginator()
            .send();
        while let Some(page) = pages.next().await {
            let page = page.map_err(|e| Error::from_sdk(DESCRIBE, e))?;
            let metric = page
                .metric_alarms()
                .iter()
                .map(|a| (a.alarm_name(), a.state_value(), a.state_reason()));
            let composite = page
                .composite_alarms()
                .iter()
                .map(|a| (a.alarm_name(), a.state_value(), a.state_reason()));
            for (name, state, reason) in metric.chain(composite) {
                let Some(name) = name else { continue };
                let state = match state {
                    Some(StateValue::Ok) => State::Ok,
                    Some(StateValue::Alarm) => State::Alarm,
                    _ => State::InsufficientData,
                };
                found.insert(
                    name.to_owned(),
                    Reading {
                        name: name.to_owned(),
                        state,
                        reason: reason.unwrap_or_default().to_owned(),
                    },
                );
            }
        }
        Ok(())
    }
}

/// The alarms that hold a wave back: any not OK (INSUFFICIENT_DATA is not known to be healthy).
pub fn holding(readings: &[Reading]) -> Vec<&Reading> {
    readings.iter().filter(|r| r.state != State::Ok).collect()
}

/// The alarms that stop a recovery while a wave bakes: in ALARM, or gone.
pub fn firing(readings: &[Reading]) -> Vec<&Reading> {
    readings
        .iter()
        .filter(|r| matches!(r.state, State::Alarm | State::Missing))
        .collect()
}

/// `name (STATE: reason)`, for the operator, escaped.
pub fn describe(reading: &Reading) -> String {
    let reason = reading.reason.trim();
    if reason.is_empty() {
        format!(
            "{} ({})",
            crate::model::text::clean(&reading.name),
            reading.state.as_str()
        )
    } else {
        format!(
            "{} ({}: {})",
            crate::model::text::clean(&reading.name),
            reading.state.as_str(),
            crate::model::text::clean(reason)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reading(name: &str, state: State) -> Reading {
        Reading {
            name: name.into(),
            state,
            reason: String::new(),
        }
    }

    #[test]
    fn a_wave_waits_for_every_alarm_to_be_ok_and_a_bake_stops_on_alarm_only() {
        let readings = vec![
            reading("ok", State::Ok),
            reading("unknown", State::InsufficientData),
            reading("firing", State::Alarm),
            reading("gone", State::Missing),
        ];
        let names = |r: Vec<&Reading>| r.into_iter().map(|r| r.name.clone()).collect::<Vec<_>>();
        assert_eq!(names(holding(&readings)), ["unknown", "firing", "gone"]);
        assert_eq!(names(firing(&readings)), ["firing", "gone"]);
    }

    #[test]
    fn an_alarm_is_described_with_its_reason_escaped() {
        let mut r = reading("p99\x1b[2J", State::Alarm);
        r.reason = "Threshold Crossed: 1 datapoint [5.0]".into();
        let text = describe(&r);
        assert!(!text.contains('\x1b'), "{text}");
        assert!(
            text.ends_with("(ALARM: Threshold Crossed: 1 datapoint [5.0])"),
            "{text}"
        );
    }
}
