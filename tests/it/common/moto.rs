//! A moto server of the test's own, on a free loopback port, stopped when the handle drops.
//! One server per test keeps every test's estate apart without any shared reset.
//!
//! Where `AZEVAC_MOTO_POOL` names scripts/moto_pool.py's socket (scripts/test sets it), the server is
//! forked from that warmed process instead of started from nothing: the same server, without the
//! ~2 CPU-seconds of imports every new one costs before it has answered each service once.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running moto server.
pub struct Moto {
    server: Server,
    /// `http://127.0.0.1:PORT`.
    pub endpoint: String,
}

/// How the server was started, which says how it is stopped.
enum Server {
    /// A process of the test's own: killed and reaped on drop.
    Spawned(Child),
    /// Forked by the pool: held by this connection, and killed by the pool once it closes.
    Pooled(UnixStream),
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

    /// moto server checking IAM for every caller but the tests' own `testing` key, the account's
    /// root (scripts/moto_server.py, AZEVAC_MOTO_IAM): a test seeds as root and runs azevac as an
    /// IAM user. moto checks a policy's actions, not its resources or conditions.
    pub fn start_checking_iam() -> Moto {
        Moto::start_with(&[("AZEVAC_MOTO_IAM", "1")])
    }

    fn start_with(env: &[(&str, &str)]) -> Moto {
        let port = free_port();
        // The pool serves moto with the launcher's fixes and nothing else: a test that asks for
        // another environment (moto unchanged) or another program gets a process of its own.
        let pooled = match std::env::var_os("AZEVAC_MOTO_POOL") {
            Some(socket) if env.is_empty() && std::env::var_os("AZEVAC_MOTO_SERVER").is_none() => {
                from_pool(std::path::Path::new(&socket), port)
                    .map_err(|e| eprintln!("moto pool at {socket:?}: {e}; starting moto from nothing"))
                    .ok()
            }
            _ => None,
        };
        let server = match pooled {
            Some(held) => Server::Pooled(held),
            None => Server::Spawned(spawn(env, port)),
        };
        Moto::answering(server, port)
    }

    /// A server forked by the pool listening on `socket` (scripts/moto_pool.py), whatever the
    /// environment says; panics if the pool cannot serve one.
    pub fn start_in_pool(socket: &std::path::Path) -> Moto {
        let port = free_port();
        let held = from_pool(socket, port).unwrap_or_else(|e| panic!("moto pool at {}: {e}", socket.display()));
        Moto::answering(Server::Pooled(held), port)
    }

    /// The port this server listens on.
    pub fn port(&self) -> u16 {
        self.endpoint
            .rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .expect("port")
    }

    /// Wait until the server on `port` answers (panics after 30 s).
    fn answering(server: Server, port: u16) -> Moto {
        let moto = Moto {
            server,
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

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// Ask the pool for a server on `port`: the connection that holds it (the server lives as long as
/// the connection stays open).
fn from_pool(socket: &std::path::Path, port: u16) -> std::io::Result<UnixStream> {
    let mut stream = UnixStream::connect(socket)?;
    // A pool that does not answer is a pool not to use: the caller starts a server of its own.
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    stream.write_all(format!("serve 127.0.0.1 {port}\n").as_bytes())?;
    let mut answer = String::new();
    BufReader::new(&stream).read_line(&mut answer)?;
    if answer.trim().parse::<u32>().is_err() {
        return Err(std::io::Error::other(format!("the pool answered {answer:?}")));
    }
    Ok(stream)
}

fn spawn(env: &[(&str, &str)], port: u16) -> Child {
    let (server, launcher) = moto_server();
    Command::new(&server)
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
        })
}

impl Moto {
    /// Forget every resource (`POST /moto-api/reset`), for tests that loop over fresh estates.
    pub fn reset(&self) {
        let port = self.port();
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
        match &mut self.server {
            Server::Spawned(child) => {
                let _ = child.kill();
                let _ = child.wait();
            }
            // Closing the connection is the pool's signal to kill the server.
            Server::Pooled(held) => {
                let _ = held.shutdown(std::net::Shutdown::Both);
            }
        }
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

/// A moto pool of a test's own, killed when dropped.
pub struct Pool(Child);

impl Pool {
    /// Kill the pool now (its servers die with it).
    pub fn kill(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        self.kill();
    }
}

/// scripts/moto_pool.py serving on `socket`, from the repository's `.venv-moto` (scripts/moto-env),
/// and ready once `socket` exists.
pub fn start_pool(socket: &std::path::Path) -> Pool {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let python = root.join(".venv-moto/bin/python");
    assert!(python.exists(), "no {}: run scripts/moto-env", python.display());
    let mut pool = Command::new(python)
        .arg(root.join("scripts/moto_pool.py"))
        .arg(socket)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start scripts/moto_pool.py");
    let deadline = Instant::now() + Duration::from_secs(60);
    while !socket.exists() {
        assert!(
            pool.try_wait().expect("the pool's status").is_none(),
            "the moto pool exited"
        );
        assert!(Instant::now() < deadline, "the moto pool was not ready within 60 s");
        std::thread::sleep(Duration::from_millis(50));
    }
    Pool(pool)
}

/// Whether `GET /moto-api/` answers with HTTP 200.
pub fn answers(port: u16) -> bool {
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
