//! The `host` command: parses arguments, runs the command, prints the error chain once, and
//! maps the outcome to an exit status.

mod cli;

use std::process::ExitCode;

use clap::Parser;

use cli::ExitStatus;

fn main() -> ExitCode {
    let args = cli::Args::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("error: cannot start the async runtime: {error}");
            return ExitStatus::Error.into();
        }
    };
    let traces = match cli::init_logging(&args, runtime.handle().clone()) {
        Ok(traces) => traces,
        Err(error) => {
            cli::print_error(error.as_ref());
            return ExitStatus::Error.into();
        }
    };
    let status = match runtime.block_on(cli::run(args)) {
        Ok(status) => status,
        // A reader that went away (`host tools | head -1`) is a normal end.
        Err(error) if cli::is_broken_pipe(&error) => ExitStatus::Success,
        Err(error) => {
            cli::print_error(error.as_ref());
            ExitStatus::Error
        }
    };
    // The spans still waiting go out while the runtime that sends them runs.
    drop(traces);
    // Do not wait for blocking tasks (a compile in progress) at exit.
    runtime.shutdown_background();
    status.into()
}
