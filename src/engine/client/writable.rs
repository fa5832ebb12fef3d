//! The server a client's writes go to, as the driver's server monitoring last described
//! it: named in round-trip events (`server.address`, `server.port`). Known when exactly
//! one server the client knows takes writes (a standalone, a replica set's primary, a
//! single mongos or load balancer); unknown otherwise (several mongos, during an
//! election, a Unix socket). And why the last check of each server failed, if it did: a
//! call that times out names it, so a certificate refused or a handshake that failed is
//! reported as such, not only as a server that did not answer.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use mongodb::event::sdam::SdamEvent;
use mongodb::event::EventHandler;
use mongodb::options::ServerAddress;
use mongodb::ServerType;

use crate::engine::panic_safety::lock;

/// The servers of one client and what the driver last saw each to be.
#[derive(Debug, Default)]
pub struct WritableServer {
    servers: Mutex<HashMap<ServerAddress, ServerType>>,
    /// The error of the last failed check of each server, until one succeeds.
    failures: Mutex<HashMap<ServerAddress, String>>,
}

impl WritableServer {
    /// A handler for the client's options (`sdam_event_handler`) that keeps this up to
    /// date; it holds this weakly, so a dropped client handle frees it.
    pub fn handler(self: &Arc<Self>) -> EventHandler<SdamEvent> {
        let watched = Arc::downgrade(self);
        EventHandler::callback(move |event| {
            let Some(watched) = watched.upgrade() else {
                return;
            };
            match event {
                SdamEvent::ServerDescriptionChanged(changed) => {
                    watched.note_check(
                        &changed.address,
                        changed.new_description.error().map(ToString::to_string),
                    );
                    watched.note(
                        changed.address.clone(),
                        Some(changed.new_description.server_type()),
                    )
                }
                SdamEvent::ServerClosed(closed) => watched.note(closed.address, None),
                _ => {}
            }
        })
    }

    /// `address` is now a server of type `kind`, or left the topology (`None`).
    pub fn note(&self, address: ServerAddress, kind: Option<ServerType>) {
        let mut servers = lock(&self.servers);
        match kind {
            Some(kind) => {
                servers.insert(address, kind);
            }
            None => {
                lock(&self.failures).remove(&address);
                servers.remove(&address);
            }
        }
    }

    /// The last check of `address` failed with `error`, or succeeded (`None`).
    pub fn note_check(&self, address: &ServerAddress, error: Option<String>) {
        let mut failures = lock(&self.failures);
        match error {
            Some(error) => {
                failures.insert(address.clone(), error);
            }
            None => {
                failures.remove(address);
            }
        }
    }

    /// The server whose last check failed and why (`host:port`, the error), when one
    /// did: the first in address order, so that the same state reads the same.
    pub fn failure(&self) -> Option<(String, String)> {
        let failures = lock(&self.failures);
        failures
            .iter()
            .map(|(address, error)| (address.to_string(), error.clone()))
            .min()
    }

    /// Host and port of the one server that takes writes, when there is exactly one
    /// reached over TCP.
    pub fn address(&self) -> Option<(String, u16)> {
        let servers = lock(&self.servers);
        let mut writable = servers.iter().filter(|(_, kind)| {
            matches!(
                kind,
                ServerType::Standalone
                    | ServerType::RsPrimary
                    | ServerType::Mongos
                    | ServerType::LoadBalancer
            )
        });
        let (address, _) = writable.next()?;
        if writable.next().is_some() {
            return None;
        }
        match address {
            ServerAddress::Tcp { host, port } => Some((host.clone(), port.unwrap_or(27017))),
            #[allow(unreachable_patterns)]
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tcp(host: &str, port: Option<u16>) -> ServerAddress {
        ServerAddress::Tcp {
            host: host.into(),
            port,
        }
    }

    #[test]
    fn the_one_server_that_takes_writes_is_named() {
        let w = WritableServer::default();
        assert_eq!(w.address(), None, "nothing seen yet");
        w.note(tcp("a", Some(27018)), Some(ServerType::Unknown));
        assert_eq!(w.address(), None, "not described yet");
        w.note(tcp("a", Some(27018)), Some(ServerType::Standalone));
        assert_eq!(w.address(), Some(("a".into(), 27018)));
        w.note(tcp("a", Some(27018)), None);
        assert_eq!(w.address(), None, "closed");
    }

    #[test]
    fn a_replica_set_names_its_primary_and_nothing_during_an_election() {
        let w = WritableServer::default();
        w.note(tcp("a", None), Some(ServerType::RsSecondary));
        w.note(tcp("b", None), Some(ServerType::RsPrimary));
        assert_eq!(w.address(), Some(("b".into(), 27017)), "default port");
        w.note(tcp("b", None), Some(ServerType::Unknown));
        assert_eq!(w.address(), None, "no primary");
        w.note(tcp("a", None), Some(ServerType::RsPrimary));
        assert_eq!(w.address(), Some(("a".into(), 27017)));
    }

    #[test]
    fn the_last_failed_check_is_named_until_a_check_succeeds() {
        let w = WritableServer::default();
        assert_eq!(w.failure(), None);
        w.note_check(&tcp("b", Some(2)), Some("invalid peer certificate".into()));
        w.note_check(&tcp("a", Some(1)), Some("connection refused".into()));
        let named = |a: &str, e: &str| Some((a.to_string(), e.to_string()));
        assert_eq!(w.failure(), named("a:1", "connection refused"));
        w.note_check(&tcp("a", Some(1)), None);
        assert_eq!(w.failure(), named("b:2", "invalid peer certificate"));
        w.note(tcp("b", Some(2)), None);
        assert_eq!(w.failure(), None, "a server that left says nothing");
    }

    #[test]
    fn several_mongos_name_none() {
        let w = WritableServer::default();
        w.note(tcp("m1", None), Some(ServerType::Mongos));
        assert_eq!(w.address(), Some(("m1".into(), 27017)));
        w.note(tcp("m2", None), Some(ServerType::Mongos));
        assert_eq!(w.address(), None);
    }
}
