//! Asking before a tool call runs: on the terminal (y / n / always), everything with
//! `--yes`, nothing without a terminal; and driving a run through its pauses, for approvals
//! and for tools that ask for input (`form.rs`).

use toolhost::agent::{
    Agent, AgentError, AgentEvent, Conversation, Decision, InputAnswer, PendingCall, RunEnd,
    RunOptions, RunResult,
};

use super::input::Input;

/// Who decides about calls that need approval.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Approver {
    /// `--yes`: every call is approved.
    Everything,
    /// The person at the terminal, call by call.
    Terminal,
    /// Nobody can be asked: every such call is rejected, with a message saying how to allow it.
    Nobody,
}

impl Approver {
    pub fn new(yes: bool, input: &Input) -> Self {
        if yes {
            Self::Everything
        } else if input.is_terminal() {
            Self::Terminal
        } else {
            Self::Nobody
        }
    }

    async fn decide(self, call: &PendingCall, input: &mut Input) -> anyhow::Result<Decision> {
        match self {
            Self::Everything => Ok(Decision::Approve),
            Self::Nobody => {
                eprintln!(
                    "{} needs approval, and there is no terminal to ask on: rejected. Pass --yes \
                     to approve every call, or set approval = \"never\" under [tools.{}] in the \
                     manifest.",
                    call.tool, call.tool
                );
                Ok(Decision::Reject {
                    reason: "it needs a person's approval, and none could be asked".into(),
                })
            }
            Self::Terminal => ask(call, input).await,
        }
    }
}

/// Shows `call` and asks y / n / always until the answer is one of them.
async fn ask(call: &PendingCall, input: &mut Input) -> anyhow::Result<Decision> {
    eprintln!("? {} wants to run with {}", call.tool, call.arguments);
    if let Some(program) = &call.parent {
        eprintln!("  called by the program of call {program}, which runs again once decided");
    }
    if let Some(origin) = &call.origin {
        eprintln!("  from {origin}");
    }
    let holdings = call.holdings();
    if holdings.is_empty() {
        eprintln!("  holds: nothing (no files, no network, no environment)");
    } else {
        eprintln!("  holds: {}", holdings.join("\n         "));
    }
    loop {
        eprint!("  run it? [y]es, [n]o, [a]lways for this run: ");
        let Some(answer) = input.line().await? else {
            eprintln!();
            return Ok(Decision::Reject {
                reason: "the user did not answer".into(),
            });
        };
        match answer.trim().to_lowercase().as_str() {
            "y" | "yes" => return Ok(Decision::Approve),
            "a" | "always" => return Ok(Decision::ApproveForRun),
            "n" | "no" => {
                eprint!("  why not? (told to the model; Enter to skip): ");
                let reason = input.line().await?.unwrap_or_default();
                let reason = match reason.trim() {
                    "" => "the user said no".to_owned(),
                    reason => reason.to_owned(),
                };
                return Ok(Decision::Reject { reason });
            }
            _ => eprintln!("  please answer y, n or a"),
        }
    }
}

/// Runs (or resumes) the loop on `conversation`, deciding every pause with `approver`;
/// `paused` sees the conversation at each pause, before anyone is asked (to save it).
/// The outer error is the terminal's or `paused`'s; the inner one is the run's.
pub async fn run_to_end(
    agent: &Agent,
    conversation: &mut Conversation,
    options: &RunOptions,
    approver: Approver,
    input: &mut Input,
    events: &mut (dyn FnMut(AgentEvent<'_>) + Send),
    paused: &mut dyn FnMut(&Conversation) -> anyhow::Result<()>,
) -> anyhow::Result<Result<RunResult, AgentError>> {
    let mut result = if conversation.paused_run().is_some() {
        agent.resume(conversation, options, events).await
    } else {
        agent.run(conversation, options, events).await
    };
    while let Ok(RunResult {
        end: RunEnd::Paused,
        ..
    }) = &result
    {
        paused(conversation)?;
        while let Some(call) = conversation
            .pending_approvals()
            .first()
            .map(|c| (*c).clone())
        {
            let decision = approver.decide(&call, input).await?;
            conversation.decide(&call.call_id, decision)?;
        }
        while let Some(asking) = conversation.asking_calls().first().map(|c| (*c).clone()) {
            match super::form::answer(&asking, input).await? {
                InputAnswer::Given(answers) => {
                    conversation.answer_input(&asking.call_id, answers)?
                }
                InputAnswer::Refused(reason) => {
                    conversation.refuse_input(&asking.call_id, reason)?
                }
            }
        }
        result = agent.resume(conversation, options, events).await;
    }
    Ok(result)
}
