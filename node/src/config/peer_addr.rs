//! [`PeerAddr`]: where the configuration says a validator peer is reached, an IP socket address
//! or a DNS name and port (`[validator] peers`, `gamechain testnet --hosts`). How the
//! validator dials and accepts such a peer is `validator/p2p.rs`.

use std::fmt;
use std::net::SocketAddr;

use commonware_utils::Hostname;

/// Where a peer is reached: an IP socket address, or a DNS name and port resolved by the
/// system resolver (`/etc/hosts`, then DNS) at start and at every dial.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum PeerAddr {
    /// `1.2.3.4:9645` or `[2001:db8::1]:9645`.
    Socket(SocketAddr),
    /// `v1.example.org:9645`: a hostname of RFC 1035/1123 letters, digits, `-` and `.`, at most
    /// 253 characters.
    Dns {
        /// The name, as written.
        host: String,
        /// The TCP port.
        port: u16,
    },
}

impl PeerAddr {
    /// Parses `<ip>:<port>`, `[<ipv6>]:<port>` or `<dns name>:<port>`. Errors: anything else
    /// (a missing or bad port, a name that is not a valid hostname).
    pub fn parse(s: &str) -> Result<Self, String> {
        if let Ok(addr) = s.parse::<SocketAddr>() {
            return Ok(Self::Socket(addr));
        }
        let (host, port) = s
            .rsplit_once(':')
            .ok_or_else(|| format!("`{s}` has no :<port>"))?;
        let port: u16 = port
            .parse()
            .map_err(|_| format!("`{s}`: `{port}` is not a port"))?;
        if host.parse::<std::net::IpAddr>().is_ok() || host.starts_with('[') {
            return Err(format!(
                "`{s}`: write an IPv6 address as [<address>]:<port>"
            ));
        }
        Hostname::new(host).map_err(|e| format!("`{s}`: `{host}` is not a hostname: {e}"))?;
        Ok(Self::Dns {
            host: host.to_string(),
            port,
        })
    }
}

impl fmt::Display for PeerAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Socket(a) => write!(f, "{a}"),
            Self::Dns { host, port } => write!(f, "{host}:{port}"),
        }
    }
}
