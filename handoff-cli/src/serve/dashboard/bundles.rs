//! `/bundles`: every knowledge bundle and, for those others may open, its share link; and the
//! form that imports one (seed 001 §7.1's "Import Bundle"): a bundle file, or a share token.

use handoff_core::Error;

use super::Ctx;
use super::forms::{form, text};
use super::html::{Page, badge, esc, seg, short_id, table};

pub(super) fn page(ctx: &Ctx<'_>) -> Result<Page, Error> {
    let bundles = ctx.store.list_bundles(None)?;
    let rows: Vec<Vec<String>> = bundles
        .iter()
        .map(|b| {
            let shared = match &b.share_token {
                None => "private".to_owned(),
                Some(token) => {
                    let link = format!("/api/v1/bundles/shared/{}", seg(token));
                    format!("<a href=\"{link}\">{}</a>", esc(&link))
                }
            };
            vec![
                esc(&ctx.out.text(&b.name)),
                esc(&short_id(&b.id)),
                badge(&format!("{:?}", b.visibility).to_lowercase()),
                b.fact_count.to_string(),
                b.conversation_count.to_string(),
                esc(&ctx
                    .out
                    .text(b.source_task_id.as_deref().unwrap_or_default())),
                shared,
            ]
        })
        .collect();
    let branch = text("target_branch", "into branch (optional)", false);
    let dry_run = "<label><input type=\"checkbox\" name=\"dry_run\" value=\"true\"> only say what \
                   it would add</label>";
    let import = format!(
        "{}{}",
        form(
            ctx.session,
            "import_bundle",
            &ctx.back,
            &[],
            &format!(
                "<label>Bundle file <input type=\"file\" name=\"bundle\" accept=\".json,application/json\" \
                 required></label>{branch}{dry_run}"
            ),
            "Import file",
        ),
        form(
            ctx.session,
            "import_bundle",
            &ctx.back,
            &[],
            &format!(
                "{}{branch}{dry_run}",
                text("share_token", "share token (kb_…)", true)
            ),
            "Import shared",
        )
    );
    Ok(Page::new("Bundles", String::new())
        .section(
            "Knowledge bundles",
            table(
                &[
                    "name",
                    "id",
                    "visibility",
                    "facts",
                    "conversations",
                    "task",
                    "share link",
                ],
                &rows,
                "No bundles yet.",
            ),
        )
        .section("Import a bundle", import))
}
