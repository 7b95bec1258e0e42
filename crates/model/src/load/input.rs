//! Reading inputs: files (mapped when large), directories walked for
//! manifests, FIFOs opened within a timeout, standard input, bytes given
//! in memory; each bounded by the input limit, and decoded as UTF-8.

use std::borrow::Cow;
use std::collections::HashSet;
use std::io::Read;
use std::ops::Deref;
use std::path::{Path, PathBuf};

use super::{json, limits, LoadError, LoadErrorKind, LoadOptions, Source};
use crate::validate::FieldPath;

/// One input read into memory.
pub(super) struct Input {
    pub(super) name: String,
    pub(super) bytes: Bytes,
    /// For [`Source::Embedded`]: the lists holding the objects.
    pub(super) lists: Option<Vec<FieldPath>>,
    /// Given by the user (an empty one is an error) rather than found in a directory.
    pub(super) explicit: bool,
}

/// Files at least this large are mapped into memory rather than read: their
/// pages are the kernel's page cache, shared and dropped under pressure,
/// instead of a private copy that the kernel must first zero and then fill
/// (a 1.1 GB snapshot read into a buffer cost a third of its load time in
/// page faults and copying). Smaller files are read.
pub(super) const MAP_AT_LEAST: u64 = 1 << 20;

/// The bytes of one input: read into memory, or a file mapped into it.
pub(super) enum Bytes {
    /// Read (standard input, a FIFO, a small file, bytes given in memory).
    Read(Vec<u8>),
    /// A large regular file, mapped read-only. Like any reader of a file
    /// that another process rewrites in place while it is read, the load
    /// may then see a mix of old and new text; a file truncated while it is
    /// mapped ends the process (SIGBUS). Snapshots are written once and read.
    Mapped(filebuffer::FileBuffer),
}

impl Deref for Bytes {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            Bytes::Read(v) => v,
            Bytes::Mapped(m) => m,
        }
    }
}

/// Reads sources, walking directories; each file (and stdin) at most
/// `max_bytes` long.
///
/// With `map`, large regular files are mapped ([`MAP_AT_LEAST`]) rather
/// than read.
pub(super) fn read_inputs(
    sources: &[Source],
    opts: &LoadOptions,
    map: bool,
) -> Result<(Vec<Input>, Vec<String>), LoadError> {
    let max_bytes = opts.max_input_bytes;
    let mut inputs = Vec::new();
    let mut notices = Vec::new();
    for src in sources {
        match src {
            Source::Stdin => {
                let bytes =
                    read_capped(std::io::stdin().lock(), max_bytes, 0).map_err(|e| match e {
                        Capped::Io(e) => LoadError::new(
                            LoadErrorKind::Io,
                            "-",
                            format!("cannot read standard input: {e}"),
                        ),
                        Capped::TooLarge => too_large("-", max_bytes),
                    })?;
                inputs.push(Input {
                    name: "-".to_string(),
                    bytes: Bytes::Read(bytes),
                    lists: None,
                    explicit: true,
                });
            }
            Source::Bytes { name, data } => {
                if data.len() as u64 > max_bytes {
                    return Err(too_large(name, max_bytes));
                }
                inputs.push(Input {
                    name: name.clone(),
                    bytes: Bytes::Read(data.clone()),
                    lists: None,
                    explicit: true,
                })
            }
            Source::Embedded { name, data, lists } => {
                if data.len() as u64 > max_bytes {
                    return Err(too_large(name, max_bytes));
                }
                inputs.push(Input {
                    name: name.clone(),
                    bytes: Bytes::Read(data.clone()),
                    lists: Some(lists.clone()),
                    explicit: true,
                })
            }
            Source::Path(p) => {
                let name = p.display().to_string();
                let meta = std::fs::metadata(p).map_err(|e| {
                    LoadError::new(LoadErrorKind::Io, &name, format!("cannot read: {e}"))
                })?;
                if meta.is_dir() {
                    let mut files = Vec::new();
                    let mut seen = HashSet::new();
                    walk(p, &mut files, &mut seen, 0)?;
                    if files.is_empty() {
                        notices.push(format!(
                            "{name}: no *.yaml, *.yml or *.json files in this directory"
                        ));
                    }
                    for f in files {
                        let fname = f.display().to_string();
                        let bytes = read_or_map(&f, &fname, opts, map)?;
                        inputs.push(Input {
                            name: fname,
                            bytes,
                            lists: None,
                            explicit: false,
                        });
                    }
                } else {
                    let bytes = read_or_map(p, &name, opts, map)?;
                    inputs.push(Input {
                        name,
                        bytes,
                        lists: None,
                        explicit: true,
                    });
                }
            }
        }
    }
    Ok((inputs, notices))
}

/// Why [`read_capped`] stopped.
enum Capped {
    Io(std::io::Error),
    TooLarge,
}

/// Reads `reader` to its end, failing as soon as it holds more than
/// `max_bytes` (so `/dev/zero` or `yes` stop at the limit, not when memory
/// runs out). `expected` sizes the buffer up front.
fn read_capped(reader: impl Read, max_bytes: u64, expected: u64) -> Result<Vec<u8>, Capped> {
    let mut bytes = Vec::new();
    // The file's own size (plus the byte that proves its end) when it is
    // known and allowed, so a large snapshot is read without regrowing.
    let reserve = expected.min(max_bytes).saturating_add(1);
    bytes.reserve(usize::try_from(reserve).unwrap_or(0));
    reader
        .take(max_bytes.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(Capped::Io)?;
    if bytes.len() as u64 > max_bytes {
        return Err(Capped::TooLarge);
    }
    Ok(bytes)
}

/// The error for an input over the limit, naming it and the flag.
fn too_large(name: &str, max_bytes: u64) -> LoadError {
    let what = if name == "-" {
        "standard input"
    } else {
        "the file"
    };
    LoadError::new(
        LoadErrorKind::Limit,
        name,
        format!(
            "{what} is larger than the input limit of {}; raise it with --max-input-size if it really is one world",
            limits::Bytes(max_bytes).with_exact()
        ),
    )
}

/// Maps `path` when `map` is set and it is a regular file of at least
/// [`MAP_AT_LEAST`] bytes (within the input limit); reads it otherwise.
fn read_or_map(path: &Path, name: &str, opts: &LoadOptions, map: bool) -> Result<Bytes, LoadError> {
    if map {
        let meta = std::fs::metadata(path).ok();
        let large = meta.as_ref().is_some_and(|m| {
            m.file_type().is_file() && m.len() >= MAP_AT_LEAST && m.len() <= opts.max_input_bytes
        });
        if large {
            if let Ok(buf) = filebuffer::FileBuffer::open(path) {
                // The size read again by the mapping itself.
                if buf.len() as u64 > opts.max_input_bytes {
                    return Err(too_large(name, opts.max_input_bytes));
                }
                return Ok(Bytes::Mapped(buf));
            }
        }
    }
    read_file(path, name, opts).map(Bytes::Read)
}

/// Reads one file named on the command line or found in a directory: a
/// regular file, or a FIFO (a named pipe, or a pipe such as `<(command)`),
/// which is opened within `opts.fifo_open_timeout` (opening one blocks
/// until a writer opens it). Devices and sockets are refused (`-f
/// /dev/zero` would never end).
fn read_file(path: &Path, name: &str, opts: &LoadOptions) -> Result<Vec<u8>, LoadError> {
    let max_bytes = opts.max_input_bytes;
    let io =
        |e: std::io::Error| LoadError::new(LoadErrorKind::Io, name, format!("cannot read: {e}"));
    let meta = std::fs::metadata(path).map_err(io)?;
    let file_type = meta.file_type();
    let capped = |e: Capped| match e {
        Capped::Io(e) => io(e),
        Capped::TooLarge => too_large(name, max_bytes),
    };
    if file_type.is_file() {
        if meta.len() > max_bytes {
            return Err(too_large(name, max_bytes));
        }
        let file = std::fs::File::open(path).map_err(io)?;
        return read_capped(file, max_bytes, meta.len()).map_err(capped);
    }
    if !is_fifo(&file_type) {
        return Err(LoadError::new(
            LoadErrorKind::Io,
            name,
            format!(
                "cannot read: not a regular file ({}); podplace reads files, directories, pipes and standard input (-)",
                special_kind(&file_type)
            ),
        ));
    }
    let file = open_within(path, opts.fifo_open_timeout)
        .map_err(io)?
        .ok_or_else(|| {
            LoadError::new(
                LoadErrorKind::Io,
                name,
                format!(
                    "cannot read: a FIFO that nothing opened for writing within {:?}; start its writer first, or pipe into -f -",
                    opts.fifo_open_timeout
                ),
            )
        })?;
    read_capped(file, max_bytes, 0).map_err(capped)
}

/// Reads one file other than a `-f` input (a policy, a scenario) with the
/// same bounds as `-f`: at most `opts.max_input_bytes`, a FIFO opened
/// within `opts.fifo_open_timeout`, devices and sockets refused, so `-f`'s
/// hostile inputs (`/dev/zero`, a FIFO with no writer, a huge file) end in
/// an error naming the file there too.
pub fn read_bounded(path: &Path, opts: &LoadOptions) -> Result<Vec<u8>, LoadError> {
    read_file(path, &path.display().to_string(), opts)
}

/// Opens `path` for reading on a helper thread, giving up after `timeout`
/// (`Ok(None)`). A thread left blocked in open() ends when a writer comes,
/// or with the process.
fn open_within(
    path: &Path,
    timeout: std::time::Duration,
) -> std::io::Result<Option<std::fs::File>> {
    let (tx, rx) = std::sync::mpsc::channel();
    let owned = path.to_path_buf();
    std::thread::Builder::new()
        .name("podplace-open".to_string())
        .spawn(move || {
            let _ = tx.send(std::fs::File::open(owned));
        })?;
    match rx.recv_timeout(timeout) {
        Ok(opened) => opened.map(Some),
        Err(_) => Ok(None),
    }
}

#[cfg(unix)]
fn is_fifo(t: &std::fs::FileType) -> bool {
    use std::os::unix::fs::FileTypeExt;
    t.is_fifo()
}

#[cfg(not(unix))]
fn is_fifo(_: &std::fs::FileType) -> bool {
    false
}

/// What a file that is not a regular file, directory or FIFO is.
#[cfg(unix)]
fn special_kind(t: &std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_socket() {
        "a socket"
    } else {
        "a special file"
    }
}

#[cfg(not(unix))]
fn special_kind(_: &std::fs::FileType) -> &'static str {
    "a special file"
}

fn has_manifest_extension(p: &Path) -> bool {
    matches!(
        p.extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase)
            .as_deref(),
        Some("yaml" | "yml" | "json")
    )
}

/// Collects manifest files under `dir`, sorted by name, following symlinks
/// but never visiting a directory twice.
fn walk(
    dir: &Path,
    out: &mut Vec<PathBuf>,
    seen: &mut HashSet<PathBuf>,
    depth: usize,
) -> Result<(), LoadError> {
    let name = dir.display().to_string();
    if depth > 64 {
        return Err(LoadError::new(
            LoadErrorKind::Io,
            &name,
            "directories nested more than 64 levels deep",
        ));
    }
    let canonical = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    if !seen.insert(canonical) {
        return Ok(());
    }
    let rd = std::fs::read_dir(dir).map_err(|e| {
        LoadError::new(
            LoadErrorKind::Io,
            &name,
            format!("cannot read directory: {e}"),
        )
    })?;
    let mut entries: Vec<PathBuf> = Vec::new();
    for entry in rd {
        let entry = entry.map_err(|e| {
            LoadError::new(
                LoadErrorKind::Io,
                &name,
                format!("cannot read directory: {e}"),
            )
        })?;
        entries.push(entry.path());
    }
    entries.sort();
    for p in entries {
        let Ok(meta) = std::fs::metadata(&p) else {
            continue;
        };
        if meta.is_dir() {
            walk(&p, out, seen, depth + 1)?;
        } else if meta.is_file() && has_manifest_extension(&p) {
            out.push(p);
        }
    }
    Ok(())
}

/// Decodes UTF-8 (dropping a BOM), naming the first bad byte otherwise.
/// The text borrows from `bytes`: nothing is copied.
pub(super) fn decode_text<'b>(name: &str, bytes: &'b [u8]) -> Result<&'b str, LoadError> {
    if bytes.starts_with(&[0xFF, 0xFE]) || bytes.starts_with(&[0xFE, 0xFF]) {
        return Err(LoadError::new(
            LoadErrorKind::Encoding,
            name,
            "the file is UTF-16 encoded; podplace reads UTF-8 (convert it, e.g. with `iconv -f UTF-16 -t UTF-8`)",
        )
        .at(1, 1));
    }
    let bytes = bytes.strip_prefix(&[0xEF, 0xBB, 0xBF]).unwrap_or(bytes);
    std::str::from_utf8(bytes).map_err(|e| {
        let bad = InvalidUtf8::at(bytes, e.valid_up_to());
        LoadError::new(LoadErrorKind::Encoding, name, bad.to_string()).at(bad.line, bad.column)
    })
}

/// A file's text, borrowed from its input or owned (a [`super::SourceMap`]
/// outlives the inputs).
pub(super) type Text<'a> = Cow<'a, str>;

/// The first byte of a file that is not UTF-8, and where it stands: every
/// reader of text (manifests, rebalance policies, simulate scenarios) names
/// it the same way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InvalidUtf8 {
    /// Byte offset of the first invalid byte.
    pub offset: usize,
    /// That byte.
    pub byte: u8,
    /// 1-based line of the byte.
    pub line: usize,
    /// 1-based column of the byte, in characters.
    pub column: usize,
}

impl InvalidUtf8 {
    /// Locates the first invalid byte of the input `e` failed on.
    pub fn of(e: &std::string::FromUtf8Error) -> Self {
        Self::at(e.as_bytes(), e.utf8_error().valid_up_to())
    }

    /// The invalid byte at `offset` of `bytes`, which are valid UTF-8 before it.
    fn at(bytes: &[u8], offset: usize) -> Self {
        let prefix = String::from_utf8_lossy(&bytes[..offset]);
        let (line, column) = json::line_col(&prefix, offset);
        InvalidUtf8 {
            offset,
            byte: bytes[offset],
            line,
            column,
        }
    }
}

impl std::fmt::Display for InvalidUtf8 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "invalid UTF-8 at byte offset {} (byte 0x{:02x}): podplace reads UTF-8 text",
            self.offset, self.byte
        )
    }
}
