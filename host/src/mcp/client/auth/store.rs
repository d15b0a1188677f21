//! Where a login's tokens are kept: one file per server (by its manifest name and URL) in
//! the cache directory's `auth/`, `0600` in a `0700` directory this user owns, as rmcp's
//! [`CredentialStore`].

use std::fs;
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rmcp::transport::auth::{
    AuthError, CredentialRefreshGuard, CredentialStore, StoredCredentials,
};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::engine::cache::default_cache_dir;

/// The directory logins are kept in: `auth/` beside the compile cache
/// (`$TOOLHOST_CACHE/auth`, else `~/.cache/toolhost/auth`).
pub fn default_token_dir() -> Option<PathBuf> {
    default_cache_dir().and_then(|components| components.parent().map(|root| root.join("auth")))
}

/// One server's login on disk.
#[derive(Serialize, Deserialize)]
pub(crate) struct TokenFile {
    /// The server's name in the manifest.
    pub(crate) server: String,
    /// Its URL: a login is for this server at this address only.
    pub(crate) url: String,
    /// What rmcp keeps: the client id, the token response, the scopes granted, when.
    pub(crate) credentials: StoredCredentials,
}

/// The tokens of the server `server` at `url`, kept in `dir`.
#[derive(Clone)]
pub struct FileTokenStore {
    inner: Arc<Inner>,
}

struct Inner {
    dir: PathBuf,
    path: PathBuf,
    server: String,
    url: String,
    /// Held across a refresh and its save, so two refreshes in one process do not race.
    refresh: Arc<tokio::sync::Mutex<()>>,
}

impl FileTokenStore {
    /// The store of `server` at `url` in `dir` (nothing is created until a login saves).
    pub fn new(dir: &Path, server: &str, url: &str) -> Self {
        let key = hex(&Sha256::digest(url.as_bytes())[..8]);
        let safe: String = server
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        Self {
            inner: Arc::new(Inner {
                dir: dir.to_owned(),
                path: dir.join(format!("{safe}-{key}.json")),
                server: server.to_owned(),
                url: url.to_owned(),
                refresh: Arc::new(tokio::sync::Mutex::new(())),
            }),
        }
    }

    /// The file the tokens are kept in.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// The stored login, if there is one; an error when the file or its directory cannot be
    /// trusted or read.
    pub(crate) fn read(&self) -> Result<Option<TokenFile>, String> {
        let path = &self.inner.path;
        if !self.inner.dir.exists() || !path.exists() {
            return Ok(None);
        }
        check_trusted(&self.inner.dir, path)?;
        let bytes = crate::file::read(path, 1024 * 1024, "a login")
            .map_err(|e| format!("cannot read the login in {}: {e}", path.display()))?;
        let file: TokenFile = serde_json::from_slice(&bytes).map_err(|e| {
            format!(
                "the login in {} is damaged ({e}); run `host auth logout {}` and log in again",
                path.display(),
                self.inner.server
            )
        })?;
        if file.url != self.inner.url {
            return Ok(None);
        }
        Ok(Some(file))
    }

    fn write(&self, credentials: StoredCredentials) -> Result<(), String> {
        let dir = &self.inner.dir;
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|e| format!("cannot create {} ({e}); set TOOLHOST_CACHE", dir.display()))?;
        trust(dir, true)?;
        let file = TokenFile {
            server: self.inner.server.clone(),
            url: self.inner.url.clone(),
            credentials,
        };
        let bytes = serde_json::to_vec_pretty(&file).map_err(|e| e.to_string())?;
        let path = &self.inner.path;
        crate::file::write_private(path, &bytes)
            .map_err(|e| format!("cannot write {} ({e})", path.display()))
    }

    /// Deletes the stored login; `true` when there was one.
    pub fn remove(&self) -> Result<bool, String> {
        match fs::remove_file(&self.inner.path) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(format!("cannot delete {} ({e})", self.inner.path.display())),
        }
    }
}

/// The directory must be this user's and writable by nobody else; the file too, and
/// readable by nobody else.
fn check_trusted(dir: &Path, path: &Path) -> Result<(), String> {
    trust(dir, true)?;
    trust(path, false)?;
    let mode = fs::metadata(path)
        .map(|m| m.mode() & 0o777)
        .map_err(|e| format!("cannot examine {} ({e})", path.display()))?;
    if mode & 0o077 != 0 {
        return Err(format!(
            "the login in {} can be read by others (mode {mode:o}); run `chmod 600 {}` or \
             log in again",
            path.display(),
            path.display()
        ));
    }
    Ok(())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn store_error(problem: String) -> AuthError {
    AuthError::CredentialStoreError(problem)
}

#[async_trait::async_trait]
impl CredentialStore for FileTokenStore {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        Ok(self
            .read()
            .map_err(store_error)?
            .map(|file| file.credentials))
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        self.write(credentials).map_err(store_error)
    }

    async fn clear(&self) -> Result<(), AuthError> {
        self.remove().map(|_| ()).map_err(store_error)
    }

    async fn acquire_refresh_guard(&self) -> Result<Option<CredentialRefreshGuard>, AuthError> {
        let guard = self.inner.refresh.clone().lock_owned().await;
        Ok(Some(CredentialRefreshGuard::new(guard)))
    }
}

/// Whether the login files' `path` may be trusted (the compile cache's rule: this user's
/// own, a real directory or file, written by nobody else); the error says what is wrong.
fn trust(path: &Path, is_dir: bool) -> Result<(), String> {
    match crate::file::untrusted(path, is_dir) {
        Some(problem) => Err(format!(
            "refusing to keep logins in {}: {problem}",
            path.display()
        )),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt as _;

    use super::*;
    use rmcp::transport::auth::OAuthTokenResponse;

    fn credentials() -> StoredCredentials {
        let token: OAuthTokenResponse = serde_json::from_value(serde_json::json!({
            "access_token": "at-123", "token_type": "Bearer", "expires_in": 60,
            "refresh_token": "rt-456", "scope": "read"
        }))
        .unwrap_or_else(|e| panic!("{e}"));
        StoredCredentials::new("client".into(), Some(token), vec!["read".into()], Some(1))
    }

    #[tokio::test]
    async fn a_login_is_kept_private_and_per_url() {
        let temp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let dir = temp.path().join("auth");
        let store = FileTokenStore::new(&dir, "notes", "http://127.0.0.1:1/mcp");
        assert!(
            store
                .load()
                .await
                .unwrap_or_else(|e| panic!("{e}"))
                .is_none()
        );
        store
            .save(credentials())
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let mode = |p: &Path| fs::metadata(p).map(|m| m.mode() & 0o777).unwrap_or(0);
        assert_eq!(mode(store.path()), 0o600);
        assert_eq!(mode(&dir), 0o700);
        let loaded = store.load().await.unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(loaded.map(|c| c.client_id).as_deref(), Some("client"));
        let moved = FileTokenStore::new(&dir, "notes", "http://127.0.0.1:2/mcp");
        assert!(
            moved
                .load()
                .await
                .unwrap_or_else(|e| panic!("{e}"))
                .is_none()
        );
        assert_ne!(moved.path(), store.path());
        assert!(store.remove().unwrap_or_else(|e| panic!("{e}")));
        assert!(
            store
                .load()
                .await
                .unwrap_or_else(|e| panic!("{e}"))
                .is_none()
        );
    }

    #[tokio::test]
    async fn a_store_others_can_read_or_write_is_refused_with_the_fix() {
        let temp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let dir = temp.path().join("auth");
        let store = FileTokenStore::new(&dir, "notes", "http://127.0.0.1:1/mcp");
        store
            .save(credentials())
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        fs::set_permissions(store.path(), fs::Permissions::from_mode(0o644))
            .unwrap_or_else(|e| panic!("{e}"));
        let error = store.load().await.unwrap_err().to_string();
        assert!(error.contains("chmod 600"), "{error}");
        fs::set_permissions(store.path(), fs::Permissions::from_mode(0o600))
            .unwrap_or_else(|e| panic!("{e}"));
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o777))
            .unwrap_or_else(|e| panic!("{e}"));
        let error = store.load().await.unwrap_err().to_string();
        assert!(error.contains("chmod go-w"), "{error}");
        assert!(
            !error.contains("at-123") && !error.contains("rt-456"),
            "{error}"
        );
    }
}
