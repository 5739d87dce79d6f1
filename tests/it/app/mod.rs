//! The application layer: runs across accounts, recovery in waves, the watcher and its health, notifications.

pub mod accounts;
pub mod health;
pub mod notify;
pub mod watch;
pub mod waves;
