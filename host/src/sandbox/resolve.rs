//! Where an outgoing HTTP request of a tool may connect: a host name is resolved once, its
//! addresses are checked, and the connection goes to a checked address (no second lookup a
//! DNS server could answer differently). A name never reaches a loopback, private,
//! link-local or cloud-metadata address unless a grant names that address itself.
//!
//! Names resolve through the system's resolver, or first through the hosts file named by
//! [`HOSTS_FILE_VARIABLE`] (`/etc/hosts` syntax), which lets tests point names at 127.0.0.1
//! without sending anything off the machine.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::Path;

use super::grants::HostPattern;

/// The environment variable naming a hosts file (`/etc/hosts` syntax: an address, then the
/// names it answers for) consulted before the system's resolver for tools' HTTP requests.
/// Unset by default. The addresses it gives are checked like any other.
pub const HOSTS_FILE_VARIABLE: &str = "TOOLHOST_HOSTS_FILE";

/// Why a request to a granted name cannot go out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// The name resolves to nothing.
    Unresolved(String),
    /// Every address it resolves to is internal and not granted by address: the first one,
    /// and what kind of address it is.
    Internal(IpAddr, &'static str),
}

/// The addresses a request to `host` on `port` may connect to, `host` having matched one of
/// `granted`: an address literal as it is (a grant names it), a name's addresses less the
/// internal ones no grant names.
pub(crate) async fn addresses(
    granted: &[HostPattern],
    host: &str,
    port: u16,
) -> Result<Vec<SocketAddr>, Refusal> {
    if let Ok(ip) = host.parse::<IpAddr>() {
        return Ok(vec![SocketAddr::new(ip, port)]);
    }
    let resolved = resolve(host, port).await;
    if resolved.is_empty() {
        return Err(Refusal::Unresolved(host.to_owned()));
    }
    let mut refused = None;
    let mut allowed = Vec::new();
    for addr in resolved {
        match internal(addr.ip()) {
            Some(kind) if !names_address(granted, addr) => {
                refused.get_or_insert((addr.ip(), kind));
            }
            _ => allowed.push(addr),
        }
    }
    match (allowed.is_empty(), refused) {
        (true, Some((ip, kind))) => Err(Refusal::Internal(ip, kind)),
        _ => Ok(allowed),
    }
}

/// Whether a grant names `addr`'s address itself (`127.0.0.1:8080`, `[::1]`).
fn names_address(granted: &[HostPattern], addr: SocketAddr) -> bool {
    granted.iter().any(|pattern| {
        !pattern.is_wildcard()
            && pattern.host().parse::<IpAddr>().ok() == Some(addr.ip())
            && pattern.port().is_none_or(|port| port == addr.port())
    })
}

/// `host`'s addresses: from the hosts file when it names `host`, else from the system.
async fn resolve(host: &str, port: u16) -> Vec<SocketAddr> {
    if let Some(file) = std::env::var_os(HOSTS_FILE_VARIABLE) {
        let found = from_hosts_file(Path::new(&file), host);
        if !found.is_empty() {
            return found
                .into_iter()
                .map(|ip| SocketAddr::new(ip, port))
                .collect();
        }
    }
    match tokio::net::lookup_host((host, port)).await {
        Ok(addrs) => addrs.collect(),
        Err(error) => {
            tracing::debug!(%host, "name lookup failed: {error}");
            Vec::new()
        }
    }
}

/// The addresses `/etc/hosts`-style `file` gives `host` (none when it cannot be read).
fn from_hosts_file(file: &Path, host: &str) -> Vec<IpAddr> {
    let text = match crate::file::read(file, crate::file::MAX_MANIFEST_SIZE, "a hosts file") {
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(error) => {
            tracing::warn!(file = %file.display(), "cannot read the hosts file: {error}");
            return Vec::new();
        }
    };
    let host = host.trim_end_matches('.');
    text.lines()
        .filter_map(|line| {
            let line = line.split('#').next()?;
            let mut fields = line.split_whitespace();
            let ip = fields.next()?.parse::<IpAddr>().ok()?;
            fields
                .any(|name| name.eq_ignore_ascii_case(host))
                .then_some(ip)
        })
        .collect()
}

/// What kind of internal address `ip` is, or `None` for an address of the internet:
/// loopback (127.0.0.0/8, ::1), private (10/8, 172.16/12, 192.168/16, fc00::/7), link-local
/// (169.254/16, where cloud metadata services answer, and fe80::/10), shared (100.64/10),
/// unspecified, broadcast or multicast; IPv4 addresses written as IPv6 alike.
pub(crate) fn internal(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => internal_v4(v4),
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return internal_v4(v4);
            }
            let first = v6.segments()[0];
            if v6.is_loopback() {
                Some("loopback")
            } else if v6.is_unspecified() {
                Some("unspecified")
            } else if first & 0xfe00 == 0xfc00 {
                Some("private")
            } else if first & 0xffc0 == 0xfe80 {
                Some("link-local")
            } else if v6.is_multicast() {
                Some("multicast")
            } else {
                None
            }
        }
    }
}

fn internal_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, ..] = ip.octets();
    if ip.is_loopback() {
        Some("loopback")
    } else if ip.is_private() {
        Some("private")
    } else if ip.is_link_local() {
        Some("link-local")
    } else if a == 0 {
        Some("unspecified")
    } else if a == 100 && (64..128).contains(&b) {
        Some("shared (carrier-grade NAT)")
    } else if ip.is_broadcast() || ip.is_multicast() {
        Some("broadcast or multicast")
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn internal_addresses_are_told_from_the_internet() {
        for internal_ip in [
            "127.0.0.1",
            "127.255.0.9",
            "10.1.2.3",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "169.254.169.254",
            "0.0.0.0",
            "100.64.0.1",
            "::1",
            "::",
            "fc00::1",
            "fd12:3456::1",
            "fe80::1",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
        ] {
            assert!(internal(ip(internal_ip)).is_some(), "{internal_ip}");
        }
        for public in ["8.8.8.8", "172.32.0.1", "93.184.216.34", "2606:4700::1111"] {
            assert_eq!(internal(ip(public)), None, "{public}");
        }
    }

    #[test]
    fn a_hosts_file_names_addresses() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("hosts");
        std::fs::write(
            &file,
            "# test names\n127.0.0.1 loop.test other.test\n::1\tLoop.Test # v6 too\nbad line\n",
        )
        .unwrap();
        assert_eq!(
            from_hosts_file(&file, "loop.test."),
            vec![ip("127.0.0.1"), ip("::1")]
        );
        assert_eq!(from_hosts_file(&file, "other.test"), vec![ip("127.0.0.1")]);
        assert!(from_hosts_file(&file, "none.test").is_empty());
    }

    #[tokio::test]
    async fn a_name_reaches_an_internal_address_only_when_a_grant_names_it() {
        let by_name: Vec<HostPattern> = vec!["localhost".parse().unwrap()];
        let refused = addresses(&by_name, "localhost", 8080).await;
        assert!(
            matches!(refused, Err(Refusal::Internal(ip, "loopback")) if ip.is_loopback()),
            "{refused:?}"
        );
        let with_address: Vec<HostPattern> = vec![
            "localhost".parse().unwrap(),
            "127.0.0.1:8080".parse().unwrap(),
            "[::1]:8080".parse().unwrap(),
        ];
        let allowed = addresses(&with_address, "localhost", 8080).await.unwrap();
        assert!(!allowed.is_empty());
        assert!(allowed.iter().all(|addr| addr.ip().is_loopback()));
        let other_port = addresses(&with_address, "localhost", 9090).await;
        assert!(
            matches!(other_port, Err(Refusal::Internal(..))),
            "{other_port:?}"
        );
        assert_eq!(
            addresses(&by_name, "127.0.0.1", 80).await,
            Ok(vec!["127.0.0.1:80".parse().unwrap()]),
            "an address literal was granted by address"
        );
    }
}
