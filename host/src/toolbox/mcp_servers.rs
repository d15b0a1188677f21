//! A toolbox's MCP servers (the `mcp-client` feature): the builder's servers to start, their
//! slots, and the servers a toolbox started.

use std::sync::Arc;

use super::catalog::Slot;
use super::{SkippedSource, Toolbox, ToolboxBuilder, kept};
use crate::error::LoadError;
use crate::mcp::client::{McpClient, McpServerConfig};
use crate::source::SourceOptions;

/// One server's start: its name, whether it is required, its options, and the client.
type Started = (String, bool, SourceOptions, Result<McpClient, LoadError>);

impl ToolboxBuilder {
    /// Adds an MCP server to start (or connect to).
    pub fn mcp_server(mut self, config: McpServerConfig) -> Self {
        self.mcp_servers.push(config);
        self
    }

    /// Adds MCP servers to start.
    pub fn mcp_servers(mut self, configs: impl IntoIterator<Item = McpServerConfig>) -> Self {
        self.mcp_servers.extend(configs);
        self
    }
}

impl Toolbox {
    /// The MCP servers it started from its configs (not those added as sources), in order.
    pub fn mcp_servers(&self) -> impl Iterator<Item = &Arc<McpClient>> {
        self.slots.iter().filter_map(|slot| slot.mcp.as_ref())
    }
}

/// Starts every server of `configs`, concurrently.
pub(super) async fn start(configs: Vec<McpServerConfig>) -> Vec<Started> {
    let starts = configs.into_iter().map(|config| async move {
        let name = config.name.clone();
        let required = config.required;
        let options = config.options.clone();
        (name, required, options, McpClient::connect(config).await)
    });
    futures::future::join_all(starts).await
}

/// A slot for each server that started; one that did not is the error when it is required,
/// else it is left out with a warning and kept in `skipped`.
pub(super) fn add_slots(
    started: Vec<Started>,
    slots: &mut Vec<Slot>,
    skipped: &mut Vec<SkippedSource>,
) -> Result<(), LoadError> {
    for (name, required, options, loaded) in started {
        let Some(server) = kept(name, required, loaded, skipped, |name, error| {
            tracing::warn!(
                mcp_server = %name,
                "left out (not required) because it failed to start: {error}"
            );
        })?
        else {
            continue;
        };
        let server = Arc::new(server);
        slots.push(Slot {
            source: server.clone(),
            options,
            component: None,
            mcp: Some(server),
        });
    }
    Ok(())
}
