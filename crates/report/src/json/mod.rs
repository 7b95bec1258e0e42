//! The JSON renderers: for commands whose report value is not itself the
//! JSON object (`why` words an engine explanation), the typed view
//! `-o json` prints and the HTML report embeds. Values that serialize as
//! they are (`place`) need no module here.

pub mod why;
