//! `oci://REGISTRY/REPOSITORY:TAG` and `oci://REGISTRY/REPOSITORY@sha256:DIGEST`: a component
//! in an OCI registry, as a manifest's `path` and the commands name it.

use std::fmt;

use crate::oci::error::OciError;

/// The scheme that marks a component reference as an OCI one.
pub const SCHEME: &str = "oci://";

/// Whether `text` (a manifest's `path`, a command's argument) names an OCI component.
pub fn is_oci(text: &str) -> bool {
    text.starts_with(SCHEME)
}

/// A component in a registry: the registry (`host[:port]`), the repository, and a tag, a
/// digest, or both (`repo:tag@sha256:...`: the digest is what is pulled).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ComponentRef {
    /// `host[:port]`, as written.
    pub registry: String,
    /// The repository path, `tools/calculator`.
    pub repository: String,
    /// The tag, when one was given.
    pub tag: Option<String>,
    /// `sha256:<64 hex>`, when one was given.
    pub digest: Option<String>,
}

impl ComponentRef {
    /// Parses `oci://REGISTRY/REPO:TAG`, `oci://REGISTRY/REPO@sha256:DIGEST` or both. The
    /// registry is never implied: `oci://calculator:1` is an error that says so.
    pub fn parse(text: &str) -> Result<Self, OciError> {
        let invalid = |problem: &str| OciError::InvalidReference {
            reference: text.to_owned(),
            problem: problem.to_owned(),
        };
        let rest = text
            .strip_prefix(SCHEME)
            .ok_or_else(|| invalid("it does not start with oci://"))?;
        let (registry, path) = rest
            .split_once('/')
            .ok_or_else(|| invalid("it names no repository: write oci://REGISTRY/REPO:TAG"))?;
        if registry.is_empty() || !registry.chars().all(is_registry_char) {
            return Err(invalid(
                "the registry must be a host name or address, with a port if needed \
                 (registry.example.com, 127.0.0.1:5000, [::1]:5000)",
            ));
        }
        let (name, digest) = match path.split_once('@') {
            Some((name, digest)) => (name, Some(check_digest(digest).map_err(|p| invalid(&p))?)),
            None => (path, None),
        };
        let (repository, tag) = match name.rsplit_once(':') {
            Some((repository, tag)) if !tag.contains('/') => (repository, Some(tag.to_owned())),
            _ => (name, None),
        };
        if tag.is_none() && digest.is_none() {
            return Err(invalid(
                "it has neither a tag nor a digest: add :TAG or @sha256:DIGEST",
            ));
        }
        if let Some(tag) = &tag
            && !is_valid_tag(tag)
        {
            return Err(invalid(
                "a tag is 1 to 128 letters, digits, `_`, `.` or `-`, not starting with `.` or `-`",
            ));
        }
        if repository.is_empty()
            || !repository.split('/').all(|part| {
                !part.is_empty()
                    && part
                        .chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "._-".contains(c))
            })
        {
            return Err(invalid(
                "a repository is lower-case letters, digits, `.`, `_` and `-`, in parts \
                 separated by `/`",
            ));
        }
        Ok(Self {
            registry: registry.to_owned(),
            repository: repository.to_owned(),
            tag,
            digest,
        })
    }

    /// The same component by digest (keeping the tag, for messages).
    pub fn with_digest(&self, digest: &str) -> Self {
        Self {
            digest: Some(digest.to_owned()),
            ..self.clone()
        }
    }

    /// The host name without the port, and without the brackets of an IPv6 address.
    pub fn host(&self) -> &str {
        let registry = self.registry.as_str();
        if let Some(rest) = registry.strip_prefix('[') {
            return rest.split(']').next().unwrap_or(rest);
        }
        registry.split(':').next().unwrap_or(registry)
    }

    /// Whether the registry is on this machine (127.0.0.1, [::1], localhost): the only ones
    /// spoken to over plain HTTP unless the manifest says so for a registry.
    pub fn is_loopback(&self) -> bool {
        match self.host() {
            "localhost" => true,
            host => host
                .parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback()),
        }
    }

    /// The reference as oci-client takes it: by digest when there is one.
    pub(crate) fn to_client(&self) -> oci_client::Reference {
        match (&self.digest, &self.tag) {
            (Some(digest), _) => oci_client::Reference::with_digest(
                self.registry.clone(),
                self.repository.clone(),
                digest.clone(),
            ),
            (None, tag) => oci_client::Reference::with_tag(
                self.registry.clone(),
                self.repository.clone(),
                tag.clone().unwrap_or_default(),
            ),
        }
    }

    /// The same repository at another tag (a signature's `sha256-<hex>.sig`).
    pub(crate) fn at_tag(&self, tag: &str) -> Self {
        Self {
            tag: Some(tag.to_owned()),
            digest: None,
            ..self.clone()
        }
    }

    /// `REGISTRY/REPO`, as cosign's payload names the image.
    pub fn repository_name(&self) -> String {
        format!("{}/{}", self.registry, self.repository)
    }
}

impl fmt::Display for ComponentRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{SCHEME}{}/{}", self.registry, self.repository)?;
        if let Some(tag) = &self.tag {
            write!(f, ":{tag}")?;
        }
        if let Some(digest) = &self.digest {
            write!(f, "@{digest}")?;
        }
        Ok(())
    }
}

fn is_registry_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || ".-:[]".contains(c)
}

fn is_valid_tag(tag: &str) -> bool {
    !tag.is_empty()
        && tag.len() <= 128
        && !tag.starts_with(['.', '-'])
        && tag
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c))
}

/// `sha256:` and 64 lower-case hex digits, the only digest toolhost pulls by.
pub(crate) fn check_digest(digest: &str) -> Result<String, String> {
    match digest.strip_prefix("sha256:") {
        Some(hex) if hex.len() == 64 && hex.chars().all(|c| matches!(c, '0'..='9' | 'a'..='f')) => {
            Ok(digest.to_owned())
        }
        _ => Err(format!(
            "`{digest}` is not a digest: write sha256: and 64 lower-case hex digits"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_digests_and_both_parse_and_print_back() {
        for text in [
            "oci://127.0.0.1:5000/tools/calculator:1",
            "oci://ghcr.io/acme/tools/calc@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
            "oci://[::1]:5000/calc:v1.2@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
        ] {
            let reference = ComponentRef::parse(text).expect(text);
            assert_eq!(reference.to_string(), text);
        }
        let reference = ComponentRef::parse("oci://[::1]:5000/calc:1").expect("parses");
        assert_eq!(reference.host(), "::1");
        assert!(reference.is_loopback());
        assert!(
            !ComponentRef::parse("oci://ghcr.io/a:1")
                .expect("parses")
                .is_loopback()
        );
    }

    #[test]
    fn bad_references_say_what_to_write() {
        for (text, expect) in [
            ("oci://calculator:1", "names no repository"),
            ("oci://ghcr.io/acme/calc", "neither a tag nor a digest"),
            ("oci://ghcr.io/acme/calc@sha256:abc", "is not a digest"),
            ("oci://ghcr.io/Acme/calc:1", "lower-case"),
            ("oci://ghcr.io/acme/calc:-x", "a tag is"),
        ] {
            let error = ComponentRef::parse(text).expect_err(text).to_string();
            assert!(error.contains(text), "{error}");
            assert!(error.contains(expect), "{text}: {error}");
        }
    }
}
