//! Agents described in Markdown files, the way the Maia swarm keeps them: one file per agent,
//! its name and description, and a `## Collaborations` section listing who it may hand off to.
//!
//! ```markdown
//! ---
//! name: Tech Support
//! description: Fixes what is broken
//! ---
//! # Tech Support
//!
//! ## Collaborations
//! - **Billing agent**: refunds and invoices
//! - [researcher](researcher.md) — digs up the logs
//! ```
//!
//! The name comes from the front matter's `name:`, else the first `# ` heading, else the file
//! name; the description from `description:`, else the first paragraph after the heading. Each
//! bullet of `## Collaborations` names one agent: its bold, linked or code-quoted text, or the
//! text before the first `:`, ` — `, ` - ` or ` (`. An agent without the section hands off to
//! nobody: the files are the single source of truth.

use std::path::Path;

use crate::error::{Error, Result};
use crate::tools::AgentRegistry;

/// The largest agent file read, and the most files read from one folder.
const MAX_FILE_BYTES: u64 = 1024 * 1024;
const MAX_FILES: usize = 10_000;

/// One agent as a Markdown file describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AgentFile {
    /// The agent's name.
    pub name: String,
    /// What it does.
    pub description: String,
    /// Who it may hand off to, in the order listed.
    pub collaborations: Vec<String>,
}

impl AgentFile {
    /// Reads an agent from a Markdown text; `fallback_name` (the file name without `.md`) is
    /// its name when the text gives none.
    pub fn parse(text: &str, fallback_name: &str) -> AgentFile {
        let (front, body) = front_matter(text);
        let field = |key: &str| {
            front.iter().find_map(|line| {
                let (k, v) = line.split_once(':')?;
                (k.trim() == key).then(|| unquote(v.trim()).to_owned())
            })
        };
        let lines: Vec<&str> = body.lines().collect();
        let heading = lines.iter().position(|l| l.starts_with("# "));
        let name = field("name")
            .filter(|n| !n.is_empty())
            .or_else(|| heading.map(|i| lines[i][2..].trim().to_owned()))
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| fallback_name.to_owned());
        let description = field("description").unwrap_or_else(|| {
            let start = heading.map_or(0, |i| i + 1);
            lines[start.min(lines.len())..]
                .iter()
                .skip_while(|l| l.trim().is_empty())
                .take_while(|l| !l.trim().is_empty() && !l.starts_with('#'))
                .map(|l| l.trim())
                .collect::<Vec<_>>()
                .join(" ")
        });
        let mut collaborations = Vec::new();
        let mut in_section = false;
        for line in &lines {
            if let Some(title) = line.strip_prefix("## ") {
                in_section = title.trim().eq_ignore_ascii_case("collaborations");
                continue;
            }
            if line.starts_with("# ") {
                in_section = false;
            }
            if !in_section {
                continue;
            }
            let item = line.trim_start();
            let Some(item) = item
                .strip_prefix("- ")
                .or_else(|| item.strip_prefix("* "))
                .or_else(|| item.strip_prefix("+ "))
            else {
                continue;
            };
            if let Some(agent) = bullet_agent(item.trim())
                && !collaborations.contains(&agent)
            {
                collaborations.push(agent);
            }
        }
        AgentFile {
            name,
            description,
            collaborations,
        }
    }
}

/// The front matter's lines (between a leading `---` and the next) and the rest.
fn front_matter(text: &str) -> (Vec<&str>, &str) {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let Some(rest) = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
    else {
        return (Vec::new(), text);
    };
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end() == "---" {
            let front = rest[..offset].lines().collect();
            return (front, &rest[offset + line.len()..]);
        }
        offset += line.len();
    }
    (Vec::new(), text)
}

fn unquote(value: &str) -> &str {
    for quote in ['"', '\''] {
        if let Some(inner) = value
            .strip_prefix(quote)
            .and_then(|v| v.strip_suffix(quote))
        {
            return inner;
        }
    }
    value
}

/// The agent a Collaborations bullet names.
fn bullet_agent(item: &str) -> Option<String> {
    let quoted = |open: &str, close: &str| {
        item.strip_prefix(open)
            .and_then(|rest| rest.split_once(close))
            .map(|(inside, _)| inside.trim().to_owned())
    };
    let name = quoted("**", "**")
        .or_else(|| quoted("__", "__"))
        .or_else(|| quoted("[", "]"))
        .or_else(|| quoted("`", "`"))
        .unwrap_or_else(|| {
            let end = [":", " — ", " – ", " - ", " ("]
                .iter()
                .filter_map(|sep| item.find(sep))
                .min()
                .unwrap_or(item.len());
            item[..end].trim().to_owned()
        });
    let name = name.trim_matches('`').trim().to_owned();
    (!name.is_empty()).then_some(name)
}

impl AgentRegistry {
    /// A registry of the agents described by `files`: `(file name without .md, text)` pairs.
    /// Names must be unique; each is checked like [`AgentRegistry::add`]'s.
    pub fn from_markdown<'a>(
        files: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) -> Result<AgentRegistry> {
        let mut registry = AgentRegistry::new();
        let mut seen: Vec<(String, String)> = Vec::new();
        for (file, text) in files {
            let agent = AgentFile::parse(text, file);
            if let Some((_, first)) = seen.iter().find(|(name, _)| *name == agent.name) {
                return Err(Error::invalid(
                    format!("{file}.name"),
                    format!("{} is described twice (also by {first})", agent.name),
                ));
            }
            registry
                .add(&agent.name, &agent.description, Some(agent.collaborations))
                .map_err(|e| in_file(e, file))?;
            seen.push((agent.name, file.to_owned()));
        }
        Ok(registry)
    }

    /// A registry of the agents described by the `*.md` files in `dir` (not its sub-folders),
    /// read in file-name order. A file that cannot be read, or one that is too large, is an
    /// error naming it.
    pub fn from_markdown_dir(dir: impl AsRef<Path>) -> Result<AgentRegistry> {
        let dir = dir.as_ref();
        let unreadable = |path: &Path, e: std::io::Error| {
            Error::invalid("path", format!("{}: {e}", path.display()))
        };
        let mut paths = Vec::new();
        for entry in std::fs::read_dir(dir).map_err(|e| unreadable(dir, e))? {
            let path = entry.map_err(|e| unreadable(dir, e))?.path();
            if path.extension().is_some_and(|ext| ext == "md") && path.is_file() {
                paths.push(path);
                if paths.len() > MAX_FILES {
                    return Err(Error::invalid(
                        "path",
                        format!("{} holds more than {MAX_FILES} agent files", dir.display()),
                    ));
                }
            }
        }
        paths.sort();
        let mut files = Vec::with_capacity(paths.len());
        for path in &paths {
            let size = std::fs::metadata(path)
                .map_err(|e| unreadable(path, e))?
                .len();
            if size > MAX_FILE_BYTES {
                return Err(Error::invalid(
                    "path",
                    format!("{}: larger than {MAX_FILE_BYTES} bytes", path.display()),
                ));
            }
            let text = std::fs::read_to_string(path).map_err(|e| unreadable(path, e))?;
            let stem = path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default();
            files.push((stem, text));
        }
        AgentRegistry::from_markdown(files.iter().map(|(f, t)| (f.as_str(), t.as_str())))
    }
}

/// Prefixes a validation error's fields with the file it came from.
fn in_file(error: Error, file: &str) -> Error {
    match error {
        Error::Validation { problems } => Error::Validation {
            problems: problems
                .into_iter()
                .map(|mut p| {
                    p.field = format!("{file}.{}", p.field);
                    p
                })
                .collect(),
        },
        other => other,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn reads_names_descriptions_and_collaborations() {
        let text = "---\nname: Tech Support\ndescription: \"Fixes things\"\n---\n# Ignored\n\n\
                    ## Collaborations\n- **Billing agent**: refunds\n- [researcher](r.md) — logs\n\
                    * `writer`\n- reviewer (final pass)\n- plain - dash\n\n## Tools\n- not an agent\n";
        let agent = AgentFile::parse(text, "support");
        assert_eq!(agent.name, "Tech Support");
        assert_eq!(agent.description, "Fixes things");
        assert_eq!(
            agent.collaborations,
            ["Billing agent", "researcher", "writer", "reviewer", "plain"]
        );
        let bare = AgentFile::parse("# Billing agent\n\nHandles refunds\nand invoices.\n", "b");
        assert_eq!(bare.name, "Billing agent");
        assert_eq!(bare.description, "Handles refunds and invoices.");
        assert!(bare.collaborations.is_empty());
        assert_eq!(AgentFile::parse("no heading", "stem").name, "stem");
    }

    #[test]
    fn registry_from_files_refuses_twins_and_bad_names() {
        let registry = AgentRegistry::from_markdown([
            ("a", "# Tech Support\n## Collaborations\n- Billing agent\n"),
            ("b", "# Billing agent\n"),
        ])
        .unwrap();
        assert_eq!(registry.agents().len(), 2);
        assert!(AgentRegistry::from_markdown([("a", "# x\n"), ("b", "# x\n")]).is_err());
        let err = AgentRegistry::from_markdown([("a", "---\nname: \u{7}bell\n---\n")]).unwrap_err();
        assert!(err.to_string().contains("a.name"), "{err}");
    }
}
