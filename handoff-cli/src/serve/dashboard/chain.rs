//! A task's chain as a graph: each hop a box (who handed to whom, coloured by its status,
//! linking to its record), in the order they were made, joined by arrows.

use std::fmt::Write;

use handoff_core::Status;

use super::html::{esc, seg};
use super::names::{agent_text, unlike_ascii};
use crate::output::clip;

/// The chain's SVG, or a line saying the task has no handoffs.
pub(super) fn chain_graph(chain: &handoff_core::Chain) -> String {
    let hops: Vec<&handoff_core::Hop> = chain
        .hops
        .iter()
        .filter(|h| h.kind != handoff_core::Kind::Checkpoint)
        .collect();
    if hops.is_empty() {
        return "<p class=\"empty\">No handoffs in this task.</p>".to_owned();
    }
    const BOX_W: usize = 150;
    const GAP: usize = 36;
    let width = hops.len() * (BOX_W + GAP);
    let mut svg = format!(
        "<svg role=\"img\" aria-label=\"chain of {} handoffs\" width=\"{width}\" height=\"60\" viewBox=\"0 0 {width} 60\">",
        hops.len()
    );
    for (i, hop) in hops.iter().enumerate() {
        let x = i * (BOX_W + GAP);
        let colour = match hop.status {
            Status::Completed => "#2b8a3e",
            Status::Failed | Status::Rejected => "#c92a2a",
            Status::Claimed => "#1c7ed6",
            _ => "#868e96",
        };
        let (from, to) = (
            hop.from_agent.as_deref().unwrap_or("*"),
            hop.to_agent.as_deref().unwrap_or("anyone"),
        );
        // The box has room for a few characters: a name that may not be what it looks like
        // is marked there, and its code points are in the box's title.
        let marked = if unlike_ascii(from) || unlike_ascii(to) {
            "⚠ "
        } else {
            ""
        };
        let pair = format!("{marked}{from} → {to}");
        let title = format!("{} → {}", agent_text(from), agent_text(to));
        let _ = write!(
            svg,
            "<a href=\"/handoffs/{}\"><title>{}</title>\
             <rect x=\"{x}\" y=\"6\" width=\"{BOX_W}\" height=\"46\" rx=\"6\" fill=\"#fff\" stroke=\"{colour}\" stroke-width=\"2\"/>\
             <text x=\"{}\" y=\"25\" text-anchor=\"middle\">{}</text>\
             <text x=\"{}\" y=\"43\" text-anchor=\"middle\" fill=\"{colour}\">{}</text></a>",
            seg(&hop.handoff_id),
            esc(&title),
            x + BOX_W / 2,
            esc(&clip(&pair, 22)),
            x + BOX_W / 2,
            hop.status.as_str()
        );
        if i + 1 < hops.len() {
            let (from, to) = (x + BOX_W, x + BOX_W + GAP);
            let _ = write!(
                svg,
                "<line x1=\"{from}\" y1=\"29\" x2=\"{}\" y2=\"29\" stroke=\"#59636e\"/>\
                 <polygon points=\"{},25 {to},29 {},33\" fill=\"#59636e\"/>",
                to - 6,
                to - 6,
                to - 6
            );
        }
    }
    svg.push_str("</svg>");
    format!("<div style=\"overflow-x:auto\">{svg}</div>")
}
