//! The loader's error: one problem that stops the whole load, pointing at the
//! file, line and column, the object and the field, in apiserver's words.

use std::fmt;

/// What kind of problem stopped the load, for callers that branch on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum LoadErrorKind {
    /// A file or directory could not be read.
    Io,
    /// The bytes are not UTF-8 text.
    Encoding,
    /// The YAML or JSON does not parse.
    Syntax,
    /// The input exceeds a safety limit (alias expansion, nesting depth, size).
    Limit,
    /// A file given explicitly holds no object at all.
    Empty,
    /// A document is not a Kubernetes object (no `kind`, not a mapping, `items` not a list).
    Structure,
    /// A field has the wrong type for its Kubernetes API type.
    Decode,
    /// A field is well-typed but invalid (apiserver validation would reject it).
    Invalid,
    /// Two objects have the same identity (two Nodes of one name, two Pods of one namespace/name).
    Duplicate,
    /// An object refers to something that is not in the world (a pod bound to an unknown node).
    UnknownReference,
}

/// A further field problem of the same object, reported after the first one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cause {
    /// Field path, e.g. `spec.affinity.podAffinity...topologyKey`.
    pub field: String,
    /// The message in apiserver's words.
    pub message: String,
    /// 1-based line of the field, 0 when unknown.
    pub line: usize,
    /// 1-based column of the field, 0 when unknown.
    pub column: usize,
}

/// Why loading failed. Nothing is half-loaded: any error fails the whole load.
///
/// Renders as `FILE:LINE:COLUMN: Kind/namespace/name: field.path: message`,
/// leaving out the parts that are not known. The details are boxed to keep
/// `Result<_, LoadError>` small; read them through `Deref` (`err.file`, `err.line`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.0.render())]
pub struct LoadError(Box<LoadErrorDetail>);

/// The parts of a [`LoadError`], for callers that render or branch on them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadErrorDetail {
    /// What went wrong, broadly.
    pub kind: LoadErrorKind,
    /// The file as given by the user (`-` for stdin); empty when no file is involved.
    pub file: String,
    /// 1-based line, 0 when unknown.
    pub line: usize,
    /// 1-based column, 0 when unknown.
    pub column: usize,
    /// The object as `Kind/namespace/name` (or `Kind/name` when cluster-scoped), when known.
    pub object: Option<String>,
    /// The field path, when the problem is in one field.
    pub field: Option<String>,
    /// The message, in kube-apiserver's validation wording where one exists.
    pub message: String,
    /// Further problems in the same object (apiserver reports them all at once).
    pub also: Vec<Cause>,
}

impl std::ops::Deref for LoadError {
    type Target = LoadErrorDetail;
    fn deref(&self) -> &LoadErrorDetail {
        &self.0
    }
}

impl std::ops::DerefMut for LoadError {
    fn deref_mut(&mut self) -> &mut LoadErrorDetail {
        &mut self.0
    }
}

impl LoadError {
    /// The process exit code for bad input, as DESIGN.md prescribes: 2.
    pub fn exit_code(&self) -> i32 {
        2
    }

    pub(crate) fn new(kind: LoadErrorKind, file: &str, message: impl Into<String>) -> Self {
        LoadError(Box::new(LoadErrorDetail {
            kind,
            file: file.to_string(),
            line: 0,
            column: 0,
            object: None,
            field: None,
            message: message.into(),
            also: Vec::new(),
        }))
    }

    pub(crate) fn at(mut self, line: usize, column: usize) -> Self {
        self.line = line;
        self.column = column;
        self
    }

    pub(crate) fn object(mut self, object: Option<String>) -> Self {
        self.object = object;
        self
    }

    pub(crate) fn field(mut self, field: impl Into<String>) -> Self {
        let f = field.into();
        self.field = if f.is_empty() { None } else { Some(f) };
        self
    }
}

impl LoadErrorDetail {
    /// `FILE:LINE:COL` (or less, when unknown).
    pub fn location(&self) -> String {
        let mut s = self.file.clone();
        if self.line > 0 {
            s.push_str(&format!(":{}", self.line));
            if self.column > 0 {
                s.push_str(&format!(":{}", self.column));
            }
        }
        s
    }

    fn render(&self) -> String {
        let mut s = String::new();
        let loc = self.location();
        if !loc.is_empty() {
            s.push_str(&loc);
            s.push_str(": ");
        }
        if let Some(o) = &self.object {
            s.push_str(o);
            s.push_str(": ");
        }
        if let Some(f) = &self.field {
            s.push_str(f);
            s.push_str(": ");
        }
        s.push_str(&self.message);
        for c in &self.also {
            s.push_str("\n  ");
            if c.line > 0 {
                s.push_str(&format!("{}:{}:{}: ", self.file, c.line, c.column));
            }
            if !c.field.is_empty() {
                s.push_str(&c.field);
                s.push_str(": ");
            }
            s.push_str(&c.message);
        }
        s
    }
}

impl fmt::Display for LoadErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}
