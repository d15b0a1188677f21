//! Code mode: one program's run per language (a fresh instance of the JavaScript runner, then
//! of the Python one, one nested call of the calculator's `add`) next to the plain call of
//! `add`, alternating; and the multi-step
//! task of `toolhost_tests::code_mode` (list three CSV files, read each, add up a column,
//! write a note) played by the scripted model in both wire formats, step by step and as one
//! program: model turns and request bytes side by side.

use std::sync::Arc;
use std::time::Instant;

use toolhost::code::{Language, ToolboxCalls};
use toolhost::{CallContext, ComponentConfig, Toolbox};
use toolhost_tests::code_mode::{both_ways, code_mode_in};
use toolhost_tests::components::CALCULATOR;
use toolhost_tests::model::Format;

use crate::{Bench, Stats, ratio};

/// Prints what a program costs next to a call, and what it saves a task.
pub async fn report(bench: &mut Bench) -> anyhow::Result<()> {
    let toolbox = Arc::new(
        Toolbox::builder(&bench.runtime)
            .component(ComponentConfig::new(CALCULATOR))
            .build()
            .await?,
    );
    let offered = toolbox.names().into_iter().collect();
    let calls = Arc::new(ToolboxCalls::new(
        toolbox.clone(),
        offered,
        CallContext::default(),
    ));
    let context = CallContext::default();
    let rounds = (bench.iterations / 10).max(bench.scaled(100, 3));
    let languages = [
        (
            Language::JavaScript,
            "js",
            "return await tools.add({a: 1, b: 2});",
        ),
        (Language::Python, "py", "return await tools.add(a=1, b=2)"),
    ];
    for (language, key, program) in languages {
        let code = code_mode_in(&bench.runtime, language).await;
        let (mut plain, mut programs) = (Vec::new(), Vec::new());
        for _ in 0..rounds {
            let started = Instant::now();
            toolbox.call("add", r#"{"a": 1, "b": 2}"#, &context).await?;
            plain.push(started.elapsed());
            let started = Instant::now();
            let run = code.run(program, calls.clone()).await;
            programs.push(started.elapsed());
            // 3 in JavaScript, 3.0 in Python.
            anyhow::ensure!(
                run.result
                    .as_ref()
                    .is_ok_and(|value| value.as_f64() == Some(3.0)),
                "the {language} program did not return 3: {:?}",
                run.result
            );
        }
        let (plain, programs) = (Stats::of(plain), Stats::of(programs));
        println!();
        println!(
            "code mode, {language}: one program next to a plain call ({rounds} of each, \
             alternating)"
        );
        plain.row("a call of add");
        programs.row("  a program calling add once (fresh runner)");
        let over = ratio(programs.median, plain.median);
        println!("    {over:.1}x the plain call");
        // The JavaScript figure keeps the key it had before there was a second language.
        let name = match language {
            Language::JavaScript => "code_program_over_call".to_owned(),
            Language::Python => format!("code_program_over_call_{key}"),
        };
        bench.summary.add(&name, format!("{over:.1}"));
    }

    println!();
    println!("code mode: the multi-step task (list, read 3 files, sum, write a note)");
    for (format, key) in [(Format::OpenAi, "openai"), (Format::Anthropic, "anthropic")] {
        let ((plain_turns, plain_bytes), (code_turns, code_bytes)) =
            both_ways(&bench.runtime, format).await;
        let bytes = plain_bytes as f64 / code_bytes as f64;
        println!(
            "  {format:?}: step by step {plain_turns} model turns, {plain_bytes} request bytes; \
             one program {code_turns} turns, {code_bytes} bytes ({:.1}x fewer turns, {bytes:.1}x \
             fewer bytes)",
            plain_turns as f64 / code_turns as f64
        );
        bench.summary.add(
            &format!("code_turns_{key}"),
            format!("{plain_turns}/{code_turns}"),
        );
        bench
            .summary
            .add(&format!("code_bytes_ratio_{key}"), format!("{bytes:.2}"));
    }
    Ok(())
}
