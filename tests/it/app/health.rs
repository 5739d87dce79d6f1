//! The watcher's health (issue 51): `azevac watch --health-file` against moto behind the proxy, and
//! `azevac health` reading the file as a container's health check would: one test per state
//! (healthy, a standby too; queue unreadable; lease lost; stalled; stopped), systemd's messages on
//! a real datagram socket, and the check's bad input.

use crate::common;

use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::process::Child;
use std::sync::mpsc::Receiver;
use std::time::Duration;

use common::proxy::{FailRule, Fault, Faults, Hold, Proxy};
use common::{azevac_at, Run};

use crate::app::watch::{eventually, first_look_done, said, terminate, watch_args_leased, watched_estate};
use crate::app::waves::spawn_with;

/// `watch ARGS --health-file FILE`, with `env` on top; its stderr's lines.
fn spawn_watcher(proxy: &Proxy, args: &[&str], file: &Path, env: &[(&str, Option<&str>)]) -> (Child, Receiver<String>) {
    let mut args = args.to_vec();
    args.extend(["--health-file", file.to_str().expect("a path in UTF-8")]);
    spawn_with(&proxy.endpoint, &args, env)
}

/// A watched estate, and a folder for health files.
struct Scene {
    _moto: common::Moto,
    proxy: Proxy,
    url: String,
    dir: tempfile::TempDir,
}

impl Scene {
    async fn new() -> Scene {
        let (_moto, proxy, _sdk, _before, url) = watched_estate().await;
        let dir = tempfile::tempdir().expect("dir");
        Scene { _moto, proxy, url, dir }
    }

    fn file(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// A watcher with this lease and `env`, writing `file`, once it holds the lease.
    fn watcher(&self, lease: &str, file: &Path, env: &[(&str, Option<&str>)]) -> (Child, Receiver<String>) {
        let (watcher, lines) = spawn_watcher(&self.proxy, &watch_args_leased(&self.url, lease, &[]), file, env);
        said(&lines, "holds the lease");
        (watcher, lines)
    }

    /// The proxy refuses these calls (access denied) from now on.
    fn refuse(&self, label: &str, body_contains: &str) {
        self.proxy.fail_too(
            vec![FailRule {
                label: label.into(),
                body_contains: body_contains.into(),
                fault: Fault::AccessDenied,
            }],
            Duration::ZERO,
        );
    }
}

/// SIGTERM, and the watcher stops cleanly.
fn stop(mut watcher: Child) {
    terminate(&watcher);
    assert_eq!(watcher.wait().expect("wait").code(), Some(0));
}

/// `azevac health --health-file FILE EXTRA` (no AWS call is needed: the endpoint is the proxy's
/// only so that one would show in its log).
fn health(proxy: &Proxy, file: &Path, extra: &[&str]) -> Run {
    let mut args = vec!["health", "--health-file", file.to_str().expect("a path in UTF-8")];
    args.extend_from_slice(extra);
    azevac_at(&proxy.endpoint, &args, &[])
}

/// Wait until `azevac health` exits `code` with a line that contains `text`; that run.
async fn health_until(proxy: &Proxy, file: &Path, extra: &[&str], code: i32, text: &str) -> Run {
    let mut last = None;
    eventually(&format!("azevac health exits {code} saying {text:?}"), || {
        let run = health(proxy, file, extra);
        let hit = run.code == code && run.stdout.contains(text);
        last = Some(run);
        async move { hit }
    })
    .await;
    let run = last.expect("a run");
    assert_eq!(run.stdout.lines().count(), 1, "one line: {}", run.stdout);
    assert!(run.stderr.is_empty(), "{}", run.stderr);
    run
}

fn signal(child: &Child, which: &str) {
    let sent = std::process::Command::new("kill")
        .args([which, &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(sent.success());
}

#[tokio::test]
async fn issue_51_a_watcher_holding_the_lease_and_one_standing_by_are_healthy_and_a_stopped_one_is_not() {
    let scene = Scene::new().await;
    let proxy = &scene.proxy;
    let (first_file, second_file) = (scene.file("first.json"), scene.file("second.json"));
    let (first, _) = scene.watcher("10s", &first_file, &[]);
    first_look_done(proxy).await;
    let run = health_until(proxy, &first_file, &[], 0, "holds the lease; reads its queue").await;
    assert!(run.stdout.contains("healthy since"), "{}", run.stdout);
    assert!(
        !proxy.calls().iter().any(|c| c.contains("health")),
        "no AWS call of its own"
    );

    // The path from the environment, as the task definition gives it; the file's fields in JSON.
    let file = first_file.to_str().expect("utf-8");
    let by_env = azevac_at(&proxy.endpoint, &["health"], &[("AZEVAC_HEALTH_FILE", Some(file))]).expect_code(0);
    assert!(by_env.stdout.contains("healthy since"), "{}", by_env.stdout);
    let json = azevac_at(&proxy.endpoint, &["health", "--health-file", file, "-o", "json"], &[])
        .expect_code(0)
        .json();
    assert_eq!(json["healthy"], true, "{json:#}");
    assert_eq!(json["health"]["state"], "healthy", "{json:#}");
    assert_eq!(json["health"]["pid"], first.id(), "{json:#}");
    let run_id = json["health"]["run_id"].as_str().expect("run_id").to_owned();
    // The watcher's own bound: --operation-timeout (3m), its longest wait (a third of --lease, 10s;
    // --poll-wait, 1s; the pause after a failed receive, 5s), and 30s.
    assert_eq!(json["health"]["stall_after_seconds"], 215, "{json:#}");

    // A second watcher stands by, ready to take over: healthy too, naming the holder.
    let (second, second_lines) = spawn_watcher(proxy, &watch_args_leased(&scene.url, "10s", &[]), &second_file, &[]);
    said(&second_lines, "standing by: watcher");
    let standby = health_until(proxy, &second_file, &[], 0, "standing by: watcher").await;
    assert!(standby.stdout.contains(&run_id), "{}", standby.stdout);

    // Stopped: not healthy, and the line says what to do.
    stop(first);
    stop(second);
    let stopped = health(proxy, &first_file, &[]).expect_code(1);
    assert!(stopped.stdout.contains("stopped since"), "{}", stopped.stdout);
    assert!(
        stopped.stdout.contains("start azevac watch again"),
        "{}",
        stopped.stdout
    );
}

/// A watcher with this lease whose `label` calls (with `body` in them) the proxy refuses: `azevac
/// health` exits 1 naming `state`, the AWS error and `what_to_do`, then 0 again once the calls go
/// through; the watcher's lines until then.
async fn unhealthy_while_refused(lease: &str, label: &str, body: &str, state: &str, what_to_do: &str) -> Vec<String> {
    let scene = Scene::new().await;
    let (proxy, file) = (&scene.proxy, scene.file("health.json"));
    let (watcher, lines) = scene.watcher(lease, &file, &[]);
    health_until(proxy, &file, &[], 0, "holds the lease; reads its queue").await;

    scene.refuse(label, body);
    let run = health_until(proxy, &file, &[], 1, &format!("{state} since")).await;
    assert!(run.stdout.contains("AccessDenied"), "why: {}", run.stdout);
    assert!(run.stdout.contains(what_to_do), "what to do: {}", run.stdout);

    proxy.set(Faults::default());
    health_until(proxy, &file, &[], 0, "holds the lease; reads its queue").await;
    stop(watcher);
    // Every line, up to its end (the process has exited: its stderr closes).
    lines.iter().collect()
}

#[tokio::test]
async fn issue_51_a_watcher_that_cannot_read_its_queue_is_unhealthy_until_it_can() {
    let said = unhealthy_while_refused(
        "10s",
        "sqs:ReceiveMessage",
        "",
        "queue-unreadable",
        "sqs:ReceiveMessage",
    )
    .await;
    assert!(said.iter().any(|l| l.contains("cannot read the queue")), "{said:?}");
}

#[tokio::test]
async fn issue_51_a_watcher_whose_lease_renewals_are_refused_is_lease_lost_until_it_holds_it_again() {
    // The journal refuses the lease's writes: its renewals (and its claims, once the loop sees it lost).
    let said = unhealthy_while_refused(
        "3s",
        "dynamodb:PutItem",
        azevac::journal::WATCHER_PARTITION,
        "lease-lost",
        "dynamodb:GetItem and PutItem",
    )
    .await;
    assert!(
        said.iter().any(|l| l.contains("cannot renew the watcher's lease")),
        "{said:?}"
    );
}

#[tokio::test]
async fn issue_51_a_watcher_whose_loop_stops_turning_is_stalled() {
    let scene = Scene::new().await;
    let (proxy, file) = (&scene.proxy, scene.file("health.json"));
    let (watcher, _) = scene.watcher("10s", &file, &[]);
    health_until(proxy, &file, &["--stall-after", "1s"], 0, "healthy since").await;

    // The process stops (as a hung loop would look from outside): its file still says healthy,
    // but its beats stop.
    signal(&watcher, "-STOP");
    let run = health_until(proxy, &file, &["--stall-after", "1s"], 1, "stalled: no beat since").await;
    signal(&watcher, "-CONT");
    assert!(
        run.stdout.contains("healthy since"),
        "the state it last wrote: {}",
        run.stdout
    );
    assert!(run.stdout.contains("restart it"), "what to do: {}", run.stdout);

    health_until(proxy, &file, &[], 0, "healthy since").await;
    stop(watcher);
}

/// The datagrams on `socket` until one contains `text` (each as its lines); every one read.
fn notified_until(socket: &UnixDatagram, text: &str) -> Vec<Vec<String>> {
    let mut seen = Vec::new();
    let mut buffer = [0u8; 4096];
    loop {
        let n = socket
            .recv(&mut buffer)
            .unwrap_or_else(|e| panic!("no datagram with {text:?} ({e}); saw {seen:?}"));
        let lines: Vec<String> = String::from_utf8_lossy(&buffer[..n])
            .lines()
            .map(str::to_owned)
            .collect();
        let hit = lines.iter().any(|l| l.contains(text));
        seen.push(lines);
        if hit {
            return seen;
        }
    }
}

fn says(datagram: &[String], line: &str) -> bool {
    datagram.iter().any(|l| l == line)
}

#[tokio::test]
async fn issue_51_systemd_hears_ready_then_watchdog_beats_only_while_the_watcher_is_healthy() {
    let scene = Scene::new().await;
    let (proxy, file) = (&scene.proxy, scene.file("health.json"));
    let path = scene.file("notify.sock");
    let socket = UnixDatagram::bind(&path).expect("bind");
    socket.set_read_timeout(Some(Duration::from_secs(60))).expect("timeout");
    let env = [
        ("NOTIFY_SOCKET", Some(path.to_str().expect("utf-8"))),
        // WatchdogSec=1s, well under the watcher's own bound: it says so at start.
        ("WATCHDOG_USEC", Some("1000000")),
    ];
    let (mut watcher, lines) = spawn_watcher(proxy, &watch_args_leased(&scene.url, "10s", &[]), &file, &env);
    let start = said(&lines, "holds the lease");
    assert!(start.contains("WatchdogSec (1s) is not above"), "{start}");

    let first = notified_until(&socket, "WATCHDOG=1");
    let ready = first.iter().position(|d| says(d, "READY=1")).expect("READY=1");
    let beat = first.iter().position(|d| says(d, "WATCHDOG=1")).expect("WATCHDOG=1");
    assert!(ready <= beat, "READY=1 before the first beat: {first:?}");
    assert!(
        first[..ready].iter().all(|d| !says(d, "WATCHDOG=1")),
        "no beat before READY=1: {first:?}"
    );
    assert!(
        first.iter().flatten().any(|l| l.starts_with("STATUS=starting: ")),
        "{first:?}"
    );
    notified_until(&socket, "STATUS=healthy: holds the lease");

    // The queue cannot be read: the status says so, and no beat comes while it lasts (two turns).
    scene.refuse("sqs:ReceiveMessage", "");
    notified_until(&socket, "STATUS=queue-unreadable: cannot read the queue");
    let receives = || proxy.calls().iter().filter(|c| *c == "sqs:ReceiveMessage").count();
    let failed_so_far = receives();
    eventually("two more receives failed", || {
        let n = receives();
        async move { n >= failed_so_far + 2 }
    })
    .await;
    proxy.set(Faults::default());
    let unhealthy = notified_until(&socket, "STATUS=healthy: ");
    let last = unhealthy.len() - 1;
    assert!(
        unhealthy[..last].iter().all(|d| !says(d, "WATCHDOG=1")),
        "no beat while the queue was unreadable: {unhealthy:?}"
    );
    assert!(says(&unhealthy[last], "WATCHDOG=1"), "healthy again: {unhealthy:?}");

    terminate(&watcher);
    let end = notified_until(&socket, "STOPPING=1");
    assert!(
        end.last()
            .is_some_and(|d| d.iter().any(|l| l.starts_with("STATUS=stopped"))),
        "{end:?}"
    );
    assert_eq!(watcher.wait().expect("wait").code(), Some(0));
}

#[test]
fn issue_51_health_without_a_readable_file_is_bad_input_in_one_line() {
    let dir = tempfile::tempdir().expect("dir");
    let endpoint = "http://127.0.0.1:9";
    let one_line = |run: &Run, text: &str| {
        assert_eq!(run.code, 2, "{}{}", run.stdout, run.stderr);
        assert_eq!(run.stderr.trim().lines().count(), 1, "{}", run.stderr);
        assert!(run.stderr.contains(text), "{}", run.stderr);
    };
    one_line(
        &azevac_at(endpoint, &["health"], &[]),
        "give --health-file PATH (or AZEVAC_HEALTH_FILE)",
    );
    let missing = dir.path().join("missing.json");
    let missing = missing.to_str().expect("utf-8");
    one_line(
        &azevac_at(endpoint, &["health", "--health-file", missing], &[]),
        "cannot read the health file",
    );
    for garbage in [
        "",
        "not json",
        "{\"state\":\"healthy\"}",
        "{\"state\":\"fine\",\"since\":1}",
    ] {
        let file = dir.path().join("garbage.json");
        std::fs::write(&file, garbage).expect("write");
        let run = azevac_at(
            endpoint,
            &["health", "--health-file", file.to_str().expect("utf-8")],
            &[],
        );
        one_line(&run, "not a health file of azevac watch");
    }
    let zero = azevac_at(
        endpoint,
        &["health", "--health-file", missing, "--stall-after", "0s"],
        &[],
    );
    assert_eq!(zero.code, 2, "{}", zero.stderr);
    assert!(
        zero.stderr.contains("a watcher stalls after 1s to 1 day"),
        "{}",
        zero.stderr
    );

    // The file's text is not trusted: a detail that would rewrite the screen is shown escaped.
    let file = dir.path().join("forged.json");
    let now = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
    let forged = serde_json::json!({
        "state": "lease-lost", "since": now, "beat_at": now, "detail": "x\n\u{1b}[2Jazevac: health: healthy",
        "run_id": "r\u{7}", "pid": 1, "region": "us-east-1", "stall_after_seconds": 60,
    });
    std::fs::write(&file, forged.to_string()).expect("write");
    let run = azevac_at(
        endpoint,
        &["health", "--health-file", file.to_str().expect("utf-8")],
        &[],
    )
    .expect_code(1);
    assert_eq!(run.stdout.lines().count(), 1, "{}", run.stdout);
    assert!(
        !run.stdout.contains('\u{1b}') && !run.stdout.contains('\u{7}'),
        "{:?}",
        run.stdout
    );

    // A watcher whose health file cannot be written does not start (the check would fail forever).
    let nowhere = dir.path().join("no-such-folder").join("health.json");
    let run = azevac_at(
        endpoint,
        &[
            "watch",
            "--queue",
            "https://sqs.us-east-1.amazonaws.com/123456789012/q",
            "--type",
            "asg",
            "--health-file",
            nowhere.to_str().expect("utf-8"),
        ],
        &[],
    );
    one_line(&run, "cannot write the health file");
}

/// A run the watcher starts is the watcher at work: right after a failed receive too. The receives
/// fail, ARC shifts traffic away from the zone, and the next resync evacuates it; while that
/// evacuation runs (one of its changes parked at the proxy), the watcher is healthy. Left
/// `queue-unreadable`, it would send systemd no `WATCHDOG=1` and have ECS replace it mid-run.
#[tokio::test]
async fn issue_51_a_watcher_evacuating_right_after_a_failed_receive_is_healthy() {
    let scene = Scene::new().await;
    let (proxy, file) = (&scene.proxy, scene.file("health.json"));
    let args = watch_args_leased(&scene.url, "10s", &["--resync", "10s"]);
    let (watcher, lines) = spawn_watcher(proxy, &args, &file, &[]);
    said(&lines, "holds the lease");
    scene.refuse("sqs:ReceiveMessage", "");
    health_until(proxy, &file, &[], 1, "queue-unreadable since").await;
    proxy.hold(Hold {
        label: Some("autoscaling:UpdateAutoScalingGroup".into()),
        body_contains: String::new(),
        nth: 1,
    });
    proxy.arc.lock().expect("arc").autoshift(common::ZONE);
    assert!(
        proxy.wait_held(None, Duration::from_secs(60)).is_some(),
        "the resync never evacuated the zone"
    );
    health_until(proxy, &file, &[], 0, "evacuating").await;
    proxy.release();
    proxy.set(Faults::default());
    // The evacuation ends and the queue reads again: stopped then, not mid-run (exit 143).
    health_until(proxy, &file, &[], 0, "following use1-az2; reads its queue").await;
    stop(watcher);
}
