//! The watcher's health, for the platform that runs it: `azevac watch --health-file` writes how it
//! stands (a small JSON object, replaced atomically) at start, on every turn of its loop and on
//! every change; `azevac health` reads it, with no AWS call, for a container health check; and under
//! systemd (`NOTIFY_SOCKET`) the watcher says `READY=1` once started and `WATCHDOG=1` on each
//! healthy beat only, so that `WatchdogSec=` restarts a watcher that is stuck or unhealthy.
//!
//! What the states mean is decided by the watcher ([`crate::app::watch`]): its queue cannot be
//! read (a receive failed, after the SDK's retries), or it cannot hold or bid for its lease (a
//! renewal or claim failed, or the lease ran out under it). A standby whose look at the lease
//! answers is healthy: it is ready to take over. A watcher whose beats stop is "stalled", whatever
//! its file last said.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

/// The environment variable both `azevac watch` and `azevac health` read the file's path from.
pub const HEALTH_FILE_ENV: &str = "AZEVAC_HEALTH_FILE";

/// How a watcher stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum State {
    /// Checking its queue, journal and plan before its loop starts, then claiming its lease.
    Starting,
    /// Its loop turns: it holds the lease and reads its queue (or evacuates, or recovers), or
    /// stands by while another watcher holds the lease.
    Healthy,
    /// Its last receive from the queue failed (after the SDK's retries); it tries again.
    QueueUnreadable,
    /// It cannot hold or claim its lease: a renewal failed until the lease ran out under it, or a
    /// claim failed; it tries again.
    LeaseLost,
    /// It has stopped (a signal, or an error at start).
    Stopped,
}

impl State {
    /// Every state, in the order the manual lists them.
    pub const ALL: [State; 5] = [
        State::Starting,
        State::Healthy,
        State::QueueUnreadable,
        State::LeaseLost,
        State::Stopped,
    ];

    /// Its name, as the file and every line spell it.
    pub fn name(self) -> &'static str {
        match self {
            State::Starting => "starting",
            State::Healthy => "healthy",
            State::QueueUnreadable => "queue-unreadable",
            State::LeaseLost => "lease-lost",
            State::Stopped => "stopped",
        }
    }

    /// Whether a health check passes in this state (while the watcher beats).
    pub fn passes(self) -> bool {
        matches!(self, State::Starting | State::Healthy)
    }

    /// What the operator does about it (nothing, when it passes).
    pub fn remedy(self) -> &'static str {
        match self {
            State::Starting | State::Healthy => "",
            State::QueueUnreadable => {
                "check that the queue exists and that the watcher's role may sqs:ReceiveMessage (its policy, \
                 the queue's, the key's; azevac doctor); the watcher keeps trying"
            }
            State::LeaseLost => {
                "check the journal table and that the watcher's role may dynamodb:GetItem and PutItem on it \
                 (azevac doctor); azevac status shows who holds the lease; the watcher keeps trying"
            }
            State::Stopped => "start azevac watch again",
        }
    }
}

/// What to do about a watcher whose beats stopped.
const STALLED_REMEDY: &str = "its loop is stuck or its process stopped: restart it";

/// The file's content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Health {
    /// How the watcher stands.
    pub state: State,
    /// Since when it stands so (RFC 3339).
    #[serde(with = "rfc3339")]
    pub since: SystemTime,
    /// When it last beat: a turn of its loop, a message judged, or a renewal of its lease while it
    /// evacuates or recovers (RFC 3339).
    #[serde(with = "rfc3339")]
    pub beat_at: SystemTime,
    /// Why, in one line.
    pub detail: String,
    /// The watcher's run ID (its lease's holder, in `azevac status`).
    pub run_id: String,
    /// Its process ID.
    pub pid: u32,
    /// The region it watches.
    pub region: String,
    /// The longest the watcher goes between beats while it is well, in seconds: one AWS call at
    /// its longest (`--operation-timeout`), the longest wait of its loop (a third of `--lease`, or
    /// `--poll-wait`), and half a minute. `azevac health` calls it stalled past this.
    pub stall_after_seconds: u64,
}

/// RFC 3339 times, to the second, in UTC.
mod rfc3339 {
    use std::time::SystemTime;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(at: &SystemTime, to: S) -> Result<S::Ok, S::Error> {
        to.serialize_str(&humantime::format_rfc3339_seconds(*at).to_string())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(from: D) -> Result<SystemTime, D::Error> {
        let text = String::deserialize(from)?;
        humantime::parse_rfc3339(&text).map_err(serde::de::Error::custom)
    }
}

impl Health {
    /// The file's text: one JSON object, and a newline.
    pub fn to_text(&self) -> String {
        let mut text = serde_json::to_string(self).unwrap_or_default();
        text.push('\n');
        text
    }

    /// Read a file's text: `Err` says, in one line, what is wrong with it.
    pub fn parse(text: &str) -> Result<Health, String> {
        // serde's message may quote the text: escaped, so that it stays one line.
        serde_json::from_str(text).map_err(|e| {
            format!(
                "not a health file of azevac watch ({})",
                crate::model::text::clean(&e.to_string())
            )
        })
    }

    /// Whether a health check passes at `now`, with the stall bound `stall_after`, and the one
    /// line that says why (escaped: the file's text is not trusted).
    pub fn judge(&self, now: SystemTime, stall_after: Duration) -> (bool, String) {
        let at = |t: SystemTime| humantime::format_rfc3339_seconds(t).to_string();
        let watcher = format!("watcher {}, pid {}, {}", self.run_id, self.pid, self.region);
        let silent = now.duration_since(self.beat_at).unwrap_or_default();
        let (passes, line) = if self.state != State::Stopped && silent > stall_after {
            (
                false,
                format!(
                    "stalled: no beat since {} (over {}; {} since {}: {}; {watcher}): {STALLED_REMEDY}",
                    at(self.beat_at),
                    humantime::format_duration(stall_after),
                    self.state.name(),
                    at(self.since),
                    self.detail
                ),
            )
        } else if self.state.passes() {
            (
                true,
                format!(
                    "{} since {}: {} ({watcher}; last beat {})",
                    self.state.name(),
                    at(self.since),
                    self.detail,
                    at(self.beat_at)
                ),
            )
        } else {
            (
                false,
                format!(
                    "{} since {}: {} ({watcher}): {}",
                    self.state.name(),
                    at(self.since),
                    self.detail,
                    self.state.remedy()
                ),
            )
        };
        (passes, crate::model::text::clean(&format!("azevac: health: {line}")))
    }
}

/// Read the health file at `path`: `Err` says, in one line, what is wrong and what to do.
pub fn read(path: &Path) -> Result<Health, String> {
    let shown = crate::model::text::clean(&path.display().to_string());
    let text = std::fs::read_to_string(path).map_err(|e| {
        format!(
            "cannot read the health file {shown}: {e}; is azevac watch running with --health-file {shown} (or \
             {HEALTH_FILE_ENV})?"
        )
    })?;
    Health::parse(&text)
        .map_err(|e| format!("the health file {shown} is {e}; point --health-file at the file azevac watch writes"))
}

/// Write `text` to `path` atomically: a temporary file beside it, then renamed over it, so that a
/// reader sees the old content or the new, never a part.
pub fn write_atomically(path: &Path, text: &str) -> std::io::Result<()> {
    let name = path
        .file_name()
        .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::InvalidInput, "the path names no file"))?;
    let mut temporary = name.to_owned();
    temporary.push(format!(".{}.tmp", std::process::id()));
    let temporary = path.with_file_name(temporary);
    // Never through what is already there (in a shared /tmp, a link someone else put in its
    // place): one left by a crash of this PID is removed (`remove_file` takes the link itself, not
    // what it points to), and the file is created anew or not at all.
    let create = || {
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temporary)
    };
    let created = match create() {
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            std::fs::remove_file(&temporary).and_then(|()| create())
        }
        other => other,
    };
    let written = created.and_then(|mut file| file.write_all(text.as_bytes()));
    match written.and_then(|()| std::fs::rename(&temporary, path)) {
        Ok(()) => Ok(()),
        Err(e) => {
            let _ = std::fs::remove_file(&temporary);
            Err(e)
        }
    }
}

/// The watcher's side: keeps its [`Health`], writes it to the file (when given) and tells systemd
/// (when `NOTIFY_SOCKET` is set). Shared by the watcher's loop and its lease's heartbeat.
pub struct Beacon {
    path: Option<PathBuf>,
    inner: Mutex<Inner>,
}

struct Inner {
    health: Health,
    /// `READY=1` was sent: from then on, healthy beats send `WATCHDOG=1`.
    ready: bool,
    /// The last write's error, said once until a write succeeds again.
    failing: Option<String>,
}

/// The watcher's lease tells its health: a renewal while a run is in flight is a beat, and a lease
/// lost is said at once (once).
impl crate::journal::Pulse for Beacon {
    fn beat(&self) {
        Beacon::beat(self);
    }

    fn lost(&self, why: &str) {
        if self.state() != State::LeaseLost {
            self.set(State::LeaseLost, why);
        }
    }
}

impl Beacon {
    /// A watcher starting: its file written now (`starting`). `Err`: the file cannot be written
    /// (said in one line).
    pub fn start(path: Option<PathBuf>, run_id: &str, region: &str, stall_after: Duration) -> Result<Beacon, String> {
        let now = SystemTime::now();
        let beacon = Beacon {
            path,
            inner: Mutex::new(Inner {
                health: Health {
                    state: State::Starting,
                    since: now,
                    beat_at: now,
                    detail: "checking the queue, the journal and the plan".to_owned(),
                    run_id: run_id.to_owned(),
                    pid: std::process::id(),
                    region: region.to_owned(),
                    stall_after_seconds: stall_after.as_secs(),
                },
                ready: false,
                failing: None,
            }),
        };
        if let Some(path) = &beacon.path {
            let text = beacon.lock().health.to_text();
            write_atomically(path, &text).map_err(|e| {
                format!(
                    "cannot write the health file {}: {e}; give --health-file a path in a folder the watcher may write",
                    crate::model::text::clean(&path.display().to_string())
                )
            })?;
        }
        notify(&[sd_notify::NotifyState::Status(&status(&beacon.lock().health))]);
        Ok(beacon)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// How the watcher stands now.
    pub fn state(&self) -> State {
        self.lock().health.state
    }

    /// The watcher's checks at start passed and its loop starts: `READY=1`, then a beat. It is
    /// still `starting` until its first claim of the lease (or, with `--dry-run`, its first
    /// receive) answers.
    pub fn ready(&self, detail: &str) {
        let status = {
            let mut inner = self.lock();
            inner.ready = true;
            inner.health.detail = detail.to_owned();
            status(&inner.health)
        };
        notify(&[sd_notify::NotifyState::Ready, sd_notify::NotifyState::Status(&status)]);
        self.beat();
    }

    /// The watcher stands so now, for this reason: written (with `since` moved when the state
    /// changed), and a beat.
    pub fn set(&self, state: State, detail: &str) {
        let changed = {
            let mut inner = self.lock();
            let health = &mut inner.health;
            let changed = health.state != state || health.detail != detail;
            if health.state != state {
                health.since = SystemTime::now();
                health.state = state;
            }
            health.detail = detail.to_owned();
            changed
        };
        self.write(changed);
    }

    /// The watcher's loop turned (or a message was judged, or the lease renewed while it acts).
    pub fn beat(&self) {
        self.write(false);
    }

    /// The watcher stopped: `stopped`, and `STOPPING=1`.
    pub fn stopped(&self, detail: &str) {
        let status = {
            let mut inner = self.lock();
            inner.ready = false;
            inner.health.state = State::Stopped;
            inner.health.since = SystemTime::now();
            inner.health.detail = detail.to_owned();
            status(&inner.health)
        };
        notify(&[
            sd_notify::NotifyState::Stopping,
            sd_notify::NotifyState::Status(&status),
        ]);
        self.write(false);
    }

    /// Write the file with `beat_at` now; `WATCHDOG=1` when healthy and ready, `STATUS=` when
    /// `changed`.
    fn write(&self, changed: bool) {
        let mut inner = self.lock();
        inner.health.beat_at = SystemTime::now();
        if let Some(path) = &self.path {
            match write_atomically(path, &inner.health.to_text()) {
                Ok(()) => inner.failing = None,
                Err(e) => {
                    let error = e.to_string();
                    if inner.failing.as_deref() != Some(&error) {
                        crate::say!(
                            "azevac: warning: watch: cannot write the health file {}: {}",
                            crate::model::text::clean(&path.display().to_string()),
                            crate::model::text::clean(&error)
                        );
                        inner.failing = Some(error);
                    }
                }
            }
        }
        let watchdog = inner.ready && inner.health.state.passes();
        let status = status(&inner.health);
        drop(inner);
        let mut states = Vec::new();
        if watchdog {
            states.push(sd_notify::NotifyState::Watchdog);
        }
        if changed {
            states.push(sd_notify::NotifyState::Status(&status));
        }
        if !states.is_empty() {
            notify(&states);
        }
    }
}

/// The one-line `STATUS=` systemd shows (`systemctl status`).
fn status(health: &Health) -> String {
    crate::model::text::clean(&format!("{}: {}", health.state.name(), health.detail))
}

/// Tell systemd, when it listens (`NOTIFY_SOCKET`); a failure to is not the watcher's to stop for.
fn notify(states: &[sd_notify::NotifyState<'_>]) {
    if let Err(error) = sd_notify::notify(states) {
        tracing::debug!(%error, "cannot notify the service manager");
    }
}

/// The watchdog interval systemd asked for (`WATCHDOG_USEC`, for this process), if any.
pub fn watchdog() -> Option<Duration> {
    sd_notify::watchdog_enabled()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(state: State) -> Health {
        let at = SystemTime::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        Health {
            state,
            since: at,
            beat_at: at,
            detail: "holds the lease; reads its queue".into(),
            run_id: "run-1".into(),
            pid: 42,
            region: "us-east-1".into(),
            stall_after_seconds: 250,
        }
    }

    #[test]
    fn a_healthy_watcher_passes_until_its_beats_stop() {
        let health = sample(State::Healthy);
        let (passes, line) = health.judge(health.beat_at + Duration::from_secs(10), Duration::from_secs(60));
        assert!(passes, "{line}");
        assert!(
            line.starts_with("azevac: health: healthy since 2027-01-15T08:00:00Z"),
            "{line}"
        );
        let (passes, line) = health.judge(health.beat_at + Duration::from_secs(61), Duration::from_secs(60));
        assert!(!passes);
        assert!(line.starts_with("azevac: health: stalled: no beat since"), "{line}");
        assert!(line.contains("restart it"), "{line}");
    }

    #[test]
    fn each_unhealthy_state_says_what_to_do_and_a_stopped_one_is_never_stalled() {
        for state in State::ALL {
            let health = sample(state);
            let (passes, line) = health.judge(health.beat_at, Duration::from_secs(60));
            assert_eq!(passes, state.passes(), "{line}");
            assert!(line.contains(state.name()), "{line}");
            assert_eq!(state.remedy().is_empty(), passes, "{state:?}");
        }
        let stopped = sample(State::Stopped);
        let (_, line) = stopped.judge(stopped.beat_at + Duration::from_secs(3600), Duration::from_secs(60));
        assert!(line.contains("stopped since"), "{line}");
    }

    #[test]
    fn the_files_text_is_escaped_on_its_way_to_the_line() {
        let mut health = sample(State::QueueUnreadable);
        health.detail = "boom\n\u{1b}[2Jforged line".into();
        let (_, line) = health.judge(health.beat_at, Duration::from_secs(60));
        assert_eq!(line.lines().count(), 1, "{line}");
        assert!(!line.contains('\u{1b}'), "{line}");
        assert!(line.contains("\\n"), "{line}");
    }

    #[test]
    fn the_file_is_written_whole_and_read_back() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("health.json");
        let health = sample(State::LeaseLost);
        write_atomically(&path, &health.to_text()).expect("write");
        assert_eq!(read(&path), Ok(health));
        assert_eq!(
            std::fs::read_dir(dir.path()).expect("dir").count(),
            1,
            "no temporary file left"
        );
        std::fs::write(&path, "{\"state\": \"healthy\"").expect("write");
        let error = read(&path).expect_err("a part of a file");
        assert!(error.contains("not a health file of azevac watch"), "{error}");
        let missing = read(&dir.path().join("nope")).expect_err("no file");
        assert!(missing.contains("cannot read the health file"), "{missing}");
    }
}
