//! A moto server of the test's own, on a free loopback port, stopped when the handle drops.
//! One server per test keeps every test's estate apart without any shared reset.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running moto server.
pub struct Moto {
    child: Child,
    /// `http://127.0.0.1:PORT`.
    pub endpoint: String,
}

impl Moto {
    /// Start moto_server and wait until it answers. Panics with what to do when it is not installed:
    /// a test that silently skipped could never fail.
    pub fn start() -> Moto {
        Moto::start_with(&[])
    }

    /// moto server through scripts/moto_server.py, its fixes applied; panics if the launcher would not
    /// be used (no `.venv-moto`, or `AZEVAC_MOTO_SERVER` set), so that a test comparing the launcher
    /// with moto unchanged cannot pass by comparing moto with itself.
    pub fn start_through_launcher() -> Moto {
        let (_, launcher) = moto_server();
        assert!(
            !launcher.is_empty(),
            "this test needs scripts/moto_server.py: unset AZEVAC_MOTO_SERVER and run scripts/moto-env"
        );
        Moto::start_with(&[])
    }

    /// moto server unchanged, without scripts/moto_server.py's fixes: to check that they change
    /// no answer.
    pub fn start_unfixed() -> Moto {
        Moto::start_with(&[("AZEVAC_MOTO_UNFIXED", "1")])
    }

    fn start_with(env: &[(&str, &str)]) -> Moto {
        let (server, launcher) = moto_server();
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let child = Command::new(&server)
            .args(launcher)
            .args(["-H", "127.0.0.1", "-p", &port.to_string()])
            .envs(env.iter().copied())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "cannot start {}: {e}; run scripts/test (it installs moto)",
                    server.display()
                )
            });
        let moto = Moto {
            child,
            endpoint: format!("http://127.0.0.1:{port}"),
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        while !answers(port) {
            assert!(
                Instant::now() < deadline,
                "moto server on port {port} did not answer within 30 s"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        moto
    }
}

impl Moto {
    /// Forget every resource (`POST /moto-api/reset`), for tests that loop over fresh estates.
    pub fn reset(&self) {
        let port: u16 = self
            .endpoint
            .rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .expect("port");
        let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect to moto");
        stream
            .write_all(
                b"POST /moto-api/reset HTTP/1.1\r\nHost: localhost\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            )
            .expect("reset");
        let mut answer = String::new();
        let _ = stream.read_to_string(&mut answer);
        assert!(answer.starts_with("HTTP/1.1 200"), "moto reset: {answer}");
    }
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The program to run and its first arguments: `AZEVAC_MOTO_SERVER` (a moto_server as it is), else the
/// repository's `.venv-moto` (made by scripts/moto-env) running `scripts/moto_server.py`, the launcher that
/// fixes moto's O(items x table) transactions (the benchmark uses the same), else moto_server from PATH.
fn moto_server() -> (PathBuf, Vec<PathBuf>) {
    if let Some(path) = std::env::var_os("AZEVAC_MOTO_SERVER") {
        return (PathBuf::from(path), Vec::new());
    }
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let python = root.join(".venv-moto/bin/python");
    if python.exists() {
        (python, vec![root.join("scripts/moto_server.py")])
    } else {
        (PathBuf::from("moto_server"), Vec::new())
    }
}

/// Whether `GET /moto-api/` answers with HTTP 200.
fn answers(port: u16) -> bool {
    let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    if stream
        .write_all(b"GET /moto-api/ HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .is_err()
    {
        return false;
    }
    let mut head = [0u8; 12];
    stream.read_exact(&mut head).is_ok() && head.starts_with(b"HTTP/1.1 200") || head.starts_with(b"HTTP/1.0 200")
}
