//! `--format svg` and `png`: the plan's dot form drawn by Graphviz's `dot`, found on PATH.

use std::io::Write as _;
use std::process::{Command, Stdio};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Picture {
    Svg,
    Png,
}

impl Picture {
    fn name(self) -> &'static str {
        match self {
            Picture::Svg => "svg",
            Picture::Png => "png",
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("--format {0} draws the plan with Graphviz's `dot`, which is not installed (apt-get install graphviz)")]
    NotInstalled(&'static str),
    #[error("cannot run Graphviz's `dot`: {0}")]
    Io(#[from] std::io::Error),
    #[error("Graphviz's `dot -T{format}` failed ({status}): {stderr}")]
    Failed { format: &'static str, status: std::process::ExitStatus, stderr: String },
}

/// The picture `dot` draws of `graph`, whole (nothing when it fails). What `dot` says on stderr
/// while it succeeds (a warning) goes to this process's stderr.
pub fn draw(graph: &str, picture: Picture) -> Result<Vec<u8>, Error> {
    let format = picture.name();
    let mut child = Command::new("dot")
        .arg(format!("-T{format}"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| if e.kind() == std::io::ErrorKind::NotFound { Error::NotInstalled(format) } else { e.into() })?;
    let mut stdin = child.stdin.take().expect("stdin is piped");
    // Written from a thread, so that a dot that writes before it has read everything cannot
    // block on a full pipe while this side does too.
    let output = std::thread::scope(|scope| {
        let writer = scope.spawn(move || stdin.write_all(graph.as_bytes()));
        let output = child.wait_with_output();
        (writer.join(), output)
    });
    let output = match output {
        (_, Err(e)) => return Err(e.into()),
        (Ok(written), Ok(output)) => {
            // A dot that exits early closes its stdin: its status says why, not the pipe.
            if output.status.success() {
                written?;
            }
            output
        }
        (Err(panic), Ok(_)) => std::panic::resume_unwind(panic),
    };
    let stderr = String::from_utf8_lossy(&output.stderr).trim_end().to_owned();
    if !output.status.success() {
        return Err(Error::Failed { format, status: output.status, stderr });
    }
    if !stderr.is_empty() {
        eprintln!("{stderr}");
    }
    Ok(output.stdout)
}
