//! The request's checks, in one place, whether it came from flags or from a saved plan file.

use crate::model::Request;
use crate::plugins;
use crate::{Error, Result};

/// The longest operator's text azevac stores (`--reason`, in every journal record of the run): far
/// inside DynamoDB's 400 KB an item and 4 MB a transaction of 50 records.
pub const LONGEST_TEXT: usize = 1000;

/// Check a request in one place, whether it came from flags or from a saved plan file (which
/// bypasses every check the flags make): one line that says what is allowed.
pub fn validate(request: &Request) -> Result<()> {
    let known = plugins::types();
    if let Some(unknown) = request.types.iter().find(|t| !known.contains(&t.as_str())) {
        return Err(Error::BadInput(format!(
            "unknown type {unknown:?}; types: {}",
            known.join(", ")
        )));
    }
    crate::app::accounts::validate(&request.fleet, &request.types)?;
    for flags in plugins::flags() {
        (flags.validate)(request)?;
    }
    crate::plugins::wait_within("wait_timeout_seconds", request.wait_timeout_seconds)?;
    // The only operator's text the journal stores; the others (tags, prefix, contexts) filter.
    if let Some(length) = request
        .reason
        .as_ref()
        .map(|r| r.chars().count())
        .filter(|&n| n > LONGEST_TEXT)
    {
        return Err(Error::BadInput(format!(
            "--reason is {length} characters; at most {LONGEST_TEXT} (it is stored in every journal record)"
        )));
    }
    if let Some(bad) = request.tags.iter().find(|t| !t.contains('=') || t.starts_with('=')) {
        return Err(Error::BadInput(format!("tag filter {bad:?} is not KEY=VALUE")));
    }
    if let Some(waves) = &request.waves {
        validate_waves(waves)?;
    }
    Ok(())
}

/// A saved plan's waves, held to what `--waves` and its flags accept: the file may have been edited.
fn validate_waves(waves: &crate::model::WavesRequest) -> Result<()> {
    let bad = |what: String| Error::BadInput(format!("the plan's waves: {what}; make the plan again"));
    waves.steps.parse::<crate::app::waves::Waves>().map_err(bad)?;
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
            let flags_accept = steps.parse::<crate::app::waves::Waves>().is_ok()
                && crate::plugins::wait_within("bake", Some(bake)).is_ok()
                && crate::aws::alarms::parse_name(&alarm).is_ok()
                && crate::model::parse_tag(&tag).is_ok();
            prop_assert_eq!(validate_waves(&waves).is_ok(), flags_accept);
        }
    }
}
