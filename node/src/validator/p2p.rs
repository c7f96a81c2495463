//! The validator's p2p transport settings: which preset of Commonware's `lookup` network runs,
//! and how a peer named by DNS ([`PeerAddr`], written in the configuration) is reached.
//!
//! - **Preset.** A loopback `p2p_listen` (a network on one machine, tests) gets
//!   `lookup::Config::local` (redials after 1 s, 16 handshakes a second per IP, pings every
//!   5 s); any other address gets `lookup::Config::recommended`, the production preset (one
//!   handshake per 5 s per IP, 64 per second per subnet, a dial attempt a second across peers,
//!   pings every 50 s, a misbehaving peer blocked for 4 hours) with two changes:
//!   `allow_private_ips` from `[validator]` (the preset refuses private addresses, which would
//!   silently cut a set on one LAN or VPC off from itself), and a peer's connection reserved
//!   at most every [`PEER_CONNECTION_COOLDOWN`] instead of every 60 s (a failed dial also
//!   refuses that peer's inbound connection for the cooldown, so with 60 s a validator that
//!   restarts waits up to 90 s for its peers; the set is small and fixed, and only its
//!   members' IPs may start a handshake at all).
//! - **Addresses.** A peer given by IP is dialled there and accepted only from that IP. A peer
//!   given by DNS name is dialled by name: the transport resolves the name again at every dial
//!   attempt, so a connection that fails is retried at the name's current address. Inbound
//!   connections are accepted only from the address the name resolved to: resolved at start
//!   ([`resolve_all`], at most [`RESOLVE_TIMEOUT`] per name; a name that does not resolve yet
//!   does not stop the start) and again every [`DNS_REFRESH`] ([`refresh`]), which hands the
//!   transport the new address when it changed (dropping the connection made on the old one).
//!
//! There are no bootstrappers: the lookup network has no discovery, every validator's address
//! is in the configuration (the set is fixed by genesis), and each validator dials every other.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::num::NonZeroUsize;
use std::time::Duration;

use commonware_cryptography::ed25519::PublicKey;
use commonware_p2p::authenticated::lookup;
use commonware_p2p::{Address, AddressableManager as _, Ingress};
use commonware_stream::Upgrader;
use commonware_utils::ordered::Map;
use commonware_utils::Hostname;

use crate::config::peer_addr::PeerAddr;

/// How often a peer's DNS name is resolved again for the address its connections must come
/// from (node policy).
pub const DNS_REFRESH: Duration = Duration::from_secs(30);

/// Least time between two connection attempts (either way) with one peer, production preset.
pub const PEER_CONNECTION_COOLDOWN: Duration = Duration::from_secs(10);

/// Longest wait for one name's resolution.
pub const RESOLVE_TIMEOUT: Duration = Duration::from_secs(5);

/// The transport's configuration for a validator listening on `listen` in a set of `n`
/// (module docs: local preset on loopback, production otherwise).
pub fn config<U: Upgrader>(
    handshake: U,
    namespace: &[u8],
    listen: SocketAddr,
    n: NonZeroUsize,
    max_message_size: u32,
    allow_private_ips: bool,
) -> lookup::Config<U> {
    let mailbox = NonZeroUsize::new(1024).expect("nonzero");
    if listen.ip().is_loopback() {
        lookup::Config::local(handshake, namespace, listen, n, max_message_size, mailbox)
    } else {
        let mut c =
            lookup::Config::recommended(handshake, namespace, listen, n, max_message_size, mailbox);
        c.allow_private_ips = allow_private_ips;
        c.peer_connection_cooldown = PEER_CONNECTION_COOLDOWN;
        c
    }
}

/// Whether [`config`] picks the production preset for `listen`.
pub fn is_production(listen: SocketAddr) -> bool {
    !listen.ip().is_loopback()
}

/// The addresses `host` resolves to now (system resolver), at most [`RESOLVE_TIMEOUT`].
/// Errors: the name does not resolve, resolves to nothing, or takes too long.
pub async fn lookup_host(host: &str) -> Result<Vec<IpAddr>, String> {
    let found = tokio::time::timeout(RESOLVE_TIMEOUT, tokio::net::lookup_host((host, 0)))
        .await
        .map_err(|_| format!("{host}: no answer within {RESOLVE_TIMEOUT:?}"))?
        .map_err(|e| format!("{host}: {e}"))?;
    let mut ips: Vec<IpAddr> = found.map(|a| a.ip()).collect();
    // One order whatever the resolver's (round-robin DNS rotates it): IPv4 first, then by
    // address, so the address a peer is accepted from does not flap between lookups.
    ips.sort_by_key(|ip| (ip.is_ipv6(), *ip));
    ips.dedup();
    if ips.is_empty() {
        return Err(format!("{host}: no address"));
    }
    Ok(ips)
}

/// The transport address of a peer: an IP as itself; a name dialled by name, accepted from
/// `resolved` (the first address it resolved to; the unspecified address, which no connection
/// comes from, while it does not resolve).
pub fn address(peer: &PeerAddr, resolved: Option<IpAddr>) -> Address {
    match peer {
        PeerAddr::Socket(a) => Address::Symmetric(*a),
        PeerAddr::Dns { host, port } => Address::Asymmetric {
            ingress: Ingress::Dns {
                host: Hostname::new(host.clone()).expect("checked by PeerAddr::parse"),
                port: *port,
            },
            egress: SocketAddr::new(resolved.unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED)), *port),
        },
    }
}

/// Resolves every named peer once (concurrently) and returns each peer's transport address.
/// A name that does not resolve is logged and gets the unspecified address until [`refresh`]
/// resolves it.
pub async fn resolve_all(peers: &[(PublicKey, PeerAddr)]) -> Vec<(PublicKey, Address)> {
    let lookups = peers.iter().map(|(key, peer)| async move {
        let resolved = match peer {
            PeerAddr::Socket(_) => None,
            PeerAddr::Dns { host, .. } => match lookup_host(host).await {
                Ok(ips) => Some(ips[0]),
                Err(e) => {
                    tracing::warn!(peer = %peer, "peer name does not resolve yet: {e}");
                    None
                }
            },
        };
        (key.clone(), address(peer, resolved))
    });
    futures_util::future::join_all(lookups).await
}

/// Every [`DNS_REFRESH`], resolves the named peers again and gives the transport the peers
/// whose address changed (`current` is what it has now). Runs until the runtime stops.
pub async fn refresh<E: commonware_runtime::Clock>(
    context: E,
    mut oracle: lookup::Oracle<PublicKey>,
    peers: Vec<(PublicKey, PeerAddr)>,
    mut current: Vec<(PublicKey, Address)>,
) {
    let named: Vec<(PublicKey, PeerAddr)> = peers
        .into_iter()
        .filter(|(_, p)| matches!(p, PeerAddr::Dns { .. }))
        .collect();
    if named.is_empty() {
        return;
    }
    loop {
        context.sleep(DNS_REFRESH).await;
        let mut changed = Vec::new();
        for (key, peer) in &named {
            let PeerAddr::Dns { host, .. } = peer else {
                continue;
            };
            let Some(slot) = current.iter_mut().find(|(k, _)| k == key) else {
                continue;
            };
            // A failed lookup keeps the last known address; so does a name that still resolves
            // to it among others (several A records, or IPv4 and IPv6).
            let Ok(ips) = lookup_host(host).await else {
                continue;
            };
            let now = slot.1.egress_ip();
            if !now.is_unspecified() && ips.contains(&now) {
                continue;
            }
            let addr = address(peer, Some(ips[0]));
            if slot.1 == addr {
                continue;
            }
            let key = key.clone();
            tracing::info!(peer = %key, from = ?slot.1, to = ?addr, "peer address changed");
            slot.1 = addr.clone();
            changed.push((key, addr));
        }
        if !changed.is_empty() {
            if let Ok(map) = Map::try_from(changed) {
                let _ = oracle.overwrite(map);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_peer_named_localhost_resolves_to_loopback_and_is_dialled_by_name() {
        use commonware_cryptography::Signer as _;
        let key = crate::validator::keys::generate().public_key();
        let peers = vec![
            (
                key.clone(),
                PeerAddr::Dns {
                    host: "localhost".into(),
                    port: 9645,
                },
            ),
            (
                key.clone(),
                PeerAddr::Socket("10.1.2.3:9646".parse().unwrap()),
            ),
            (
                key,
                PeerAddr::Dns {
                    host: "no-such-host.invalid".into(),
                    port: 9647,
                },
            ),
        ];
        let got = resolve_all(&peers).await;
        match &got[0].1 {
            Address::Asymmetric { ingress, egress } => {
                assert_eq!(
                    ingress,
                    &Ingress::Dns {
                        host: Hostname::new("localhost").unwrap(),
                        port: 9645
                    }
                );
                assert!(egress.ip().is_loopback(), "{egress}");
                assert_eq!(egress.port(), 9645);
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            got[1].1,
            Address::Symmetric("10.1.2.3:9646".parse().unwrap())
        );
        // Unresolvable for now: dialled by name, accepted from nowhere.
        assert!(got[2].1.egress_ip().is_unspecified());
        assert!(matches!(got[2].1.ingress(), Ingress::Dns { .. }));
        assert!(lookup_host("no-such-host.invalid").await.is_err());
    }

    #[test]
    fn the_local_preset_only_on_loopback() {
        let handshake = || {
            commonware_stream::cups::Cups::<_, commonware_cryptography::ChaCha20Poly1305>::new(
                commonware_stream::sake::Sake {
                    signer: crate::validator::keys::generate(),
                    synchrony_bound: Duration::from_secs(5),
                    max_handshake_age: Duration::from_secs(10),
                    version: commonware_stream::sake::Version::V1,
                },
                commonware_stream::cups::Version::V1,
            )
        };
        let n = NonZeroUsize::new(4).unwrap();
        let local = config(
            handshake(),
            b"ns",
            "127.0.0.1:1".parse().unwrap(),
            n,
            1 << 20,
            false,
        );
        assert!(local.allow_private_ips);
        assert_eq!(local.peer_connection_cooldown, Duration::from_secs(1));
        for listen in ["0.0.0.0:1", "10.0.0.1:1", "[::]:1", "203.0.113.9:1"] {
            let listen: SocketAddr = listen.parse().unwrap();
            assert!(is_production(listen));
            let prod = config(handshake(), b"ns", listen, n, 1 << 20, true);
            assert_eq!(prod.peer_connection_cooldown, PEER_CONNECTION_COOLDOWN);
            assert_eq!(
                prod.ping_frequency,
                Duration::from_secs(50),
                "the production preset"
            );
            assert!(prod.allow_dns);
            assert!(prod.allow_private_ips, "from [validator]");
            assert!(!config(handshake(), b"ns", listen, n, 1 << 20, false).allow_private_ips);
        }
        assert!(!is_production("[::1]:1".parse().unwrap()));
    }
}
