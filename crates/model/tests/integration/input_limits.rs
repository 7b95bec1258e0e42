//! The loader's input limits (`podplace_model::load::limits`): a file or
//! stdin larger than the limit, a device, a FIFO nobody writes to: each ends
//! at once with an error naming the file, never reading until memory runs
//! out or blocking forever.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use podplace_model::load::{load_with_options, LoadErrorKind, LoadOptions, Source};

const NODE: &str = "apiVersion: v1\nkind: Node\nmetadata:\n  name: n1\n";

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "podplace-input-limits-{}-{name}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn capped(max_input_bytes: u64) -> LoadOptions {
    LoadOptions {
        max_input_bytes,
        fifo_open_timeout: Duration::from_millis(300),
        ..LoadOptions::default()
    }
}

fn mkfifo(path: &Path) {
    let status = Command::new("mkfifo").arg(path).status().unwrap();
    assert!(status.success(), "mkfifo {}", path.display());
}

#[test]
fn a_file_over_the_limit_is_refused_naming_it_and_the_flag() {
    let dir = scratch("big");
    let big = dir.join("big.yaml");
    let text: String = (0..10)
        .map(|i| format!("---\napiVersion: v1\nkind: Node\nmetadata:\n  name: n{i}\n"))
        .collect();
    std::fs::write(&big, &text).unwrap();
    let limit = text.len() as u64;
    // At the limit it loads; one byte under, it is refused.
    for (max, ok) in [(limit, true), (limit - 1, false)] {
        let got = load_with_options(&[Source::Path(big.clone())], &capped(max));
        match (got, ok) {
            (Err(e), true) => panic!("{max} bytes: {e}"),
            (Ok(inv), true) => assert_eq!(inv.nodes.len(), 10),
            (Ok(_), false) => panic!("{max} bytes: loaded"),
            (Err(e), false) => {
                assert_eq!(e.kind, LoadErrorKind::Limit, "{e}");
                assert_eq!(e.file, big.display().to_string());
                let text = e.to_string();
                assert!(
                    text.contains("larger than the input limit")
                        && text.contains(&format!("limit of {max} bytes;"))
                        && text.contains("--max-input-size"),
                    "{text}"
                );
            }
        }
    }
    // In a directory too, naming the file found there.
    let err = load_with_options(&[Source::Path(dir.clone())], &capped(10)).unwrap_err();
    assert_eq!(err.kind, LoadErrorKind::Limit);
    assert_eq!(err.file, big.display().to_string());
    // And bytes given in memory.
    let err = load_with_options(
        &[Source::Bytes {
            name: "mem.yaml".into(),
            data: NODE.as_bytes().to_vec(),
        }],
        &capped(8),
    )
    .unwrap_err();
    assert_eq!(
        (err.kind, err.file.as_str()),
        (LoadErrorKind::Limit, "mem.yaml")
    );
}

#[cfg(unix)]
#[test]
fn devices_are_refused_without_reading_them() {
    for (dev, kind) in [
        ("/dev/zero", "a character device"),
        ("/dev/null", "a character device"),
    ] {
        let start = Instant::now();
        let err =
            load_with_options(&[Source::Path(dev.into())], &LoadOptions::default()).unwrap_err();
        assert!(start.elapsed() < Duration::from_secs(5));
        assert_eq!((err.kind, err.file.as_str()), (LoadErrorKind::Io, dev));
        assert!(
            err.to_string()
                .contains(&format!("not a regular file ({kind})")),
            "{err}"
        );
    }
}

#[cfg(unix)]
#[test]
fn a_fifo_with_no_writer_fails_within_the_timeout() {
    let dir = scratch("fifo-alone");
    let fifo = dir.join("pipe.yaml");
    mkfifo(&fifo);
    let start = Instant::now();
    let err = load_with_options(&[Source::Path(fifo.clone())], &capped(1 << 20)).unwrap_err();
    let took = start.elapsed();
    assert!(took < Duration::from_secs(5), "{took:?}");
    assert_eq!(err.file, fifo.display().to_string());
    assert!(
        err.to_string()
            .contains("a FIFO that nothing opened for writing within 300ms"),
        "{err}"
    );
    // Release the opener thread left waiting.
    let _ = std::fs::OpenOptions::new().write(true).open(&fifo);
}

#[cfg(unix)]
#[test]
fn a_fifo_with_a_writer_is_read_and_capped() {
    let dir = scratch("fifo-writer");
    let fifo = dir.join("pipe.yaml");
    mkfifo(&fifo);
    let writer = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::write(&fifo, NODE))
    };
    let mut opts = capped(1 << 20);
    opts.fifo_open_timeout = Duration::from_secs(30);
    let inv = load_with_options(&[Source::Path(fifo.clone())], &opts).unwrap();
    assert_eq!(inv.nodes.len(), 1);
    writer.join().unwrap().unwrap();

    // An endless writer (`yes` into a FIFO) stops at the limit.
    let endless = {
        let fifo = fifo.clone();
        std::thread::spawn(move || {
            use std::io::Write as _;
            let mut f = std::fs::OpenOptions::new().write(true).open(&fifo)?;
            let line = [b'y'; 4096];
            loop {
                f.write_all(&line)?;
            }
            #[allow(unreachable_code)]
            Ok::<(), std::io::Error>(())
        })
    };
    let err = load_with_options(&[Source::Path(fifo.clone())], &opts).unwrap_err();
    assert_eq!(err.kind, LoadErrorKind::Limit, "{err}");
    assert!(err.to_string().contains("(1048576 bytes)"), "{err}");
    // The writer ends with a broken pipe once the loader closed it.
    assert!(endless.join().unwrap().is_err());
}
