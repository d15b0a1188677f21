//! Registry credentials: from the environment, else from the Docker config, else anonymous.
//!
//! - `TOOLHOST_REGISTRY`, `TOOLHOST_REGISTRY_USERNAME`, `TOOLHOST_REGISTRY_PASSWORD`: a user
//!   name and password for the one registry `TOOLHOST_REGISTRY` names (`host[:port]`); never
//!   sent to another (a manifest may name any registry).
//! - `$DOCKER_CONFIG/config.json`, else `~/.docker/config.json`: its `auths` entry for the
//!   registry, `auth` (base64 of `user:password`, what `docker login` and `oras login` write)
//!   or `username` and `password`. Credential helpers (`credsStore`, `credHelpers`) are not
//!   run: log in so that the file holds the credentials, or use the variables.

use std::collections::BTreeMap;
use std::path::PathBuf;

use base64::Engine as _;
use oci_client::secrets::RegistryAuth;
use serde::Deserialize;

use crate::oci::error::OciError;

#[derive(Debug, Default, Deserialize)]
struct DockerConfig {
    #[serde(default)]
    auths: BTreeMap<String, DockerAuth>,
}

#[derive(Debug, Default, Deserialize)]
struct DockerAuth {
    auth: Option<String>,
    username: Option<String>,
    password: Option<String>,
}

/// The credentials for `registry` (`host[:port]`): the variables' when they name it, the
/// Docker config's entry for it, else anonymous.
pub(crate) fn for_registry(registry: &str) -> Result<RegistryAuth, OciError> {
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    if var("TOOLHOST_REGISTRY").as_deref() == Some(registry)
        && let (Some(user), Some(password)) = (
            var("TOOLHOST_REGISTRY_USERNAME"),
            var("TOOLHOST_REGISTRY_PASSWORD"),
        )
    {
        return Ok(RegistryAuth::Basic(user, password));
    }
    let Some(path) = docker_config_path() else {
        return Ok(RegistryAuth::Anonymous);
    };
    let bytes = match crate::file::read(&path, 1024 * 1024, "a Docker config") {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(RegistryAuth::Anonymous),
        Err(e) => {
            return Err(OciError::Credentials {
                path,
                problem: e.to_string(),
            });
        }
    };
    let config: DockerConfig =
        serde_json::from_slice(&bytes).map_err(|e| OciError::Credentials {
            path: path.clone(),
            problem: format!("it is not valid JSON ({e})"),
        })?;
    let entry = config
        .auths
        .iter()
        .find(|(key, _)| registry_of(key) == registry)
        .map(|(_, entry)| entry);
    match entry {
        Some(entry) => basic(entry).map_err(|problem| OciError::Credentials {
            path,
            problem: format!("the entry for {registry} {problem}"),
        }),
        None => Ok(RegistryAuth::Anonymous),
    }
}

fn basic(entry: &DockerAuth) -> Result<RegistryAuth, String> {
    if let Some(auth) = &entry.auth {
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(auth.trim())
            .map_err(|_| "has an `auth` that is not base64".to_owned())?;
        let text = String::from_utf8(decoded)
            .map_err(|_| "has an `auth` that is not UTF-8 text".to_owned())?;
        let (user, password) = text
            .split_once(':')
            .ok_or_else(|| "has an `auth` that is not user:password".to_owned())?;
        return Ok(RegistryAuth::Basic(user.to_owned(), password.to_owned()));
    }
    match (&entry.username, &entry.password) {
        (Some(user), Some(password)) => Ok(RegistryAuth::Basic(user.clone(), password.clone())),
        _ => Ok(RegistryAuth::Anonymous),
    }
}

/// The registry a Docker config key names: `https://host:port/v1/` is `host:port`.
fn registry_of(key: &str) -> &str {
    let key = key
        .strip_prefix("https://")
        .or_else(|| key.strip_prefix("http://"))
        .unwrap_or(key);
    key.split('/').next().unwrap_or(key)
}

fn docker_config_path() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("DOCKER_CONFIG").filter(|v| !v.is_empty()) {
        return Some(PathBuf::from(dir).join("config.json"));
    }
    let home = std::env::var_os("HOME").filter(|v| !v.is_empty())?;
    Some(PathBuf::from(home).join(".docker").join("config.json"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_with_a_scheme_or_a_path_name_their_registry() {
        assert_eq!(
            registry_of("https://index.docker.io/v1/"),
            "index.docker.io"
        );
        assert_eq!(registry_of("127.0.0.1:5000"), "127.0.0.1:5000");
        assert_eq!(registry_of("http://[::1]:5000"), "[::1]:5000");
    }

    #[test]
    fn auth_is_base64_of_user_and_password() {
        let entry = DockerAuth {
            auth: Some(base64::engine::general_purpose::STANDARD.encode("alice:s3:cret")),
            ..DockerAuth::default()
        };
        match basic(&entry) {
            Ok(RegistryAuth::Basic(user, password)) => {
                assert_eq!((user.as_str(), password.as_str()), ("alice", "s3:cret"));
            }
            other => panic!("{other:?}"),
        }
        let broken = DockerAuth {
            auth: Some("!!".to_owned()),
            ..DockerAuth::default()
        };
        assert!(basic(&broken).is_err());
    }
}
