//! Directories granted per caller: a directory grant whose host path ends in `{sub}` (or
//! `{client_id}`) gives each verified caller of `host mcp` a directory of its own under the
//! granted parent, made on its first call, so that one shared tool (a notes tool, say) keeps
//! each caller's files apart.
//!
//! The caller's value becomes one path component, and only after it is checked: an empty
//! value, one over [`MAX_NAME`] bytes, `.`, or one that holds `/`, `\`, `..`, a NUL or
//! another control character is refused, never turned into a path. The directory made is
//! then checked to be a directory right under the parent (not a link out of it). A call
//! without a verified caller (stdio, a static token, the library) has no such directory: the
//! call is refused, naming the grant, rather than sharing one directory among all of them.

use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use wasmtime_wasi::FsPerms;

use crate::caller::Caller;

/// The longest caller value that names a directory, in bytes (file systems allow 255).
pub const MAX_NAME: usize = 200;

/// What names a caller's directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Placeholder {
    /// `{sub}`: the token's subject.
    Subject,
    /// `{client_id}`: the application the token was issued to.
    ClientId,
}

/// A granted directory with a caller's directory in it, checked at load.
#[derive(Debug, Clone)]
pub(crate) struct CallerDir {
    /// The directory the callers' directories are made in (canonical).
    parent: PathBuf,
    placeholder: Placeholder,
    /// Where the tool sees the caller's directory.
    pub(super) guest: String,
    pub(super) perms: FsPerms,
    /// The grant as written, for messages.
    grant: String,
}

impl CallerDir {
    /// The per-caller directory `host` grants, if its last component is a placeholder; an
    /// error names a placeholder that is not one, or a parent that cannot be used.
    pub(super) fn from_grant(
        host: &Path,
        guest: &str,
        perms: FsPerms,
    ) -> Option<Result<Self, String>> {
        let last = host.file_name()?.to_str()?;
        let name = last.strip_prefix('{')?.strip_suffix('}')?;
        let grant = host.display().to_string();
        let placeholder = match name {
            "sub" => Placeholder::Subject,
            "client_id" => Placeholder::ClientId,
            other => {
                return Some(Err(format!(
                    "granted directory {grant} ends in `{{{other}}}`, which names nothing; a \
                     directory per caller is `{{sub}}` or `{{client_id}}`"
                )));
            }
        };
        let parent = host.parent().unwrap_or(Path::new("."));
        let parent = match parent.canonicalize() {
            Ok(parent) if parent.is_dir() => parent,
            Ok(_) => return Some(Err(format!("{} is not a directory", parent.display()))),
            Err(e) => {
                return Some(Err(format!(
                    "the directory {} that {grant} makes callers' directories in cannot be \
                     used ({e}); create it or fix the path",
                    parent.display()
                )));
            }
        };
        Some(Ok(Self {
            parent,
            placeholder,
            guest: guest.to_owned(),
            perms,
            grant,
        }))
    }

    /// The same directory seen under `guest` as well (the working directory `.`).
    pub(super) fn seen_as(&self, guest: &str) -> Self {
        Self {
            guest: guest.to_owned(),
            ..self.clone()
        }
    }

    /// `caller`'s directory, made if it is not there yet; or why there is none, for the
    /// operator.
    pub(super) fn resolve(&self, caller: Option<&Caller>) -> Result<PathBuf, String> {
        let Some(caller) = caller else {
            return Err(format!(
                "granted directory {} is a directory per caller, and this call has no \
                 verified caller (serve the tool over HTTP with access tokens, or grant a \
                 fixed directory)",
                self.grant
            ));
        };
        let (what, value) = match self.placeholder {
            Placeholder::Subject => ("subject (sub)", Some(caller.subject.as_str())),
            Placeholder::ClientId => ("client_id", caller.client_id.as_deref()),
        };
        let Some(value) = value else {
            return Err(format!(
                "granted directory {} needs the caller's {what}, and its token has none",
                self.grant
            ));
        };
        let name = directory_name(value).map_err(|problem| {
            format!(
                "the caller's {what} cannot name a directory of {}: {problem}",
                self.grant
            )
        })?;
        let path = self.parent.join(name);
        match std::fs::create_dir(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == ErrorKind::AlreadyExists => {}
            Err(e) => return Err(format!("cannot make {} ({e})", path.display())),
        }
        // Made, or there before: it must be a directory right under the parent, not a link
        // to somewhere else.
        let canonical = path
            .canonicalize()
            .map_err(|e| format!("cannot use {} ({e})", path.display()))?;
        if canonical.parent() != Some(self.parent.as_path()) || !canonical.is_dir() {
            return Err(format!(
                "{} is not a directory of {} (a link out of it?); remove it",
                path.display(),
                self.parent.display()
            ));
        }
        Ok(canonical)
    }
}

/// `value` as one directory name, or why it cannot be one.
pub fn directory_name(value: &str) -> Result<&str, String> {
    if value.is_empty() {
        return Err("it is empty".to_owned());
    }
    if value.len() > MAX_NAME {
        return Err(format!("it is {} bytes long, over {MAX_NAME}", value.len()));
    }
    if value == "." || value.contains("..") {
        return Err("it is or holds `.` or `..`".to_owned());
    }
    if let Some(bad) = value
        .chars()
        .find(|c| matches!(c, '/' | '\\') || c.is_control())
    {
        return Err(format!("it holds {bad:?}"));
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caller(subject: &str) -> Caller {
        Caller {
            subject: subject.to_owned(),
            issuer: "https://issuer.example".to_owned(),
            ..Caller::default()
        }
    }

    fn notes(parent: &Path) -> CallerDir {
        match CallerDir::from_grant(&parent.join("{sub}"), "/notes", FsPerms::ReadWrite) {
            Some(Ok(dir)) => dir,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn each_caller_gets_its_own_directory_made_on_first_use() {
        let parent = tempfile::tempdir().expect("a temporary directory");
        let dir = notes(parent.path());
        let alice = dir.resolve(Some(&caller("alice"))).expect("alice's");
        let bob = dir
            .resolve(Some(&caller("bob@example.com")))
            .expect("bob's");
        assert_ne!(alice, bob);
        assert!(alice.is_dir() && bob.is_dir());
        assert_eq!(alice.file_name().and_then(|n| n.to_str()), Some("alice"));
        assert_eq!(dir.resolve(Some(&caller("alice"))).ok(), Some(alice));
        let local = dir.resolve(None).expect_err("no caller");
        assert!(local.contains("no verified caller"), "{local}");
    }

    #[test]
    fn hostile_subjects_never_become_paths() {
        let parent = tempfile::tempdir().expect("a temporary directory");
        let dir = notes(parent.path());
        let long = "a".repeat(MAX_NAME + 1);
        for hostile in [
            "", ".", "..", "../bob", "a/b", "/etc", "a\\b", "a\0b", "x\ny", &long,
        ] {
            let refused = dir.resolve(Some(&caller(hostile)));
            assert!(refused.is_err(), "{hostile:?} was accepted: {refused:?}");
        }
        // Nothing was made for them.
        let made = std::fs::read_dir(parent.path()).expect("readable").count();
        assert_eq!(made, 0);
    }

    #[cfg(unix)]
    #[test]
    fn a_link_out_of_the_parent_is_refused() {
        let parent = tempfile::tempdir().expect("a temporary directory");
        let elsewhere = tempfile::tempdir().expect("another directory");
        std::os::unix::fs::symlink(elsewhere.path(), parent.path().join("mallory"))
            .expect("a link");
        let refused = notes(parent.path()).resolve(Some(&caller("mallory")));
        assert!(refused.is_err_and(|e| e.contains("a link out of it")));
    }

    #[test]
    fn only_known_placeholders_make_a_directory_per_caller() {
        let parent = tempfile::tempdir().expect("a temporary directory");
        let grant = |last: &str| {
            CallerDir::from_grant(&parent.path().join(last), "/d", FsPerms::ReadOnly)
                .map(|made| made.map(|_| ()))
        };
        assert!(grant("plain").is_none());
        assert!(grant("{client_id}").is_some_and(|made| made.is_ok()));
        assert!(grant("{user}").is_some_and(|made| made.is_err_and(|e| e.contains("{user}"))));
        let missing =
            CallerDir::from_grant(Path::new("/no/such/dir/{sub}"), "/d", FsPerms::ReadOnly);
        assert!(missing.is_some_and(|made| made.is_err_and(|e| e.contains("create it"))));
    }
}
