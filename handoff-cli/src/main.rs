//! `handoff`: inspect and fix a handoff-core store from the shell, and serve it to coding
//! agents over MCP (`handoff mcp`). See the README for the commands and exit codes.

use std::process::ExitCode;

use clap::Parser;

mod args;
mod commands;
mod error;
mod fields;
mod mcp;
mod output;
mod spawn;

use args::{Cli, Command};
use error::CliError;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let as_json = cli.json;
    match run(cli) {
        Ok(code) => code,
        Err(e) => e.report(as_json),
    }
}

fn run(cli: Cli) -> Result<ExitCode, CliError> {
    if let Command::Mcp { spawn } = &cli.command {
        let store = commands::open(&cli.db)?;
        mcp::serve(store, cli.db.clone(), spawn::SpawnConfig::from_opts(spawn))?;
        return Ok(ExitCode::SUCCESS);
    }
    let done = commands::run(&cli.db, cli.command)?;
    if let Some(reply) = done.reply {
        if cli.json {
            println!("{}", reply.json);
        } else {
            print!("{}", reply.text);
        }
    }
    Ok(ExitCode::from(done.exit))
}
