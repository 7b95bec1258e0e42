//! The HTML renderer: one page template per report kind, all extending
//! `base.html` (head, Content-Security-Policy, data and script elements),
//! with the style and the page's script included at build time. Each page
//! is one self-contained document: nothing to fetch, works from `file://`.

pub mod rebalance;
pub mod simulate;

use minijinja::{Environment, Value};

/// The pages this renderer draws; each has a template and a script.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Page {
    /// `place` and `why`: one map (templates/report.html, assets/report.js).
    Report,
    /// `simulate`: a timeline of maps and the replicas charts.
    Simulate,
    /// `rebalance`: before and after maps with the evictions as arrows.
    Rebalance,
}

const BASE: &str = include_str!("../../templates/base.html");
const STYLE: &str = include_str!("../assets/report.css");
/// Helpers and the map drawing shared by the simulate and rebalance pages.
const COMMON: &str = include_str!("../assets/common.js");

impl Page {
    fn template(self) -> (&'static str, &'static str) {
        match self {
            Page::Report => ("report.html", include_str!("../../templates/report.html")),
            Page::Simulate => (
                "simulate.html",
                include_str!("../../templates/simulate.html"),
            ),
            Page::Rebalance => (
                "rebalance.html",
                include_str!("../../templates/rebalance.html"),
            ),
        }
    }

    fn script(self) -> String {
        match self {
            Page::Report => include_str!("../assets/report.js").to_string(),
            Page::Simulate => format!("{COMMON}\n{}", include_str!("../assets/simulate.js")),
            Page::Rebalance => format!("{COMMON}\n{}", include_str!("../assets/rebalance.js")),
        }
    }
}

/// Fills a page template. The data is JSON inside a `<script
/// type="application/json">`: `<` is written as `\u003c`, so no string in it
/// can close the element; the script's own `</` are escaped the same way.
pub(crate) fn render(page: Page, title: &str, data: &serde_json::Value) -> String {
    let json = serde_json::to_string(data)
        .expect("report data is plain JSON")
        .replace('<', "\\u003c");
    let mut env = Environment::new();
    env.set_auto_escape_callback(|_| minijinja::AutoEscape::Html);
    env.add_template("base.html", BASE)
        .expect("the base template parses");
    let (name, source) = page.template();
    env.add_template(name, source)
        .expect("the page template parses");
    let template = env.get_template(name).expect("just added");
    template
        .render(minijinja::context! {
            title => title,
            style => Value::from_safe_string(STYLE.to_string()),
            script => Value::from_safe_string(page.script().replace("</", "<\\/")),
            data => Value::from_safe_string(json),
        })
        .expect("the page template renders")
}

/// The JSON data element of a rendered page, parsed (tests).
#[cfg(test)]
pub(crate) fn data_of(html: &str) -> serde_json::Value {
    let start = html.find("id=\"data\">").expect("data element") + "id=\"data\">".len();
    let end = start + html[start..].find("</script>").expect("data element ends");
    serde_json::from_str(&html[start..end]).expect("data is JSON")
}
