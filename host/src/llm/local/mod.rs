//! The local model: llama.cpp's `llama-server` with Gemma 3 270M, started as a child process
//! on a free 127.0.0.1 port with this project's chat template, and stopped with the host; and
//! the rules that make up for its size ([`SmallModelRules`]), which the tool loop applies
//! through [`ModelRules`]:
//! - selection hints (`selection_hints.rs`): places, weekdays, words as written;
//! - its requests adapted (`adapt.rs`): parameters held to the values of the conversation
//!   (`conversation_values.rs`), sampling against repetition when it answers, and its answer
//!   to a tool's result held to one of the result's values (`answer_grammar.rs`).
//!
//! `just setup` (scripts/setup-local-llm.sh) builds the server and assembles the weights into
//! the cache; see docs/local-model.md for the flags and why they are needed.

mod adapt;
mod answer_grammar;
mod conversation_values;
mod selection_hints;

use std::collections::VecDeque;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use futures::future::BoxFuture;

use super::{ChatRequest, ChatResponse, Hint, LocalFormat, ModelRules, Provider, ProviderError};
use crate::process::die_with_parent;
use crate::spec::ToolSpec;

/// The chat template that teaches the base model to call tools (Hermes style, which
/// llama-server's tool-call parser reads).
pub const CHAT_TEMPLATE: &str = include_str!("gemma3-tools.jinja");

/// The model the setup script assembles.
pub const MODEL_FILE: &str = "gemma-3-270m-q4_k_m.gguf";

/// The name the server reports the model under.
pub const MODEL_NAME: &str = "gemma-3-270m";

/// Where the server and model are, and how to run them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalServerConfig {
    /// The `llama-server` binary.
    pub server: PathBuf,
    /// The GGUF model file.
    pub model: PathBuf,
    /// CPU threads for generation.
    pub threads: usize,
    /// Context size in tokens.
    pub context: u32,
    /// How long to wait for the server to load the model.
    pub startup_timeout: Duration,
}

impl Default for LocalServerConfig {
    /// The server and model in the cache (`$TOOLHOST_CACHE/llama`, by default
    /// `~/.cache/toolhost/llama`), or where `TOOLHOST_LLAMA_SERVER` and `TOOLHOST_LLAMA_MODEL`
    /// point.
    fn default() -> Self {
        let root = crate::engine::cache::default_cache_dir()
            .and_then(|components| components.parent().map(|p| p.join("llama")))
            .unwrap_or_else(|| PathBuf::from("llama"));
        let env_path = |name: &str| {
            std::env::var_os(name)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        Self {
            server: env_path("TOOLHOST_LLAMA_SERVER")
                .unwrap_or_else(|| root.join("bin/llama-server")),
            model: env_path("TOOLHOST_LLAMA_MODEL")
                .unwrap_or_else(|| root.join("models").join(MODEL_FILE)),
            threads: std::thread::available_parallelism().map_or(2, |n| n.get().min(4)),
            context: 4096,
            startup_timeout: Duration::from_secs(120),
        }
    }
}

/// A running `llama-server`. Dropping it kills the server.
#[derive(Debug)]
pub struct LocalServer {
    child: Child,
    base_url: String,
    _template: tempfile::NamedTempFile,
}

impl Drop for LocalServer {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
    }
}

impl LocalServer {
    /// Starts the server and waits until it has loaded the model.
    pub async fn start(config: &LocalServerConfig) -> Result<Self, ProviderError> {
        for (what, path) in [
            ("llama-server", &config.server),
            ("the model", &config.model),
        ] {
            if !path.exists() {
                return Err(ProviderError::Local {
                    message: format!(
                        "{what} is not at {}; run `just setup` (or scripts/setup-local-llm.sh) \
                         to build and fetch it",
                        path.display()
                    ),
                });
            }
        }
        let local = |message: String| ProviderError::Local { message };
        let template = tempfile::Builder::new()
            .prefix("toolhost-chat-template-")
            .suffix(".jinja")
            .tempfile()
            .and_then(|mut file| {
                std::io::Write::write_all(&mut file, CHAT_TEMPLATE.as_bytes())?;
                Ok(file)
            })
            .map_err(|e| local(format!("cannot write the chat template: {e}")))?;
        let port = free_port().map_err(|e| local(format!("cannot find a free port: {e}")))?;

        let mut command = Command::new(&config.server);
        command
            .arg("--model")
            .arg(&config.model)
            .args(["--host", "127.0.0.1", "--port", &port.to_string()])
            .arg("--jinja")
            .arg("--chat-template-file")
            .arg(template.path())
            // Stop after one tool call; let <end_of_turn> end answers; ban the token
            // "response" so the model does not write its own <tool_response>.
            .args(["-r", "</tool_call>", "-l", "106+15", "-l", "6275-inf"])
            .args([
                "-np",
                "1",
                "--cache-ram",
                "0",
                "-c",
                &config.context.to_string(),
            ])
            .args([
                "-t",
                &config.threads.to_string(),
                "--no-webui",
                "-a",
                MODEL_NAME,
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        die_with_parent(&mut command);
        let mut child = command
            .spawn()
            .map_err(|e| local(format!("cannot start {}: {e}", config.server.display())))?;
        let log = capture_log(&mut child);

        let base_url = format!("http://127.0.0.1:{port}");
        let mut server = Self {
            child,
            base_url,
            _template: template,
        };
        server.wait_ready(config.startup_timeout, &log).await?;
        Ok(server)
    }

    /// `http://127.0.0.1:PORT`: the Anthropic-format base URL; the OpenAI one is this plus
    /// `/v1`.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    async fn wait_ready(&mut self, limit: Duration, log: &Log) -> Result<(), ProviderError> {
        let started = Instant::now();
        let builder = crate::tls::client_builder().map_err(|source| ProviderError::CaBundle {
            server: self.base_url.clone(),
            source,
        })?;
        let client = builder.build().map_err(|source| ProviderError::Client {
            server: self.base_url.clone(),
            source,
        })?;
        let health = format!("{}/health", self.base_url);
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(ProviderError::Local {
                    message: format!(
                        "llama-server exited ({status}) while starting; its last words: {}",
                        log.tail()
                    ),
                });
            }
            let answer = client
                .get(&health)
                .timeout(Duration::from_secs(2))
                .send()
                .await;
            if answer.is_ok_and(|response| response.status().is_success()) {
                tracing::info!(url = %self.base_url, took = ?started.elapsed(), "llama-server ready");
                return Ok(());
            }
            if started.elapsed() > limit {
                return Err(ProviderError::Local {
                    message: format!(
                        "llama-server was not ready after {}; its last words: {}",
                        humantime::format_duration(limit),
                        log.tail()
                    ),
                });
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

/// The local model as a [`Provider`]: the provider that talks to a [`LocalServer`], and the
/// server itself, which stops when this is dropped (with the last clone of the `Arc` the
/// agent holds). Its [`rules`](Provider::rules) are [`SmallModelRules`].
pub struct LocalModel {
    server: LocalServer,
    provider: Arc<dyn Provider>,
    rules: SmallModelRules,
}

impl LocalModel {
    /// `provider`, talking to `server` in `format`.
    pub fn new(server: LocalServer, provider: Arc<dyn Provider>, format: LocalFormat) -> Self {
        Self {
            server,
            provider,
            rules: SmallModelRules::new(format),
        }
    }

    /// The server.
    pub fn server(&self) -> &LocalServer {
        &self.server
    }
}

impl Provider for LocalModel {
    fn describe(&self) -> String {
        format!("the local model ({})", self.provider.describe())
    }

    fn chat<'a>(
        &'a self,
        request: &'a ChatRequest,
        on_text: &'a mut (dyn FnMut(&str) + Send),
    ) -> BoxFuture<'a, Result<ChatResponse, ProviderError>> {
        if self.rules.holds_answers {
            Box::pin(answer_held(self.provider.as_ref(), request, on_text))
        } else {
            self.provider.chat(request, on_text)
        }
    }

    fn rules(&self) -> Arc<dyn ModelRules> {
        Arc::new(self.rules)
    }
}

/// `provider`'s reply to `request`, where no answer to tool results is free: a round that
/// answers them is either held to their values already (`adapt` gave it a grammar), or left
/// free for the model to mend a failed call; should the model answer such a round with text
/// instead of a call, that text is dropped (it was never passed on) and the round asked
/// again, held to the values of the run's results. So the model's answer after a tool result
/// can state no value that no tool returned.
async fn answer_held(
    provider: &dyn Provider,
    request: &ChatRequest,
    on_text: &mut (dyn FnMut(&str) + Send),
) -> Result<ChatResponse, ProviderError> {
    let free_answer = !request.extra.contains_key("grammar")
        && matches!(
            request.messages.last(),
            Some(super::Message::ToolResult { .. })
        );
    if !free_answer {
        return provider.chat(request, on_text).await;
    }
    let reply = provider.chat(request, &mut |_| {}).await?;
    if !reply.tool_calls.is_empty() {
        return Ok(reply);
    }
    match adapt::held(request) {
        Some(held) => provider.chat(&held, on_text).await,
        // Not reached: a request that ends with a tool result always has a grammar.
        None => Ok(reply),
    }
}

/// The rules of the local small model (Gemma 3 270M), which cannot find a tool, copy a value
/// or state a result reliably on its own: tool selection gets hints (places, weekdays, words
/// as written), and its requests get parameters held to the conversation's values, sampling
/// against repetition on the rounds that answer, and answers held to a result's values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SmallModelRules {
    /// Whether the answers to tools' results are held to their values: only through the
    /// OpenAI format, where llama-server takes a grammar (its Anthropic endpoint drops it).
    holds_answers: bool,
}

impl SmallModelRules {
    /// The rules for the local model spoken to in `format`.
    pub fn new(format: LocalFormat) -> Self {
        Self {
            holds_answers: format == LocalFormat::OpenAi,
        }
    }
}

impl ModelRules for SmallModelRules {
    fn tool_hints(&self, tool: &ToolSpec, add: &mut dyn FnMut(Hint, f32)) {
        selection_hints::tool_hints(tool, add);
    }

    fn request_hints(&self, text: &str, add: &mut dyn FnMut(Hint)) {
        selection_hints::request_hints(text, add);
    }

    fn adapt(&self, request: &ChatRequest) -> Option<ChatRequest> {
        adapt::adapted(request, self.holds_answers)
    }
}

/// The last lines the server wrote to stderr, for error messages.
#[derive(Debug, Clone, Default)]
struct Log(Arc<Mutex<VecDeque<String>>>);

impl Log {
    fn tail(&self) -> String {
        let lines = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if lines.is_empty() {
            return "(nothing)".to_owned();
        }
        lines.iter().cloned().collect::<Vec<_>>().join(" | ")
    }
}

fn capture_log(child: &mut Child) -> Log {
    let log = Log::default();
    if let Some(stderr) = child.stderr.take() {
        let log = log.clone();
        tokio::spawn(async move {
            let mut lines = BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                tracing::debug!(target: "toolhost::llama_server", "{line}");
                let mut kept = log.0.lock().unwrap_or_else(|e| e.into_inner());
                kept.push_back(line);
                if kept.len() > 5 {
                    kept.pop_front();
                }
            }
        });
    }
    log
}

fn free_port() -> std::io::Result<u16> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok(listener.local_addr()?.port())
}

#[cfg(test)]
mod tests {
    use serde_json::{Map, json};

    use super::*;
    use crate::llm::{FinishReason, Message, ToolCall, ToolChoice, ToolDefinition};

    /// Plays the model: answers each request with the next of `replies`, as text streamed
    /// whole, and keeps the requests.
    struct Scripted {
        replies: Mutex<VecDeque<ChatResponse>>,
        asked: Mutex<Vec<ChatRequest>>,
    }

    impl Provider for Scripted {
        fn describe(&self) -> String {
            "a scripted model".into()
        }

        fn chat<'a>(
            &'a self,
            request: &'a ChatRequest,
            on_text: &'a mut (dyn FnMut(&str) + Send),
        ) -> BoxFuture<'a, Result<ChatResponse, ProviderError>> {
            self.asked.lock().unwrap().push(request.clone());
            let reply = self.replies.lock().unwrap().pop_front().expect("a reply");
            on_text(&reply.text);
            Box::pin(async move { Ok(reply) })
        }
    }

    fn text(text: &str) -> ChatResponse {
        ChatResponse {
            text: text.into(),
            tool_calls: Vec::new(),
            finish: FinishReason::Stop,
            usage: None,
        }
    }

    fn scripted(replies: Vec<ChatResponse>) -> Scripted {
        Scripted {
            replies: Mutex::new(replies.into()),
            asked: Mutex::new(Vec::new()),
        }
    }

    /// The round after a failed `list_files` call, as `adapt` leaves it: free, tools offered.
    fn after_a_failure() -> ChatRequest {
        let request = ChatRequest {
            messages: vec![
                Message::user("list the files in /data"),
                Message::Assistant {
                    text: String::new(),
                    tool_calls: vec![ToolCall {
                        id: "1".into(),
                        name: "list_files".into(),
                        arguments: r#"{"path": "/dta"}"#.into(),
                    }],
                },
                Message::ToolResult {
                    call_id: "1".into(),
                    name: "list_files".into(),
                    content: "no such directory: /dta".into(),
                    is_error: true,
                    images: Vec::new(),
                },
            ],
            tools: vec![ToolDefinition {
                name: "list_files".into(),
                description: "Lists a directory.".into(),
                parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
            }],
            tool_choice: ToolChoice::Auto,
            temperature: Some(0.0),
            max_tokens: Some(100),
            stream: true,
            extra: Map::new(),
        };
        adapt::adapted(&request, true).expect("an answering round")
    }

    #[tokio::test]
    async fn text_that_answers_a_result_freely_is_dropped_and_asked_for_again_held() {
        let request = after_a_failure();
        assert!(
            !request.extra.contains_key("grammar"),
            "free to mend its call"
        );
        // What the model answered such a round with: the time in the chat template's
        // worked example, which no tool returned.
        let model = scripted(vec![
            text("The result is 09:41."),
            text("The call failed: no such directory: /dta."),
        ]);
        let mut shown = String::new();
        let reply = answer_held(&model, &request, &mut |t| shown.push_str(t))
            .await
            .unwrap();
        assert_eq!(reply.text, "The call failed: no such directory: /dta.");
        assert_eq!(shown, reply.text, "the free text never reached the caller");
        let asked = model.asked.lock().unwrap();
        assert_eq!(asked.len(), 2);
        assert_eq!(
            asked[1].extra["grammar"],
            json!("root ::= \"The call failed: no such directory: /dta.\"\n"),
            "asked again, held to what the run's results hold"
        );
        assert!(asked[1].tools.is_empty());
    }

    #[tokio::test]
    async fn a_mended_call_and_a_held_answer_go_through_once() {
        let request = after_a_failure();
        let mended = ChatResponse {
            tool_calls: vec![ToolCall {
                id: "2".into(),
                name: "list_files".into(),
                arguments: r#"{"path": "/data"}"#.into(),
            }],
            finish: FinishReason::ToolCalls,
            ..text("")
        };
        let model = scripted(vec![mended]);
        let reply = answer_held(&model, &request, &mut |_| {}).await.unwrap();
        assert_eq!(reply.tool_calls.len(), 1);
        assert_eq!(model.asked.lock().unwrap().len(), 1);

        let mut held = request.clone();
        held.messages.push(Message::Assistant {
            text: String::new(),
            tool_calls: reply.tool_calls.clone(),
        });
        held.messages.push(Message::ToolResult {
            call_id: "2".into(),
            name: "list_files".into(),
            content: r#"["a.csv"]"#.into(),
            is_error: false,
            images: Vec::new(),
        });
        let held = adapt::adapted(&held, true).expect("held");
        let model = scripted(vec![text("The result is a.csv.")]);
        let mut shown = String::new();
        let reply = answer_held(&model, &held, &mut |t| shown.push_str(t))
            .await
            .unwrap();
        assert_eq!(
            (reply.text.as_str(), shown.as_str()),
            ("The result is a.csv.", "The result is a.csv.")
        );
        assert_eq!(
            model.asked.lock().unwrap().len(),
            1,
            "held already: asked once"
        );
    }
}
