//! Waiting for the tools of a toolbox to change: [`ToolChanges`].

use futures::future::select_all;
use tokio::sync::watch;

/// Where a toolbox's users wait for its tools to change (an MCP server's changed list, taken
/// in): made by [`Toolbox::changes`](super::Toolbox::changes). A change that happens while
/// nobody waits is not lost: the next [`changed`](Self::changed) returns at once.
pub struct ToolChanges {
    /// One per source that can change its tools.
    sources: Vec<watch::Receiver<u64>>,
}

impl ToolChanges {
    pub(super) fn new(sources: impl IntoIterator<Item = watch::Receiver<u64>>) -> Self {
        let mut sources: Vec<_> = sources.into_iter().collect();
        for source in &mut sources {
            source.mark_unchanged();
        }
        Self { sources }
    }

    /// Returns once the tools of a source changed since this was made or last returned
    /// (then [`Toolbox::catalog`](super::Toolbox::catalog) has them); `false` when no source
    /// can change its tools any more (none could, or they are gone with their toolbox).
    pub async fn changed(&mut self) -> bool {
        loop {
            if self.sources.is_empty() {
                return false;
            }
            let waits = self
                .sources
                .iter_mut()
                .map(|source| Box::pin(source.changed()));
            let (outcome, at, _) = select_all(waits).await;
            match outcome {
                Ok(()) => {
                    // Whatever else changed meanwhile is in the same catalog.
                    for source in &mut self.sources {
                        source.mark_unchanged();
                    }
                    return true;
                }
                // Its source is gone: it changes no more.
                Err(_) => {
                    self.sources.swap_remove(at);
                }
            }
        }
    }

    /// Whether any source can still change its tools.
    pub fn can_change(&self) -> bool {
        !self.sources.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_change_made_while_nobody_waits_is_seen_by_the_next_wait() {
        let (first, first_rx) = watch::channel(0_u64);
        let (_second, second_rx) = watch::channel(0_u64);
        let mut changes = ToolChanges::new([first_rx, second_rx]);
        first.send_modify(|g| *g += 1);
        first.send_modify(|g| *g += 1);
        assert!(changes.changed().await);
        let again = tokio::time::timeout(std::time::Duration::from_millis(50), changes.changed());
        assert!(
            again.await.is_err(),
            "two changes before one wait are one change"
        );
    }

    #[tokio::test]
    async fn sources_that_are_gone_change_no_more() {
        let (first, first_rx) = watch::channel(0_u64);
        let mut changes = ToolChanges::new([first_rx]);
        drop(first);
        assert!(!changes.changed().await);
        assert!(!changes.can_change());
        assert!(!ToolChanges::new([]).changed().await);
    }
}
