#![doc = include_str!("../README.md")]

use std::process::ExitCode;

use clap::{ArgMatches, CommandFactory, FromArgMatches};
use serde_json::json;

mod args;
mod commands;
mod credentials;
mod error;
mod export;
mod jsonrpc;
mod judge;
mod location;
mod logging;
mod mcp;
mod operations;
#[cfg(feature = "otlp")]
mod otlp;
mod output;
mod policy;
mod results;
mod sampling;
mod serve;
mod spawn;
mod subcommands;
mod toolsets;

use args::{Cli, Command};
use error::CliError;

fn main() -> ExitCode {
    let parsed = subcommands::augment(Cli::command())
        .try_get_matches()
        .and_then(|matches| Ok((Cli::from_arg_matches(&matches)?, matches)));
    let (cli, matches) = match parsed {
        Ok(parsed) => parsed,
        Err(e) => return usage_error(&e),
    };
    // Logs go to stderr; a server says what it serves, a command only what went wrong.
    let serves = matches!(cli.command, Some(Command::Serve { .. }));
    let _logging = logging::init(cli.log_format, if serves { "info" } else { "warn" });
    let as_json = cli.json;
    let out = output::Output::new(!cli.no_redact);
    match run(cli, &matches, out) {
        Ok(code) => code,
        Err(e) => e.report(as_json, &out),
    }
}

fn run(cli: Cli, matches: &ArgMatches, out: output::Output) -> Result<ExitCode, CliError> {
    // The global options, for whichever store --db names (each store reads what concerns it),
    // read by the core as every face reads them.
    let options = cli.connect_args()?.options();
    let ctx = commands::Ctx {
        db: location::Location::new(cli.db),
        options,
        // The policy file and agents folder are read before any store is opened: a bad one
        // creates nothing.
        policy: policy::Overrides::load(&cli.policy)?,
        out,
    };
    let done = match (cli.command, matches.subcommand()) {
        (
            Some(Command::Mcp {
                spawn,
                credentials,
                judge,
                tools,
            }),
            _,
        ) => {
            let chosen = toolsets::Selection::parse(tools.as_deref())?;
            // The caller's agents are fixed for the session, before the store is opened.
            let caller = match credentials.load()? {
                Some(credentials) => credentials.of_the_environment()?,
                None => credentials::Agents::Any,
            };
            let store = ctx.open()?;
            mcp::serve(
                store,
                ctx.db,
                spawn::SpawnConfig::from_opts(&spawn),
                ctx.out,
                caller,
                judge.judge(ctx.out.redacts()),
                &chosen,
            )?;
            return Ok(ExitCode::SUCCESS);
        }
        (
            Some(Command::Serve {
                bind,
                token,
                idle_timeout,
                allow_host,
                credentials,
                judge,
            }),
            _,
        ) => {
            let config = serve::Config {
                bind,
                token,
                idle_timeout: std::time::Duration::from_secs(idle_timeout),
                allow_hosts: allow_host,
                credentials: credentials.load()?,
                judge: judge.judge(ctx.out.redacts()),
            };
            config.check()?;
            let store = ctx.open()?;
            serve::serve(store, ctx.db, config, ctx.out)?;
            return Ok(ExitCode::SUCCESS);
        }
        (Some(command), _) => commands::run(&ctx, command)?,
        (None, Some((name, operation))) => subcommands::run(&ctx, name, operation, cli.json)?,
        // clap requires a subcommand.
        (None, None) => {
            return Err(handoff_core::Error::invalid("command", "a command is required").into());
        }
    };
    if let Some(reply) = done.reply {
        if cli.json {
            output::write_stdout(&format!("{}\n", reply.json))?;
        } else {
            output::write_stdout(&reply.text)?;
        }
    }
    Ok(ExitCode::from(done.exit))
}

/// Help and version go to stdout as usual; a usage error exits 2 (`VALIDATION`), as JSON on
/// stderr when `--json` was asked for. It may quote an argument, so it is redacted unless
/// `--no-redact` was given.
fn usage_error(e: &clap::Error) -> ExitCode {
    let wants_json = std::env::args_os().any(|arg| arg == "--json");
    let out = output::Output::new(!std::env::args_os().any(|arg| arg == "--no-redact"));
    if !e.use_stderr() {
        let _ = e.print();
        return ExitCode::from(error::code::OK);
    }
    if !wants_json {
        eprint!("{}", out.text(&e.render().to_string()));
        return ExitCode::from(error::code::INVALID);
    }
    let rendered = e.render().to_string();
    // The error paragraph, without the usage and help hints that follow it.
    let paragraph = rendered
        .lines()
        .take_while(|line| !line.trim().is_empty())
        .map(str::trim)
        .collect::<Vec<_>>()
        .join(" ");
    let message = paragraph.trim_start_matches("error: ");
    eprintln!(
        "{}",
        json!({ "error": { "code": "VALIDATION", "message": out.text(message) } })
    );
    ExitCode::from(error::code::INVALID)
}
