//! Issue 51: the watcher's deployments. Its command line in every template that runs it (the ECS task
//! definition of fixtures/watcher-service.cfn.yaml and of fixtures/watcher-service.tf, and the systemd
//! unit fixtures/azevac-watch.service) parses with azevac's own flags, as the manual's command lines do
//! (tests/it/docs/manual.rs), with every optional flag the template can add and with none; and what each sets
//! around it (stop timeout against the interrupt's grace, health check, health file, the opt-out tag)
//! agrees with the code. scripts/check-iam checks their IAM, cfn-lint and systemd-analyze the rest.

use std::collections::BTreeMap;
use std::path::Path;

use azevac::cli::Command;

fn read(path: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(path)).expect("read the template")
}

/// The watch command `args` (the container's or unit's, without the program) as azevac parses them.
fn parsed(what: &str, args: &[String]) -> azevac::cli::Watch {
    let argv = std::iter::once("azevac".to_owned()).chain(args.iter().cloned());
    match azevac::cli::parse_from(argv) {
        Ok(azevac::cli::Cli {
            command: Command::Watch(watch),
            ..
        }) => watch,
        Ok(other) => panic!("{what}: {args:?} is not a watch command: {:?}", other.command),
        Err(e) => panic!("{what}: azevac refuses {args:?}:\n{e}"),
    }
}

/// The health check command, parsed where this build has it (`azevac health` comes with the health
/// check of issue 51); the command itself is checked as text whatever the build.
fn health_check_parses(what: &str) {
    if azevac::cli::command().find_subcommand("health").is_some() {
        if let Err(e) = azevac::cli::parse_from(["azevac", "health"]) {
            panic!("{what}: azevac refuses its health check `azevac health`:\n{e}");
        }
    }
}

/// A template's command line with no optional flag: the queue and the default types, JSON logs.
fn assert_plain(what: &str, args: &[String]) {
    let plain = parsed(what, args);
    assert_eq!(plain.queue, QUEUE);
    assert_eq!(plain.types, ["asg", "ecs", "lambda"]);
    assert!(plain.waves.waves.is_none() && plain.notify.topics.is_empty() && !plain.follow_practice);
    assert!(
        args.contains(&"--log-format=json".to_owned()),
        "{what}: JSON lines for the logs: {args:?}"
    );
}

/// A template's command line with every optional flag set: every type, waves baking 90 s behind the
/// alarm `api-5xx`, the topic, practice runs followed.
fn assert_every(what: &str, args: &[String]) {
    let every = parsed(what, args);
    assert_eq!(every.types.join(","), EVERY_TYPE);
    assert!(every.waves.waves.is_some(), "{what}: {args:?}");
    assert_eq!(every.waves.bake, std::time::Duration::from_secs(90));
    assert_eq!(every.waves.alarms, ["api-5xx"]);
    assert_eq!(every.notify.topics, [TOPIC]);
    assert!(every.follow_practice);
}

const QUEUE: &str = "https://sqs.us-east-1.amazonaws.com/123456789012/azevac-autoshift";
const TOPIC: &str = "arn:aws:sns:us-east-1:123456789012:azevac-oncall";
const EVERY_TYPE: &str = "asg,ecs,lambda,zonal-shift,nat,db,batch,vpc-endpoint,eventbridge,scheduler";

// ---------------------------------------------------------------------------------------------
// CloudFormation.

/// Each parameter's `Default:` (a parameter without one is absent).
fn cfn_defaults(text: &str) -> BTreeMap<String, String> {
    let section = text
        .split("\nParameters:\n")
        .nth(1)
        .and_then(|rest| rest.split("\nRules:\n").next())
        .expect("Parameters, then Rules");
    let mut defaults = BTreeMap::new();
    let mut name = String::new();
    for line in section.lines() {
        if let Some(n) = line.strip_prefix("  ").and_then(|l| l.strip_suffix(':')) {
            if !n.starts_with(' ') {
                name = n.to_owned();
            }
        } else if let Some(value) = line.trim().strip_prefix("Default: ") {
            defaults.insert(name.clone(), value.trim_matches('"').to_owned());
        }
    }
    defaults
}

/// `!Sub "text"` or a plain word, its `${Parameter}`s replaced.
fn cfn_value(item: &str, parameters: &BTreeMap<String, String>) -> String {
    let mut text = item
        .strip_prefix("!Sub ")
        .unwrap_or(item)
        .trim()
        .trim_matches('"')
        .to_owned();
    for (name, value) in parameters {
        text = text.replace(&format!("${{{name}}}"), value);
    }
    assert!(!text.contains("${"), "{item}: a parameter without a value");
    text
}

/// The container's `Command:` items, resolved for `parameters` as CloudFormation would: `!Sub`
/// replaced, `!If [CONDITION, VALUE, !Ref AWS::NoValue]` kept or dropped by its condition.
fn cfn_command(text: &str, parameters: &BTreeMap<String, String>) -> Vec<String> {
    let condition = |name: &str| match name {
        "HasWaves" => !parameters["Waves"].is_empty(),
        "HasAlarm" => !parameters["Alarm"].is_empty(),
        "HasNotify" => !parameters["Notify"].is_empty(),
        "FollowsPractice" => parameters["FollowPractice"] == "true",
        other => panic!("the command uses a condition this test does not know: {other}"),
    };
    let mut lines = text.lines().skip_while(|l| l.trim() != "Command:");
    let heading = lines.next().expect("a container Command:");
    let depth = heading.len() - heading.trim_start().len();
    let mut args = Vec::new();
    for line in lines.take_while(|l| l.len() - l.trim_start().len() > depth) {
        let item = line.trim().strip_prefix("- ").expect("a list item");
        if let Some(inner) = item.strip_prefix("!If [").and_then(|i| i.strip_suffix(']')) {
            let parts: Vec<&str> = inner.splitn(3, ", ").collect();
            assert_eq!(parts.get(2), Some(&"!Ref AWS::NoValue"), "{item}");
            if condition(parts[0]) {
                args.push(cfn_value(parts[1], parameters));
            }
        } else {
            args.push(cfn_value(item, parameters));
        }
    }
    args
}

#[test]
fn issue_51_the_cloudformation_watchers_command_line_parses_with_azevacs_flags() {
    let text = read("fixtures/watcher-service.cfn.yaml");
    let mut parameters = cfn_defaults(&text);
    parameters.insert("QueueUrl".into(), QUEUE.into());

    assert_plain("watcher-service.cfn.yaml", &cfn_command(&text, &parameters));

    for (name, value) in [
        ("Types", EVERY_TYPE),
        ("Waves", "1,10%,50%"),
        ("Bake", "90s"),
        ("Alarm", "api-5xx"),
        ("Notify", TOPIC),
        ("FollowPractice", "true"),
    ] {
        parameters.insert(name.into(), value.into());
    }
    assert_every("watcher-service.cfn.yaml", &cfn_command(&text, &parameters));

    // Around the command: what the watcher needs from ECS.
    let squeezed = ecs_task(
        "watcher-service.cfn.yaml",
        &text,
        [
            "StopTimeout: ",
            r#"Command: ["CMD", "/azevac", "health"]"#,
            "- Name: AZEVAC_HEALTH_FILE Value: /tmp/azevac-health.json",
            "LogDriver: awslogs",
            "DesiredCount: 2",
        ],
    );
    let tagged = squeezed
        .matches(&format!("Key: {}", azevac::model::plan::SKIP_TAG))
        .count();
    assert_eq!(
        tagged,
        2,
        "the cluster and the service carry {}",
        azevac::model::plan::SKIP_TAG
    );
}

/// What the watcher needs from ECS around its command, as the template `text` writes it: `[stop
/// timeout key, health check, health file, log driver, desired count]`. The stop timeout is above the
/// interrupt's grace and at most Fargate's 120 s. Returns the text on one line, for more checks.
fn ecs_task(what: &str, text: &str, [stop_key, rest @ ..]: [&str; 5]) -> String {
    let squeezed = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let stop = number_after(text, stop_key);
    assert!(
        stop > azevac::process::interrupt::GRACE.as_secs() && stop <= 120,
        "{what}: stop timeout {stop}: above the interrupt's grace, at most Fargate's 120"
    );
    for setting in rest {
        assert!(squeezed.contains(setting), "{what} lacks {setting}");
    }
    health_check_parses(what);
    squeezed
}

/// The first number after `key` in `text`.
fn number_after(text: &str, key: &str) -> u64 {
    text.split(key)
        .nth(1)
        .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no number after {key:?}"))
}

// ---------------------------------------------------------------------------------------------
// Terraform.

/// The `command = compact([...])` items, resolved for `vars` (`types` joined with commas) as Terraform
/// would: `"${var.NAME}"` and `${join(",", var.types)}` interpolated, `CONDITION ? A : B` chosen by
/// the conditions this module writes (`var.X == ""`, a bool `var.X`), empty strings dropped.
fn tf_command(text: &str, vars: &BTreeMap<&str, &str>) -> Vec<String> {
    let block = text
        .split("command = compact([")
        .nth(1)
        .and_then(|rest| rest.split("])").next())
        .expect("local.command = compact([...])");
    let literal = |item: &str| {
        let mut text = item.trim().trim_matches('"').to_owned();
        text = text.replace(r#"${join(",", var.types)}"#, vars["types"]);
        for (name, value) in vars {
            text = text.replace(&format!("${{var.{name}}}"), value);
        }
        assert!(!text.contains("${"), "{item}: an interpolation this test does not know");
        text
    };
    let mut args = Vec::new();
    for item in block
        .lines()
        .map(|l| l.trim().trim_end_matches(','))
        .filter(|l| !l.is_empty())
    {
        let value = match item.split_once(" ? ") {
            Some((condition, branches)) => {
                let (yes, no) = branches.split_once(" : ").expect("A : B");
                let holds = match condition.split_once(" == ") {
                    Some((var, "\"\"")) => vars[var.trim_start_matches("var.")].is_empty(),
                    Some(_) => panic!("{condition}: a comparison this test does not know"),
                    None => vars[condition.trim_start_matches("var.")] == "true",
                };
                literal(if holds { yes } else { no })
            }
            None => literal(item),
        };
        if !value.is_empty() {
            args.push(value);
        }
    }
    args
}

#[test]
fn issue_51_the_terraform_watchers_command_line_parses_with_azevacs_flags() {
    let text = read("fixtures/watcher-service.tf");
    let mut vars = BTreeMap::from([
        ("queue_url", QUEUE),
        ("types", "asg,ecs,lambda"),
        ("waves", ""),
        ("bake", "5m"),
        ("alarm", ""),
        ("notify", ""),
        ("follow_practice", "false"),
    ]);
    assert_plain("watcher-service.tf", &tf_command(&text, &vars));

    vars.extend([
        ("types", EVERY_TYPE),
        ("waves", "1,10%,50%"),
        ("bake", "90s"),
        ("alarm", "api-5xx"),
        ("notify", TOPIC),
        ("follow_practice", "true"),
    ]);
    assert_every("watcher-service.tf", &tf_command(&text, &vars));

    let squeezed = ecs_task(
        "watcher-service.tf",
        &text,
        [
            "stopTimeout = ",
            r#"command = ["CMD", "/azevac", "health"]"#,
            r#"{ name = "AZEVAC_HEALTH_FILE", value = "/tmp/azevac-health.json" }"#,
            r#"logDriver = "awslogs""#,
            "desired_count = 2",
        ],
    );
    assert!(squeezed.contains(&format!(r#"skip_tag = "{}""#, azevac::model::plan::SKIP_TAG)));
    assert_eq!(
        squeezed.matches("tags = { (local.skip_tag) = ").count(),
        2,
        "the cluster and the service"
    );
}

// ---------------------------------------------------------------------------------------------
// systemd.

/// `ExecStart=`'s arguments after the program, expanded as systemd expands them: `${VAR}` is one
/// word, `$VAR` is split at whitespace into words (none when empty). `env`: the unit's
/// `Environment=` lines, then the environment file's.
fn unit_command(text: &str, env: &BTreeMap<String, String>) -> Vec<String> {
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix("ExecStart="))
        .expect("ExecStart=");
    let mut words = line.split_whitespace();
    assert_eq!(words.next(), Some("/usr/local/bin/azevac"));
    let mut args = Vec::new();
    for word in words {
        if let Some(name) = word.strip_prefix('$').filter(|n| !n.starts_with('{')) {
            args.extend(env[name].split_whitespace().map(str::to_owned));
            continue;
        }
        let mut expanded = word.to_owned();
        for (name, value) in env {
            expanded = expanded.replace(&format!("${{{name}}}"), value);
        }
        assert!(
            !expanded.contains('$'),
            "{word}: a variable the unit and its file do not set"
        );
        args.push(expanded);
    }
    args
}

#[test]
fn issue_51_the_systemd_units_command_line_parses_with_azevacs_flags() {
    let text = read("fixtures/azevac-watch.service");
    let unit_env: BTreeMap<String, String> = text
        .lines()
        .filter_map(|l| l.strip_prefix("Environment="))
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
    // The environment file the unit's comment shows, as an operator writes it.
    let file: BTreeMap<String, String> = text
        .lines()
        .filter_map(|l| l.strip_prefix("#   "))
        .filter_map(|kv| kv.split_once('='))
        .filter(|(k, _)| k.chars().all(|c| c.is_ascii_uppercase() || c == '_'))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
    assert!(
        file.contains_key("AZEVAC_QUEUE"),
        "the comment shows the environment file: {file:?}"
    );

    // With the unit's defaults and the queue alone.
    let mut env = unit_env.clone();
    env.insert("AZEVAC_QUEUE".into(), QUEUE.into());
    assert_plain("azevac-watch.service", &unit_command(&text, &env));

    // With the file the comment shows.
    let mut env = unit_env;
    env.extend(file);
    let every = parsed("azevac-watch.service", &unit_command(&text, &env));
    assert!(every.waves.waves.is_some());
    assert_eq!(every.waves.alarms, ["api-5xx"]);
    assert_eq!(every.notify.topics, [TOPIC]);

    let setting = |key: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{key}=")))
            .unwrap_or_else(|| panic!("the unit sets no {key}"))
            .to_owned()
    };
    assert_eq!(setting("Type"), "notify");
    assert_eq!(setting("Restart"), "always");
    assert_eq!(setting("KillSignal"), "SIGTERM");
    let stop: u64 = setting("TimeoutStopSec").parse().expect("seconds");
    assert!(
        stop > azevac::process::interrupt::GRACE.as_secs(),
        "TimeoutStopSec {stop}"
    );
    // Above the longest turn without a run: one AWS call's operation timeout (3m) and a long poll.
    let watchdog: u64 = setting("WatchdogSec").parse().expect("seconds");
    assert!(watchdog >= 180 + 20, "WatchdogSec {watchdog}");
    assert!(text.contains("Environment=AZEVAC_HEALTH_FILE="));
    health_check_parses("azevac-watch.service");
}
