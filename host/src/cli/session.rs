//! `host chat --session FILE`: a conversation kept in a file, read at the start and written
//! after every turn (and at every approval pause), so a chat goes on where it stopped.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use toolhost::agent::Conversation;

/// A session file.
pub struct Session {
    path: PathBuf,
}

impl Session {
    pub fn new(path: PathBuf) -> Self {
        Self { path }
    }

    /// The saved conversation, or a new one when the file does not exist. A file that cannot
    /// be read as a conversation is an error, never a silent fresh start.
    pub fn load(&self) -> anyhow::Result<Option<Conversation>> {
        let text = match std::fs::read_to_string(&self.path) {
            Ok(text) => text,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(error) => {
                return Err(error)
                    .with_context(|| format!("cannot read the session {}", self.path.display()));
            }
        };
        Conversation::from_json(&text).map(Some).with_context(|| {
            format!(
                "cannot resume the session {}; move it away (or give another --session file) \
                 to start a new conversation",
                self.path.display()
            )
        })
    }

    /// Writes `conversation`, replacing the file at once (a reader never sees half of it);
    /// the file is readable by its owner only.
    pub fn save(&self, conversation: &Conversation) -> anyhow::Result<()> {
        let text = serde_json::to_string_pretty(conversation)?;
        write_atomically(&self.path, text.as_bytes())
            .with_context(|| format!("cannot save the session {}", self.path.display()))
    }
}

fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let mut file = tempfile::NamedTempFile::new_in(dir)?;
    file.write_all(bytes)?;
    file.write_all(b"\n")?;
    file.as_file().sync_all()?;
    file.persist(path).map_err(|error| error.error)?;
    Ok(())
}
