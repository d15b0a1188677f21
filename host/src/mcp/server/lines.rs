//! JSON-RPC messages written one per line: what the stdio transport and the `tools/call`
//! requests it serves directly both write to the client.

use std::io;

use rmcp::RoleServer;
use rmcp::service::TxJsonRpcMessage;
use tokio::io::{AsyncWrite, AsyncWriteExt as _};
use tokio::sync::Mutex;

/// Writes `message` to `output` as one line, and flushes it.
pub(super) async fn write<W: AsyncWrite + Unpin>(
    output: &Mutex<W>,
    message: &TxJsonRpcMessage<RoleServer>,
) -> io::Result<()> {
    let mut line = Vec::new();
    encode_line(&mut line, message)?;
    write_lines(output, &line).await
}

/// Appends `message` to `lines` as one line of JSON.
pub(super) fn encode_line(
    lines: &mut Vec<u8>,
    message: &TxJsonRpcMessage<RoleServer>,
) -> io::Result<()> {
    serde_json::to_writer(&mut *lines, message)?;
    lines.push(b'\n');
    Ok(())
}

/// Writes `lines` to `output` at once, and flushes it.
pub(super) async fn write_lines<W: AsyncWrite + Unpin>(
    output: &Mutex<W>,
    lines: &[u8],
) -> io::Result<()> {
    let mut output = output.lock().await;
    output.write_all(lines).await?;
    output.flush().await
}
