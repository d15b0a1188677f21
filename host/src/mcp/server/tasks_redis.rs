//! Tasks kept in Redis (`[mcp.tasks] store = "redis://..."`, the `redis-tasks` feature), so
//! that replicas of `host mcp --http` share them: a task started through one replica is
//! polled, answered and cancelled through any other, and its result outlives the replica
//! that ran it.
//!
//! The call itself runs on the replica that started it. Everything else is in Redis, under
//! `toolhost:task:{id}` and beside it:
//!
//! - `toolhost:task:{id}` (a hash): the owner (the caller's key), the status, the times, the
//!   TTL and poll interval, the status message, the pending `inputRequests`, and at the end
//!   the `result` or `error` (JSON); `cancel` once a `tasks/cancel` arrived.
//! - `toolhost:task:{id}:answers` (a hash): the answers `tasks/update` brought, by key, until
//!   the running call takes them.
//! - `toolhost:task:{id}:lease` (a string with an expiry): the running replica renews it every
//!   [`BEAT`]; when it has lapsed ([`LEASE`]) while the task is still working, the replica is
//!   gone, and the next `tasks/get` (on any replica) settles the task as `failed`, saying so.
//! - `toolhost:tasks` and `toolhost:tasks:{owner}` (sorted sets, scored by expiry): what the
//!   caps of `[mcp.tasks]` count.
//!
//! Every key expires with the task's TTL (`PEXPIRE`), so Redis removes expired tasks itself.
//! The running replica learns of answers and of a cancellation at its next beat.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use redis::aio::ConnectionManager;
use rmcp::ErrorData;
use rmcp::model::{
    CallToolResult, DetailedTask, InputRequest as McpRequest, Task, TaskPayload, TaskStatus,
};
use rmcp::task_manager::{TaskExit, current_timestamp};
use serde_json::{Map, Value};
use tokio::sync::OnceCell;
use tokio_util::sync::CancellationToken;

use super::lock;
use super::running::{Running, check_caps, unknown_task};

/// How long a running replica's lease lasts without renewal.
pub(super) const LEASE: Duration = Duration::from_secs(3);

/// How often a running replica renews its lease, saves the status message, and looks for
/// answers and a cancellation.
const BEAT: Duration = Duration::from_millis(200);

/// Tasks in the Redis at one URL.
pub(super) struct RedisTasks {
    url: String,
    client: redis::Client,
    connection: OnceCell<ConnectionManager>,
}

fn key(id: &str) -> String {
    format!("toolhost:task:{id}")
}

fn stored(error: redis::RedisError, url: &str) -> ErrorData {
    ErrorData::internal_error(
        format!("the task store (Redis at {url}) failed: {error}"),
        None,
    )
}

/// Settles a task as failed when it is still working and its lease has lapsed (KEYS[1] the
/// task, KEYS[2] its lease; ARGV[1] the error, ARGV[2] the time).
const LAPSED: &str = r"
local status = redis.call('HGET', KEYS[1], 'status')
if (status == 'working' or status == 'input_required') and redis.call('EXISTS', KEYS[2]) == 0 then
  redis.call('HSET', KEYS[1], 'status', 'failed', 'error', ARGV[1], 'last_updated_at', ARGV[2])
  redis.call('HDEL', KEYS[1], 'input_requests')
end
return 1
";

impl RedisTasks {
    /// The store at `url` (`redis://host:port/db`); connected at its first use.
    pub(super) fn new(url: &str) -> Result<Self, String> {
        let client = redis::Client::open(url).map_err(|e| {
            format!("`{url}` is not a Redis URL ({e}); write it like `redis://127.0.0.1:6379/0`")
        })?;
        Ok(Self {
            url: url.to_owned(),
            client,
            connection: OnceCell::new(),
        })
    }

    async fn connection(&self) -> Result<ConnectionManager, ErrorData> {
        let connection = self
            .connection
            .get_or_try_init(|| ConnectionManager::new(self.client.clone()))
            .await
            .map_err(|e| stored(e, &self.url))?;
        Ok(connection.clone())
    }

    /// Counts `owner`'s tasks and all, forgetting the expired; an error naming the cap that
    /// is full.
    pub(super) async fn admit(
        &self,
        owner: &str,
        per_caller: usize,
        max: usize,
    ) -> Result<(), ErrorData> {
        let mut connection = self.connection().await?;
        let now = now_ms();
        let (_, all, _, mine): ((), usize, (), usize) = redis::pipe()
            .zrembyscore("toolhost:tasks", "-inf", now)
            .zcard("toolhost:tasks")
            .zrembyscore(owner_key(owner), "-inf", now)
            .zcard(owner_key(owner))
            .query_async(&mut connection)
            .await
            .map_err(|e| stored(e, &self.url))?;
        check_caps(all, mine, per_caller, max)
    }

    /// Stores `task` of `owner`, working, leased to this replica; its keys expire with it.
    pub(super) async fn create(&self, task: &Task, owner: &str) -> Result<(), ErrorData> {
        let mut connection = self.connection().await?;
        let ttl = task.ttl_ms.unwrap_or(u64::MAX / 4);
        let expiry = now_ms().saturating_add(ttl);
        let id = &task.task_id;
        let mut fields = vec![
            ("owner", owner.to_owned()),
            ("status", "working".to_owned()),
            ("created_at", task.created_at.clone()),
            ("last_updated_at", task.last_updated_at.clone()),
            ("ttl_ms", ttl.to_string()),
        ];
        if let Some(poll) = task.poll_interval_ms {
            fields.push(("poll_interval_ms", poll.to_string()));
        }
        let lease = u64::try_from(LEASE.as_millis()).unwrap_or(3000);
        let mut pipe = redis::pipe();
        pipe.hset_multiple(key(id), &fields)
            .pexpire(key(id), ttl as i64)
            .set_options(
                format!("{}:lease", key(id)),
                "running",
                redis::SetOptions::default().with_expiration(redis::SetExpiry::PX(lease)),
            )
            .zadd("toolhost:tasks", id, expiry)
            .zadd(owner_key(owner), id, expiry);
        // The sets expire with their newest task (NX gives a new set its expiry, GT moves
        // it later).
        for set in ["toolhost:tasks".to_owned(), owner_key(owner)] {
            for condition in ["NX", "GT"] {
                pipe.cmd("PEXPIRE")
                    .arg(&set)
                    .arg(ttl)
                    .arg(condition)
                    .ignore();
            }
        }
        pipe.query_async::<()>(&mut connection)
            .await
            .map_err(|e| stored(e, &self.url))
    }

    /// The task's fields, if `owner` owns it; an unknown task otherwise.
    async fn owned(&self, id: &str, owner: &str) -> Result<HashMap<String, String>, ErrorData> {
        let mut connection = self.connection().await?;
        let fields: HashMap<String, String> = redis::cmd("HGETALL")
            .arg(key(id))
            .query_async(&mut connection)
            .await
            .map_err(|e| stored(e, &self.url))?;
        match fields.get("owner") {
            Some(stored_owner) if stored_owner == owner => Ok(fields),
            _ => Err(unknown_task(id)),
        }
    }

    /// `tasks/get`: the task as stored, settled `failed` first if its replica is gone.
    pub(super) async fn get(&self, id: &str, owner: &str) -> Result<DetailedTask, ErrorData> {
        let fields = self.owned(id, owner).await?;
        let running = matches!(
            fields.get("status").map(String::as_str),
            Some("working" | "input_required")
        );
        if !running {
            return detailed(id, &fields);
        }
        let error = ErrorData::internal_error(
            "the replica running this task stopped (its lease in the task store lapsed); \
             the call did not finish: start it again",
            None,
        );
        let mut connection = self.connection().await?;
        redis::Script::new(LAPSED)
            .key(key(id))
            .key(format!("{}:lease", key(id)))
            .arg(serde_json::to_string(&error).unwrap_or_default())
            .arg(current_timestamp())
            .invoke_async::<i64>(&mut connection)
            .await
            .map_err(|e| stored(e, &self.url))?;
        let fields = self.owned(id, owner).await?;
        detailed(id, &fields)
    }

    /// `tasks/update`: the answers to questions the task asks wait in Redis for the running
    /// replica to take them (answers to others are ignored); the questions answered leave
    /// the task's `inputRequests` at once, so that the next `tasks/get`, on any replica,
    /// shows only those still waiting.
    pub(super) async fn update(
        &self,
        id: &str,
        owner: &str,
        responses: BTreeMap<String, Value>,
    ) -> Result<(), ErrorData> {
        let fields = self.owned(id, owner).await?;
        let mut asked: Map<String, Value> = (fields.get("input_requests"))
            .and_then(|text| serde_json::from_str(text).ok())
            .unwrap_or_default();
        let answers: Vec<(String, String)> = (responses.into_iter())
            .filter(|(k, _)| asked.remove(k).is_some())
            .map(|(k, v)| (k, v.to_string()))
            .collect();
        if answers.is_empty() {
            return Ok(());
        }
        let ttl = fields
            .get("ttl_ms")
            .and_then(|t| t.parse::<i64>().ok())
            .unwrap_or(3_600_000);
        let status = if asked.is_empty() {
            "working"
        } else {
            "input_required"
        };
        let still = Value::Object(asked).to_string();
        let mut connection = self.connection().await?;
        redis::pipe()
            .hset_multiple(format!("{}:answers", key(id)), &answers)
            .pexpire(format!("{}:answers", key(id)), ttl)
            .hset(key(id), "input_requests", still)
            .hset(key(id), "status", status)
            .hset(key(id), "last_updated_at", current_timestamp())
            .query_async::<()>(&mut connection)
            .await
            .map_err(|e| stored(e, &self.url))
    }

    /// `tasks/cancel`: marked in Redis; the running replica stops the call at its next beat.
    pub(super) async fn cancel(&self, id: &str, owner: &str) -> Result<(), ErrorData> {
        self.owned(id, owner).await?;
        let mut connection = self.connection().await?;
        redis::cmd("HSET")
            .arg(key(id))
            .arg("cancel")
            .arg("1")
            .query_async::<()>(&mut connection)
            .await
            .map_err(|e| stored(e, &self.url))
    }

    /// Stores how task `id` ended (unless it expired meanwhile).
    pub(super) async fn finish(&self, id: &str, ended: Result<CallToolResult, TaskExit>) {
        let (status, field, value) = match ended {
            Ok(result) => ("completed", "result", serde_json::to_string(&result)),
            Err(TaskExit::Cancelled) => ("cancelled", "error", Ok(String::new())),
            Err(TaskExit::Error(error)) => ("failed", "error", serde_json::to_string(&error)),
        };
        let value = value.unwrap_or_default();
        let Ok(mut connection) = self.connection().await else {
            tracing::error!(
                task = id,
                "cannot store how the task ended: Redis is unreachable"
            );
            return;
        };
        let mut fields = vec![
            ("status", status.to_owned()),
            ("last_updated_at", current_timestamp()),
        ];
        if !value.is_empty() {
            fields.push((field, value));
        }
        let stored = redis::pipe()
            .cmd("EXISTS")
            .arg(key(id))
            .hset_multiple(key(id), &fields)
            .hdel(key(id), "input_requests")
            .del(format!("{}:lease", key(id)))
            .query_async::<(bool, (), (), ())>(&mut connection)
            .await;
        match stored {
            // A task that expired meanwhile is not brought back (HSET made a hash without
            // an owner, which no caller can see; it is removed now).
            Ok((false, ..)) => {
                let _ = redis::cmd("DEL")
                    .arg(key(id))
                    .query_async::<()>(&mut connection)
                    .await;
            }
            Ok(_) => {}
            Err(error) => tracing::error!(task = id, "cannot store how the task ended: {error}"),
        }
    }

    /// What the running call of task `id` uses: its lease renewed, its status message and
    /// questions saved, and its answers and cancellation looked for, every [`BEAT`] until it
    /// ends.
    pub(super) async fn running(
        self: &Arc<Self>,
        id: &str,
    ) -> Result<Arc<RedisRunning>, ErrorData> {
        let connection = self.connection().await?;
        let running = Arc::new(RedisRunning {
            id: id.to_owned(),
            url: self.url.clone(),
            connection,
            cancelled: CancellationToken::new(),
            ended: CancellationToken::new(),
            message: Mutex::new(None),
            pending: Mutex::new(BTreeMap::new()),
        });
        tokio::spawn(running.clone().beat());
        Ok(running)
    }
}

fn owner_key(owner: &str) -> String {
    format!("toolhost:tasks:{owner}")
}

fn now_ms() -> u64 {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    now.map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// A stored task as `tasks/get` answers it.
fn detailed(id: &str, fields: &HashMap<String, String>) -> Result<DetailedTask, ErrorData> {
    let field = |name: &str| fields.get(name).cloned().unwrap_or_default();
    let json = |name: &str| -> Map<String, Value> {
        fields
            .get(name)
            .and_then(|text| serde_json::from_str(text).ok())
            .unwrap_or_default()
    };
    let status: TaskStatus =
        serde_json::from_value(Value::String(field("status"))).map_err(|_| unknown_task(id))?;
    let mut task = Task::new(id, status, field("created_at"), field("last_updated_at"));
    task.ttl_ms = fields.get("ttl_ms").and_then(|t| t.parse().ok());
    task.poll_interval_ms = fields.get("poll_interval_ms").and_then(|t| t.parse().ok());
    task.status_message = fields.get("message").cloned();
    let payload = match status {
        TaskStatus::Completed => TaskPayload::Completed {
            result: json("result"),
        },
        TaskStatus::Failed => TaskPayload::Failed {
            error: json("error"),
        },
        TaskStatus::Cancelled => TaskPayload::Cancelled,
        TaskStatus::InputRequired => {
            let requests = fields
                .get("input_requests")
                .map(String::as_str)
                .unwrap_or("{}");
            let input_requests = serde_json::from_str(requests).unwrap_or_default();
            TaskPayload::InputRequired { input_requests }
        }
        _ => TaskPayload::Working,
    };
    Ok(DetailedTask::new(task, payload))
}

/// The running call's side of a task in Redis.
pub(super) struct RedisRunning {
    id: String,
    url: String,
    connection: ConnectionManager,
    /// Set when a `tasks/cancel` was seen.
    cancelled: CancellationToken,
    /// Set when the call ended: the beat stops.
    ended: CancellationToken,
    /// The status message to save at the next beat.
    message: Mutex<Option<String>>,
    /// The questions waiting for answers, by key, with where each answer goes.
    pending: Mutex<BTreeMap<String, (McpRequest, tokio::sync::oneshot::Sender<Value>)>>,
}

impl RedisRunning {
    /// Stops the beat (the call ended).
    pub(super) fn end(&self) {
        self.ended.cancel();
    }

    async fn beat(self: Arc<Self>) {
        let mut connection = self.connection.clone();
        let lease = u64::try_from(LEASE.as_millis()).unwrap_or(3000);
        let task = key(&self.id);
        loop {
            tokio::select! {
                () = self.ended.cancelled() => return,
                () = tokio::time::sleep(BEAT) => {}
            }
            let message = lock(&self.message).take();
            let mut pipe = redis::pipe();
            pipe.set_options(
                format!("{task}:lease"),
                "running",
                redis::SetOptions::default().with_expiration(redis::SetExpiry::PX(lease)),
            )
            .ignore();
            if let Some(message) = message {
                pipe.hset(&task, "message", message).ignore();
            }
            pipe.exists(&task)
                .hget(&task, "cancel")
                .hgetall(format!("{task}:answers"));
            let beat: Result<(bool, Option<String>, HashMap<String, String>), _> =
                pipe.query_async(&mut connection).await;
            let (exists, cancel, answers) = match beat {
                Ok(beat) => beat,
                Err(error) => {
                    tracing::warn!(task = %self.id, "the task store (Redis at {}) failed: {error}", self.url);
                    continue;
                }
            };
            // A task that expired (its TTL passed while it worked) is stopped, as one
            // cancelled: no one can read its result.
            if cancel.is_some() || !exists {
                self.cancelled.cancel();
            }
            if !answers.is_empty() {
                self.take_answers(&mut connection, answers).await;
            }
        }
    }

    /// Hands the answers to the questions that wait for them, and stores what is still
    /// asked; answers to keys not asked are dropped.
    async fn take_answers(
        &self,
        connection: &mut ConnectionManager,
        answers: HashMap<String, String>,
    ) {
        let task = key(&self.id);
        let keys: Vec<&String> = answers.keys().collect();
        let _ = redis::cmd("HDEL")
            .arg(format!("{task}:answers"))
            .arg(&keys)
            .query_async::<()>(connection)
            .await;
        let (status, requests) = {
            let mut pending = lock(&self.pending);
            for (answer_key, text) in answers {
                if let Some((_, sender)) = pending.remove(&answer_key) {
                    let value = serde_json::from_str(&text).unwrap_or(Value::Null);
                    let _ = sender.send(value);
                }
            }
            waiting(&pending)
        };
        self.save_questions(connection, status, requests).await;
    }

    async fn save_questions(
        &self,
        connection: &mut ConnectionManager,
        status: &str,
        requests: String,
    ) {
        let task = key(&self.id);
        let mut pipe = redis::pipe();
        pipe.hset(&task, "status", status)
            .hset(&task, "last_updated_at", current_timestamp());
        if status == "input_required" {
            pipe.hset(&task, "input_requests", requests);
        } else {
            pipe.hdel(&task, "input_requests");
        }
        if let Err(error) = pipe.query_async::<()>(connection).await {
            tracing::warn!(task = %self.id, "the task store failed: {error}");
        }
    }
}

/// The status and the stored `inputRequests` of `pending` questions.
fn waiting(
    pending: &BTreeMap<String, (McpRequest, tokio::sync::oneshot::Sender<Value>)>,
) -> (&'static str, String) {
    let requests: BTreeMap<&String, &McpRequest> = pending
        .iter()
        .map(|(k, (request, _))| (k, request))
        .collect();
    let status = if requests.is_empty() {
        "working"
    } else {
        "input_required"
    };
    (status, serde_json::to_string(&requests).unwrap_or_default())
}

impl Running for RedisRunning {
    fn request_input(
        &self,
        key: String,
        request: McpRequest,
    ) -> BoxFuture<'_, Result<Value, TaskExit>> {
        Box::pin(async move {
            let (sender, receiver) = tokio::sync::oneshot::channel();
            let (status, requests) = {
                let mut pending = lock(&self.pending);
                pending.insert(key, (request, sender));
                waiting(&pending)
            };
            let mut connection = self.connection.clone();
            self.save_questions(&mut connection, status, requests).await;
            tokio::select! {
                answer = receiver => answer.map_err(|_| TaskExit::Cancelled),
                () = self.cancelled.cancelled() => Err(TaskExit::Cancelled),
            }
        })
    }

    fn set_status_message(&self, message: String) {
        *lock(&self.message) = Some(message);
    }

    fn cancelled(&self) -> BoxFuture<'_, ()> {
        Box::pin(self.cancelled.cancelled())
    }
}
